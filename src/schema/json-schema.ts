/**
 * A schema that travels without the workflow's code: the JSON Schema of what a waiting node
 * accepts is stored with the wait, so a sender (`smithers signal`, `smithers human answer`) can
 * check a payload before storing it. The engine still validates with the Zod schema itself.
 */
import { z } from "zod";
import { formatZodIssues } from "./issues.ts";

/** The JSON Schema of the values `schema` accepts, or undefined when it has no JSON form. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> | undefined {
  try {
    // Parts JSON Schema cannot say (a Date, a transform) accept anything here; the engine checks them.
    return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Checks `value` against a stored JSON Schema: undefined when it passes, else the problems as
 * `path: message` lines. A schema that cannot be read back checks nothing.
 */
export function checkAgainstJsonSchema(jsonSchema: unknown, value: unknown): string | undefined {
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? undefined : formatZodIssues(parsed.error.issues);
}

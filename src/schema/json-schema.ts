/**
 * A schema that travels without the workflow's code: the JSON Schema of what a waiting node
 * accepts is stored with the wait, so a sender (`smithers signal`, `smithers human answer`) can
 * check a payload before storing it. The engine still validates with the Zod schema itself.
 */
import type { z } from "zod";
import { zod } from "./zod.ts";
import { formatZodIssues } from "./issues.ts";

/** The JSON Schema of the values `schema` accepts, or undefined when it has no JSON form. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> | undefined {
  try {
    // Parts JSON Schema cannot say (a Date, a transform) accept anything here; the engine checks them.
    return zod().toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Checks `value` against a stored JSON Schema: undefined when it passes, else the problems as
 * `path: message` lines. A schema that cannot be read back checks nothing.
 */
export function checkAgainstJsonSchema(jsonSchema: unknown, value: unknown): string | undefined {
  const issues = jsonSchemaIssues(jsonSchema, value);
  return issues ? formatZodIssues(issues) : undefined;
}

/** A field's problem: its path in the value (keys and indexes) and what is wrong there. */
export type FieldIssue = { path: (string | number)[]; message: string };

/** Like checkAgainstJsonSchema, as the Zod issues (a form maps each `path` back to its field). */
export function jsonSchemaIssues(jsonSchema: unknown, value: unknown): z.core.$ZodIssue[] | undefined {
  let schema: z.ZodType;
  try {
    schema = zod().fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? undefined : parsed.error.issues;
}

/** Zod issues as plain `{ path, message }` (symbol keys, which JSON cannot hold, as text). */
export const fieldIssues = (issues: readonly z.core.$ZodIssue[]): FieldIssue[] =>
  issues.map((i) => ({ path: i.path.map((k) => (typeof k === "number" ? k : String(k))), message: i.message }));

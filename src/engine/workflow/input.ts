/** A run's input: checked against the workflow's input schema, and hashed to compare a resume's input with the stored one. */
import type { OutputRegistry } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { hashJson } from "../../json/index.ts";
import { formatZodIssues, safeParseWarming } from "../../schema/index.ts";

/** SHA-256 of the input's canonical JSON: what a resume's input is compared by. */
export const hashInput = (input: unknown) => hashJson(input);

export function validateInput(registry: OutputRegistry, input: unknown): unknown {
  const schema = registry.input.schema;
  if (!schema) {
    const value = input ?? {};
    try {
      JSON.stringify(value);
    } catch (cause) {
      throw new SmithersError("INVALID_INPUT", "Run input must be JSON-serializable", { cause });
    }
    return value;
  }
  const parsed = safeParseWarming(schema, input ?? {});
  if (!parsed.success) {
    const issues = formatZodIssues(parsed.error.issues, "; ");
    throw new SmithersError("INVALID_INPUT", `Run input does not match the input schema: ${issues}`, { issues: parsed.error.issues });
  }
  return parsed.data;
}

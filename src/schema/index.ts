/**
 * Reading Zod schemas, shared by db (schema -> columns), jsx and agents (schema -> description) so a
 * Zod upgrade touches one folder; depends on zod only, and nothing here imports db or agents.
 */
export {
  checks,
  def,
  enumValues,
  isZodSchema,
  optionalInput,
  templatePattern,
  unwrap,
  type Def,
  type Schema,
  type Unwrapped,
  type UnwrapSide,
} from "./walk.ts";
export { formatIssuePath, formatZodIssues } from "./issues.ts";
export { describeSchema } from "./describe.ts";
export { definitionText } from "./definition-text.ts";
export { checkAgainstJsonSchema, fieldIssues, jsonSchemaIssues, jsonSchemaOf, type FieldIssue } from "./json-schema.ts";
export { JITLESS_PARSES, safeParseWarming } from "./parse.ts";
export { lazyEnum, lazyShape, zod } from "./zod.ts";

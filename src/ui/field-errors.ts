/**
 * What the human-task form (schema-form.tsx) and its callers share without JSX: which kind of input
 * a JSON Schema gets, and where the server's problems with an answer are shown.
 */
import type { JsonSchema } from "./types.ts";

/** Problems by field path (`contact.name`; "" for the whole answer). */
export type FieldErrors = Record<string, string>;

/** The input a schema gets: enum, object (a fieldset), list (one item per line), a primitive, or json. */
export const kindOf = (s: JsonSchema): string => {
  if (s.enum) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t === "object" && s.properties) return "object";
  if (t === "array" && s.items && ["string", "number", "integer", "boolean"].includes(kindOf(s.items))) return "list";
  return t === "string" || t === "number" || t === "integer" || t === "boolean" ? t : "json";
};

/** The keys of the fields the form renders for `schema` (fieldsets included), and "" for the whole form. */
function renderedKeys(schema: JsonSchema): Set<string> {
  const keys = new Set<string>([""]);
  const walk = (s: JsonSchema, path: string[]) => {
    keys.add(path.join("."));
    if (kindOf(s) === "object") for (const [name, child] of Object.entries(s.properties ?? {})) walk(child, [...path, name]);
  };
  if (kindOf(schema) === "object") for (const [name, child] of Object.entries(schema.properties ?? {})) walk(child, [name]);
  else walk(schema, ["answer"]);
  return keys;
}

/**
 * The server's problems (each at its path in the answer) placed at the fields the form renders:
 * a path the form has no field for (a list's item, `tags.0`) goes to its nearest rendered parent
 * (`tags`), and to the whole form ("") when there is none. Messages meeting at one field are joined.
 */
export function placeErrors(schema: JsonSchema, problems: { path: (string | number)[]; message: string }[]): FieldErrors {
  const keys = renderedKeys(schema);
  // An answer that is not an object is the form's one field, `answer`.
  const root = kindOf(schema) === "object" ? [] : ["answer"];
  const out: FieldErrors = {};
  for (const problem of problems) {
    const path = [...root, ...problem.path.map(String)];
    const parts = [...path];
    while (parts.length > 0 && !keys.has(parts.join("."))) parts.pop();
    const key = parts.join(".");
    const rest = path.slice(parts.length);
    const where =
      rest.length === 0
        ? ""
        : /^\d+$/.test(rest[0]!)
          ? `Line ${Number(rest[0]) + 1}${rest.length > 1 ? ` (${rest.slice(1).join(".")})` : ""}: `
          : `${rest.join(".")}: `;
    const text = `${where}${problem.message}`;
    out[key] = out[key] === undefined ? text : `${out[key]}; ${text}`;
  }
  return out;
}

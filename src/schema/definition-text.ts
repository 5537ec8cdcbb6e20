/**
 * A schema's definition as text: zod's own definition of it (its type, shape, checks, defaults,
 * refinement bodies), with the schemas and checks it holds followed, keys in order, and an object
 * met before (a recursive schema) written as its number. Two schemas built alike give the same
 * text; a change to any part of the definition changes it. Cheap: no JSON Schema is made.
 * @example definitionText(z.object({ n: z.number().min(1) }))
 */
export function definitionText(schema: unknown): string {
  return defText(schema, new Map());
}

function defText(value: unknown, seen: Map<object, number>): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
    case "boolean":
    case "symbol":
      return String(value);
    case "bigint":
      return `${value}n`;
    case "undefined":
      return "u";
    case "function":
      return `f${JSON.stringify(String(value))}`;
  }
  if (value === null) return "null";
  const obj = value as object;
  const met = seen.get(obj);
  if (met !== undefined) return `@${met}`;
  seen.set(obj, seen.size);
  if (obj instanceof RegExp) return String(obj);
  if (obj instanceof Date) return `D${obj.getTime()}`;
  const def = (obj as { _zod?: { def?: unknown } })._zod?.def;
  if (def !== undefined) return `Z${defText(def, seen)}`;
  if (Array.isArray(obj)) return `[${obj.map((item) => defText(item, seen)).join(",")}]`;
  if (obj instanceof Map || obj instanceof Set) return `${obj.constructor.name}${defText([...obj], seen)}`;
  const record = obj as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${defText(record[key], seen)}`).join(",")}}`;
}

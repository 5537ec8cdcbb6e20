import type { z } from "zod";
import { zod } from "./zod.ts";
import { isPlainObject } from "../json/index.ts";
import { checks, def, type Def, enumValues, optionalInput, type Schema, templatePattern, unwrap } from "./walk.ts";

// A backstop only: recursion through z.lazy is caught by the `path` check first.
const MAX_DEPTH = 24;

type Described = { label: string; children: string[] };

const count = (n: unknown, unit: string): string => `${String(n)} ${n === 1 ? unit.replace(/s$/, "") : unit}`;

function lengthNote(d: Def, unit: string): string {
  let min: unknown;
  let max: unknown;
  for (const c of checks(d)) {
    if (c.check === "min_length") min = c.minimum;
    else if (c.check === "max_length") max = c.maximum;
    else if (c.check === "length_equals") min = max = c.length;
  }
  if (min !== undefined && min === max) return ` (exactly ${count(min, unit)})`;
  const parts: string[] = [];
  if (min !== undefined) parts.push(`at least ${count(min, unit)}`);
  if (max !== undefined) parts.push(`at most ${count(max, unit)}`);
  return parts.length === 0 ? "" : ` (${parts.join(", ")})`;
}

const STRING_FORMATS: Record<string, string> = {
  datetime: "ISO 8601 date-time",
  date: "ISO 8601 date, YYYY-MM-DD",
  time: "ISO 8601 time",
  duration: "ISO 8601 duration",
};

function stringLabel(d: Def): string {
  let label = "string";
  for (const c of checks(d)) {
    if (c.check !== "string_format") continue;
    if (c.format === "regex" && c.pattern instanceof RegExp) label += ` matching ${String(c.pattern)}`;
    else if (typeof c.format === "string") label += ` (${STRING_FORMATS[c.format] ?? c.format})`;
  }
  return label + lengthNote(d, "characters");
}

const INTEGER_FORMATS = new Set(["safeint", "int32", "uint32"]);

function numberLabel(d: Def): string {
  let label = "number";
  const bounds: string[] = [];
  for (const c of checks(d)) {
    if (c.check === "number_format" && INTEGER_FORMATS.has(String(c.format))) label = "integer";
    else if (c.check === "greater_than") bounds.push(`${c.inclusive ? ">=" : ">"} ${String(c.value)}`);
    else if (c.check === "less_than") bounds.push(`${c.inclusive ? "<=" : "<"} ${String(c.value)}`);
    else if (c.check === "multiple_of") bounds.push(`multiple of ${String(c.value)}`);
  }
  return bounds.length === 0 ? label : `${label} ${bounds.join(" and ")}`;
}

const literalList = (values: readonly unknown[]): string => values.map((v) => JSON.stringify(v) ?? String(v)).join(" | ");

const choiceLabel = (values: readonly unknown[]): string => `${values.length === 1 ? "exactly" : "one of"} ${literalList(values)}`;

const indent = (lines: readonly string[]): string[] => lines.map((line) => `  ${line}`);

type Path = readonly Schema[];

function fieldLines(shape: Record<string, Schema>, path: Path): string[] {
  return Object.entries(shape).flatMap(([key, field]) => {
    const info = unwrap(field);
    const flags = [optionalInput(field) ? "optional" : "required"];
    if (info.nullable) flags.push("nullable");
    if (info.defaultValue) flags.push(`default ${JSON.stringify(info.defaultValue.value)}`);
    const described = describeCore(info.core, path);
    const text = info.description ? `${described.label}. ${info.description}` : `${described.label}.`;
    return [`- ${JSON.stringify(key)} (${flags.join(", ")}): ${text}`, ...indent(described.children)];
  });
}

function labelled(name: string, schema: Schema, path: Path): string[] {
  const info = unwrap(schema);
  const inner = describeCore(info.core, path);
  const nullable = info.nullable ? " or null" : "";
  const description = info.description ? ` ${info.description}` : "";
  return [`- ${name}: ${inner.label}${nullable}.${description}`, ...indent(inner.children)];
}

function describeCore(schema: Schema, outer: Path): Described {
  const d = def(schema);
  if (outer.includes(schema) || outer.length > MAX_DEPTH) {
    return { label: `${d.type} with the same shape as the enclosing one (recursive)`, children: [] };
  }
  const path = [...outer, schema];
  switch (d.type) {
    case "string":
      return { label: stringLabel(d), children: [] };
    case "number":
      return { label: numberLabel(d), children: [] };
    case "any":
    case "unknown":
    case "custom":
      return { label: "any JSON value", children: [] };
    case "literal":
      return { label: choiceLabel(d.values as unknown[]), children: [] };
    case "enum":
      return { label: choiceLabel(enumValues(d.entries as Record<string, unknown>)), children: [] };
    case "template_literal":
      return { label: `string matching ${String(templatePattern(schema))}`, children: [] };
    case "object": {
      const strict = d.catchall !== undefined && def(d.catchall as Schema).type === "never";
      return {
        label: `object with these fields${strict ? " (no other fields allowed)" : ""}`,
        children: fieldLines(d.shape as Record<string, Schema>, path),
      };
    }
    case "array": {
      const element = unwrap(d.element as Schema);
      const inner = describeCore(element.core, path);
      const nullable = element.nullable ? " or null" : "";
      const label =
        def(element.core).type === "object"
          ? `array of ${inner.label.replace(/^object/, "objects")}${nullable}`
          : inner.children.length === 0
            ? `array of ${inner.label}${nullable}`
            : `array of items, each ${inner.label}${nullable}`;
      return { label: label + lengthNote(d, "items"), children: inner.children };
    }
    case "tuple": {
      const items = (d.items as Schema[]).map((item, i) => labelled(`item ${i + 1}`, item, path));
      const rest = d.rest ? [labelled("each further item", d.rest as Schema, path)] : [];
      return { label: `array of ${items.length} items in this order`, children: [...items, ...rest].flat() };
    }
    case "record": {
      const key = describeCore(unwrap(d.keyType as Schema).core, path).label;
      return { label: `object whose keys are ${key}`, children: labelled("each value", d.valueType as Schema, path) };
    }
    case "union": {
      const options = (d.options as Schema[]).map((option, i) => labelled(`option ${i + 1}`, option, path));
      return { label: "one of these alternatives", children: options.flat() };
    }
    case "intersection": {
      const parts = [d.left, d.right].map((part, i) => labelled(`part ${i + 1}`, part as Schema, path));
      return { label: "a value matching all of these", children: parts.flat() };
    }
    default:
      return { label: d.type, children: [] };
  }
}

// Real values rather than placeholders, so the example shape itself passes validation.
const FORMAT_EXAMPLES: Record<string, string> = {
  email: "user@example.com",
  url: "https://example.com",
  uuid: "00000000-0000-4000-8000-000000000000",
  datetime: "2024-01-01T00:00:00Z",
  date: "2024-01-01",
  time: "12:00:00",
  duration: "P1D",
  ipv4: "192.0.2.1",
};

/** 0, moved inside the bounds when it lies outside them, so the example itself validates. */
function numberExample(d: Def): number {
  let value = 0;
  for (const c of checks(d)) {
    if (typeof c.value !== "number") continue;
    if (c.check === "greater_than" && (c.inclusive ? value < c.value : value <= c.value)) value = c.inclusive ? c.value : c.value + 1;
    if (c.check === "less_than" && (c.inclusive ? value > c.value : value >= c.value)) value = c.inclusive ? c.value : c.value - 1;
  }
  return value;
}

/** A placeholder value of the schema's shape; `undefined` where the shape recurses. */
function exampleOf(schema: Schema, outer: Path): unknown {
  const info = unwrap(schema);
  if (info.defaultValue) return info.defaultValue.value;
  const d = def(info.core);
  if (outer.includes(info.core) || outer.length > MAX_DEPTH) return undefined;
  const path = [...outer, info.core];
  switch (d.type) {
    case "string":
    case "template_literal": {
      const format = checks(d).find((c) => c.check === "string_format")?.format;
      if (typeof format !== "string" || format === "regex") return "<string>";
      return FORMAT_EXAMPLES[format] ?? `<${format}>`;
    }
    case "number":
    case "bigint":
      return numberExample(d);
    case "boolean":
      return true;
    case "date":
      return "<date>";
    case "literal":
      return (d.values as unknown[])[0];
    case "enum":
      return enumValues(d.entries as Record<string, unknown>)[0];
    case "object":
      return Object.fromEntries(Object.entries(d.shape as Record<string, Schema>).map(([key, field]) => [key, exampleOf(field, path)]));
    case "array": {
      const item = exampleOf(d.element as Schema, path);
      return item === undefined ? [] : [item];
    }
    case "tuple":
      return (d.items as Schema[]).map((item) => exampleOf(item, path) ?? null);
    case "record": {
      const key = exampleOf(d.keyType as Schema, path);
      const name = typeof key === "string" && !key.startsWith("<") ? key : "<key>";
      return { [name]: exampleOf(d.valueType as Schema, path) };
    }
    case "union":
      return exampleOf((d.options as Schema[])[0] ?? zod().null(), path);
    case "intersection": {
      const left = exampleOf(d.left as Schema, path);
      const right = exampleOf(d.right as Schema, path);
      return isPlainObject(left) && isPlainObject(right) ? { ...left, ...right } : left;
    }
    default:
      return null;
  }
}

/**
 * A human-readable description of a schema, to append to a prompt: every field with its type,
 * enum options, optional/nullable/default flags and `.describe()` text, then an example JSON shape.
 * Deterministic: the same schema always gives the same text.
 *
 * @example
 * describeSchema(z.object({ verdict: z.enum(["approve", "reject"]).describe("Your decision") }));
 */
export function describeSchema(schema: z.ZodType): string {
  const info = unwrap(schema);
  const described = describeCore(info.core, []);
  const isObject = def(info.core).type === "object";
  const orNull = info.nullable ? " or null" : "";
  const lines = [isObject ? `The reply must be a JSON ${described.label}${orNull}:` : `The reply must be JSON: ${described.label}${orNull}.`];
  if (info.description) lines.push(`Purpose: ${info.description}`);
  lines.push(...described.children);
  if (isObject) lines.push("Fields are required unless marked optional; nullable fields may also be null.");
  const example = JSON.stringify(exampleOf(schema, []) ?? null, null, 2);
  lines.push("", "Example of the JSON shape (placeholder values):", example);
  return lines.join("\n");
}

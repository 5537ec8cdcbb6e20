import { z } from "zod";
import { SmithersError } from "../../errors/index.ts";

type JsonSchema = Record<string, unknown>;

/**
 * A Zod schema as the strict JSON Schema OpenAI's structured outputs (`codex exec --output-schema`)
 * accept: every object closed (`additionalProperties: false`) and listing all its properties as
 * required. An optional property becomes required-but-nullable; `stripOptionalNulls` turns the
 * nulls the model then sends for it back into absent keys, so the Zod schema still accepts them.
 */
export type StrictSchema = { schema: JsonSchema; stripOptionalNulls: (value: unknown) => unknown };

function isObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function toStrictJsonSchema(schema: z.ZodType): StrictSchema {
  let root: JsonSchema;
  try {
    root = z.toJSONSchema(schema, { io: "output" }) as JsonSchema;
  } catch (error) {
    throw new SmithersError("UNSUPPORTED_SCHEMA", `the output schema has no JSON Schema form for --output-schema: ${(error as Error).message}`, {
      cause: error,
    });
  }
  delete root.$schema;
  if (root.type !== "object") {
    throw new SmithersError("UNSUPPORTED_SCHEMA", "--output-schema needs an object schema at the top (OpenAI structured outputs); wrap the value in z.object", {
      type: root.type,
    });
  }
  /** Object schema node -> the properties that were optional before. */
  const optional = new Map<JsonSchema, Set<string>>();

  const visit = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, `${path}/${i}`));
      return;
    }
    if (!isObject(node)) return;
    delete node.default; // not a keyword strict mode accepts; the Zod schema applies defaults itself
    const properties = isObject(node.properties) ? node.properties : undefined;
    if (node.type === "object" || properties) {
      if (node.additionalProperties !== undefined && node.additionalProperties !== false) {
        throw new SmithersError(
          "UNSUPPORTED_SCHEMA",
          `--output-schema cannot express an object with open keys (a z.record or loose object) at ${path || "/"}: strict mode needs every key named`,
          { path: path || "/" },
        );
      }
      node.additionalProperties = false;
      const props = properties ?? {};
      node.properties = props;
      const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
      const made = new Set<string>();
      for (const key of Object.keys(props)) {
        if (required.has(key)) continue;
        props[key] = { anyOf: [props[key], { type: "null" }] };
        made.add(key);
      }
      node.required = Object.keys(props);
      if (made.size > 0) optional.set(node, made);
    }
    for (const [key, child] of Object.entries(node)) {
      // Maps from names to schemas: visit the schemas, never the map itself as a schema.
      if ((key === "properties" || key === "$defs" || key === "definitions") && isObject(child)) {
        for (const [name, prop] of Object.entries(child)) visit(prop, `${path}/${name}`);
      } else if (typeof child === "object") visit(child, `${path}/${key}`);
    }
  };
  visit(root, "");

  const resolveRef = (node: JsonSchema): JsonSchema | undefined => {
    const ref = node.$ref;
    if (typeof ref !== "string") return node;
    if (ref === "#") return root;
    let target: unknown = root;
    for (const part of ref.replace(/^#\//, "").split("/")) target = isObject(target) ? target[part] : undefined;
    return isObject(target) ? target : undefined;
  };

  const strip = (value: unknown, node: unknown, depth: number): unknown => {
    if (!isObject(node) || depth > 64) return value;
    const target = resolveRef(node);
    if (!target) return value;
    if (Array.isArray(target.anyOf)) {
      if (value === null) return value;
      const branch = target.anyOf.find(
        (b) => isObject(b) && (Array.isArray(value) ? resolveRef(b)?.type === "array" : isObject(value) ? resolveRef(b)?.properties : false),
      );
      return branch ? strip(value, branch, depth + 1) : value;
    }
    if (Array.isArray(value) && target.items !== undefined) return value.map((item) => strip(item, target.items, depth + 1));
    if (isObject(value) && isObject(target.properties)) {
      const made = optional.get(target);
      const out: Record<string, unknown> = {};
      for (const [key, v] of Object.entries(value)) {
        if (v === null && made?.has(key)) continue;
        out[key] = strip(v, target.properties[key], depth + 1);
      }
      return out;
    }
    return value;
  };

  return { schema: root, stripOptionalNulls: (value) => strip(value, root, 0) };
}

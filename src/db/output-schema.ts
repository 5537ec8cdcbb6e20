/**
 * Zod output schema -> Drizzle table (pure). Each schema key becomes a snake_case table with
 * `run_id`, `node_id`, `iteration` and one column per field; the mapping rules are SPEC §2.
 */
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { integer, real, text } from "drizzle-orm/sqlite-core/columns";
import { primaryKey } from "drizzle-orm/sqlite-core/primary-keys";
import { sqliteTable } from "drizzle-orm/sqlite-core/table";
import type { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { def as defOf, unwrap, zod, type Schema } from "../schema/index.ts";

export type ColumnKind = "text" | "integer" | "real" | "boolean" | "json" | "timestamp";

export type FieldColumn = { field: string; column: string; kind: ColumnKind; nullable: boolean };

export const BOOKKEEPING_FIELDS = ["runId", "nodeId", "iteration"] as const;

export function camelToSnake(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[-\s]+/g, "_")
    .toLowerCase();
}

/**
 * The column kind for one field, or null when the Zod type has no faithful column. Wrappers are
 * looked through on the output side: the stored value is what parsing produces.
 */
function kindOf(schema: Schema, outerNullable: boolean): { kind: ColumnKind; nullable: boolean } | null {
  const unwrapped = unwrap(schema, "output");
  const nullable = outerNullable || unwrapped.nullable || unwrapped.optional;
  const core = unwrapped.core;
  const def = defOf(core) as ReturnType<typeof defOf> & { values?: unknown[]; options?: Schema[] };
  switch (def.type) {
    case "string":
    case "enum":
    case "template_literal":
      return { kind: "text", nullable };
    case "literal": {
      const values = def.values ?? [];
      if (values.every((v) => typeof v === "string")) return { kind: "text", nullable };
      if (values.every((v) => typeof v === "boolean")) return { kind: "boolean", nullable };
      if (values.every((v) => typeof v === "number" && Number.isInteger(v))) return { kind: "integer", nullable };
      return { kind: "json", nullable };
    }
    case "number": {
      const format = (core as z.ZodNumber).format;
      const isInt = format === "safeint" || format === "int32" || format === "uint32";
      return { kind: isInt ? "integer" : "real", nullable };
    }
    case "boolean":
      return { kind: "boolean", nullable };
    case "date":
      return { kind: "timestamp", nullable };
    case "object":
    case "array":
    case "tuple":
    case "record":
    case "intersection":
      return { kind: "json", nullable };
    case "any":
    case "unknown":
      return { kind: "json", nullable: true };
    case "union": {
      const members = def.options ?? [];
      const mapped = members.map((m) => (["null", "undefined"].includes(defOf(m).type) ? { kind: "json" as const, nullable: true } : kindOf(m, false)));
      if (mapped.some((m) => m === null)) return null;
      return { kind: "json", nullable: nullable || mapped.some((m) => m!.nullable) };
    }
    case "null":
      return { kind: "json", nullable: true };
    default:
      return null; // bigint, symbol, function, promise, map, set, void, undefined, never, nan, file, custom, transform
  }
}

/** The Zod type name, looking through wrappers (optional, nullable, default, pipe…) to what they wrap. */
export function describeZodType(schema: z.ZodType): string {
  return defOf(unwrap(schema, "output").core).type;
}

const RESERVED_COLUMNS = new Set(["run_id", "node_id", "iteration"]);

/** The columns of a Zod object schema; throws UNSUPPORTED_SCHEMA naming the first field that cannot map. */
export function fieldColumns(tableKey: string, schema: z.ZodType): FieldColumn[] {
  if (!(schema instanceof zod().ZodObject)) {
    throw new SmithersError("UNSUPPORTED_SCHEMA", `Output schema "${tableKey}" must be a z.object(...), got ${describeZodType(schema)}`, { table: tableKey });
  }
  const columns: FieldColumn[] = [];
  for (const [field, fieldSchema] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
    if ((BOOKKEEPING_FIELDS as readonly string[]).includes(field) || RESERVED_COLUMNS.has(camelToSnake(field))) {
      throw new SmithersError("UNSUPPORTED_SCHEMA", `Output schema "${tableKey}" declares "${field}", which Smithers adds itself; remove it from the schema`, {
        table: tableKey,
        field,
      });
    }
    const mapped = kindOf(fieldSchema, false);
    if (!mapped) {
      throw new SmithersError(
        "UNSUPPORTED_SCHEMA",
        `Output schema "${tableKey}" field "${field}" has type ${describeZodType(fieldSchema)}, which has no SQLite column mapping (use string, number, boolean, date, enum, object or array)`,
        { table: tableKey, field, zodType: describeZodType(fieldSchema) },
      );
    }
    const column = camelToSnake(field);
    const clash = columns.find((c) => c.column === column);
    if (clash) {
      throw new SmithersError(
        "UNSUPPORTED_SCHEMA",
        `Output schema "${tableKey}" fields "${clash.field}" and "${field}" both map to column "${column}"; rename one`,
        { table: tableKey, field, column },
      );
    }
    columns.push({ field, column, ...mapped });
  }
  return columns;
}

function buildColumn(c: FieldColumn) {
  const base =
    c.kind === "text"
      ? text(c.column)
      : c.kind === "integer"
        ? integer(c.column)
        : c.kind === "real"
          ? real(c.column)
          : c.kind === "boolean"
            ? integer(c.column, { mode: "boolean" })
            : c.kind === "timestamp"
              ? integer(c.column, { mode: "timestamp_ms" })
              : text(c.column, { mode: "json" });
  return c.nullable ? base : base.notNull();
}

/** Drizzle table for a schema key: bookkeeping columns + one per field, PK (run_id, node_id, iteration). */
export function zodToTable(tableName: string, columns: FieldColumn[]): SQLiteTable {
  const shape: Record<string, ReturnType<typeof buildColumn>> = {};
  for (const c of columns) shape[c.field] = buildColumn(c);
  return sqliteTable(
    tableName,
    {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      iteration: integer("iteration").notNull().default(0),
      ...shape,
    },
    (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration] })],
  );
}

/** The run-input table: keyed by run_id alone. */
export function zodToInputTable(columns: FieldColumn[]): SQLiteTable {
  const shape: Record<string, ReturnType<typeof buildColumn>> = {};
  for (const c of columns) shape[c.field] = buildColumn(c);
  return sqliteTable("input", { runId: text("run_id").primaryKey(), ...shape });
}

import { describe, expect, test } from "bun:test";
import { getTableConfig } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { camelToSnake, fieldColumns, zodToTable, type FieldColumn } from "../../src/db/output-schema.ts";
import { errorOf } from "../helpers.ts";

const kinds = (columns: FieldColumn[]) => Object.fromEntries(columns.map((c) => [c.field, c.kind]));
const nullables = (columns: FieldColumn[]) => Object.fromEntries(columns.map((c) => [c.field, c.nullable]));

describe("camelToSnake", () => {
  test("splits camelCase words with underscores", () => {
    expect(camelToSnake("codeReview")).toBe("code_review");
    expect(camelToSnake("myLongTableName")).toBe("my_long_table_name");
  });

  test("lower-cases a leading capital without a leading underscore", () => {
    expect(camelToSnake("CodeReview")).toBe("code_review");
  });

  test("keeps acronyms together", () => {
    expect(camelToSnake("HTMLParser")).toBe("html_parser");
    expect(camelToSnake("userID")).toBe("user_id");
    expect(camelToSnake("XMLHttpRequest")).toBe("xml_http_request");
  });

  test("splits after digits", () => {
    expect(camelToSnake("step2Result")).toBe("step2_result");
  });

  test("leaves snake_case and single words unchanged", () => {
    expect(camelToSnake("already_snake")).toBe("already_snake");
    expect(camelToSnake("analysis")).toBe("analysis");
  });

  test("turns dashes and spaces into underscores", () => {
    expect(camelToSnake("kebab-case")).toBe("kebab_case");
    expect(camelToSnake("two words")).toBe("two_words");
  });
});

describe("fieldColumns", () => {
  test("maps strings and enums to text, integers to integer and other numbers to real", () => {
    const cols = fieldColumns("t", z.object({ s: z.string(), e: z.enum(["low", "high"]), i: z.number().int(), i2: z.int(), r: z.number() }));
    expect(kinds(cols)).toEqual({ s: "text", e: "text", i: "integer", i2: "integer", r: "real" });
  });

  test("keeps an integer an integer when bounds are added after int()", () => {
    expect(kinds(fieldColumns("t", z.object({ n: z.number().int().nonnegative().max(10) })))).toEqual({ n: "integer" });
  });

  test("maps booleans to boolean, objects and arrays to json and dates to timestamp", () => {
    const cols = fieldColumns(
      "t",
      z.object({ b: z.boolean(), o: z.object({ x: z.number() }), a: z.array(z.string()), rec: z.record(z.string(), z.number()), d: z.date() }),
    );
    expect(kinds(cols)).toEqual({ b: "boolean", o: "json", a: "json", rec: "json", d: "timestamp" });
  });

  test("gives each field its snake_case column name", () => {
    const cols = fieldColumns("t", z.object({ rootCause: z.string(), isUrgent: z.boolean() }));
    expect(cols).toEqual([
      { field: "rootCause", column: "root_cause", kind: "text", nullable: false },
      { field: "isUrgent", column: "is_urgent", kind: "boolean", nullable: false },
    ]);
  });

  test("optional, nullable and nullish fields are nullable; plain fields are not", () => {
    const cols = fieldColumns("t", z.object({ req: z.string(), opt: z.string().optional(), nul: z.number().nullable(), both: z.boolean().nullish() }));
    expect(nullables(cols)).toEqual({ req: false, opt: true, nul: true, both: true });
    expect(kinds(cols)).toEqual({ req: "text", opt: "text", nul: "real", both: "boolean" });
  });

  test("a default keeps the inner type and stays non-nullable", () => {
    const cols = fieldColumns("t", z.object({ n: z.number().int().default(3) }));
    expect(cols[0]).toMatchObject({ kind: "integer", nullable: false });
  });

  test("string literals map to text and boolean literals to boolean", () => {
    expect(kinds(fieldColumns("t", z.object({ s: z.literal("x"), b: z.literal(true) })))).toEqual({ s: "text", b: "boolean" });
  });

  test("a z.preprocess field maps to the column of its target schema", () => {
    const cols = fieldColumns("t", z.object({ s: z.preprocess((v) => String(v), z.string()) }));
    expect(cols[0]).toMatchObject({ kind: "text", nullable: false });
  });

  test("a pipe into a number maps to the column of the value that is stored (its output)", () => {
    const cols = fieldColumns("t", z.object({ n: z.string().pipe(z.coerce.number()) }));
    expect(cols[0]!.kind).toBe("real");
  });

  test("z.any() and z.unknown() fields are nullable json, since they accept undefined and null", () => {
    const cols = fieldColumns("t", z.object({ a: z.any(), u: z.unknown() }));
    expect(cols.map((c) => [c.field, c.kind, c.nullable])).toEqual([
      ["a", "json", true],
      ["u", "json", true],
    ]);
  });

  test("a union with null is nullable", () => {
    const cols = fieldColumns("t", z.object({ v: z.union([z.string(), z.null()]) }));
    expect(cols[0]!.nullable).toBe(true);
  });

  for (const [name, schema] of [
    ["bigint", z.bigint()],
    ["function", z.function()],
    ["symbol", z.symbol()],
    ["map", z.map(z.string(), z.string())],
    ["set", z.set(z.string())],
    ["promise", z.promise(z.string())],
    ["undefined", z.undefined()],
    ["void", z.void()],
    ["never", z.never()],
  ] as const) {
    test(`a ${name} field throws UNSUPPORTED_SCHEMA naming the field`, () => {
      const error = errorOf(() => fieldColumns("report", z.object({ ok: z.string(), badField: schema as z.ZodType })));
      expect(error.code).toBe("UNSUPPORTED_SCHEMA");
      expect(error.message).toContain("badField");
      expect(error.message).toContain("report");
      expect(error.details).toMatchObject({ table: "report", field: "badField" });
    });
  }

  test("an optional unsupported field is still rejected", () => {
    const error = errorOf(() => fieldColumns("t", z.object({ big: z.bigint().optional() })));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
    expect(error.message).toContain("big");
  });

  test("the error for a wrapped unsupported field names the inner type that cannot map, not the wrapper", () => {
    const error = errorOf(() => fieldColumns("t", z.object({ big: z.bigint().optional() })));
    expect(error.message).toContain("bigint");
    expect(error.details).toMatchObject({ zodType: "bigint" });
  });

  test("a union containing an unsupported member is rejected", () => {
    expect(errorOf(() => fieldColumns("t", z.object({ u: z.union([z.string(), z.bigint()]) }))).code).toBe("UNSUPPORTED_SCHEMA");
  });

  for (const reserved of ["runId", "nodeId", "iteration"]) {
    test(`a field named ${reserved} throws UNSUPPORTED_SCHEMA naming it`, () => {
      const error = errorOf(() => fieldColumns("t", z.object({ [reserved]: z.string() })));
      expect(error.code).toBe("UNSUPPORTED_SCHEMA");
      expect(error.message).toContain(reserved);
    });
  }

  for (const reserved of ["run_id", "node_id"]) {
    test(`a field whose column would be the bookkeeping column ${reserved} throws UNSUPPORTED_SCHEMA`, () => {
      const error = errorOf(() => fieldColumns("t", z.object({ [reserved]: z.string() })));
      expect(error.code).toBe("UNSUPPORTED_SCHEMA");
      expect(error.message).toContain(reserved);
    });
  }

  test("two fields mapping to the same column throw UNSUPPORTED_SCHEMA", () => {
    const error = errorOf(() => fieldColumns("t", z.object({ fooBar: z.string(), foo_bar: z.string() })));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
    expect(error.message).toContain("foo_bar");
  });

  test("a schema that is not an object throws UNSUPPORTED_SCHEMA naming the table", () => {
    const error = errorOf(() => fieldColumns("things", z.array(z.string())));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
    expect(error.message).toContain("things");
  });

  test("an empty object maps to no columns", () => {
    expect(fieldColumns("t", z.object({}))).toEqual([]);
  });
});

describe("zodToTable", () => {
  const columns = fieldColumns(
    "codeReview",
    z.object({ summary: z.string(), score: z.number().int(), ratio: z.number(), ok: z.boolean(), tags: z.array(z.string()), at: z.date().optional() }),
  );
  const config = getTableConfig(zodToTable("code_review", columns));
  const byName = new Map(config.columns.map((c) => [c.name, c]));

  test("names the table as given", () => {
    expect(config.name).toBe("code_review");
  });

  test("starts with run_id, node_id and iteration, then one column per field", () => {
    expect(config.columns.map((c) => c.name)).toEqual(["run_id", "node_id", "iteration", "summary", "score", "ratio", "ok", "tags", "at"]);
  });

  test("has the composite primary key (run_id, node_id, iteration)", () => {
    expect(config.primaryKeys).toHaveLength(1);
    expect(config.primaryKeys[0]!.columns.map((c) => c.name)).toEqual(["run_id", "node_id", "iteration"]);
  });

  test("iteration is a non-null integer defaulting to 0", () => {
    const iteration = byName.get("iteration")!;
    expect(iteration.getSQLType()).toBe("integer");
    expect(iteration.notNull).toBe(true);
    expect(iteration.default).toBe(0);
  });

  test("maps column kinds to SQLite types", () => {
    const types = Object.fromEntries(config.columns.map((c) => [c.name, c.getSQLType()]));
    expect(types).toEqual({
      run_id: "text",
      node_id: "text",
      iteration: "integer",
      summary: "text",
      score: "integer",
      ratio: "real",
      ok: "integer",
      tags: "text",
      at: "integer",
    });
  });

  test("required fields are NOT NULL and optional ones are nullable", () => {
    expect(byName.get("summary")!.notNull).toBe(true);
    expect(byName.get("at")!.notNull).toBe(false);
  });

  test("booleans use Drizzle boolean mode and arrays JSON mode", () => {
    expect(byName.get("ok")!.mapFromDriverValue(1)).toBe(true);
    expect(byName.get("ok")!.mapFromDriverValue(0)).toBe(false);
    expect(byName.get("tags")!.mapFromDriverValue('["a","b"]')).toEqual(["a", "b"]);
  });
});

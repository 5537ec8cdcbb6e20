import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { errorJsonText, errorSummaryJson, errorToJson, SAFE_JSON_LIMITS, safeStringify, SmithersError, toSafeJson } from "../../src/errors/index.ts";
import { asRunError } from "../../src/engine/run/run.ts";

describe("toSafeJson", () => {
  test("keeps plain JSON as it is", () => {
    const value = { a: 1, b: "two", c: [true, null, { d: 4.5 }] };
    expect(toSafeJson(value)).toEqual(value);
  });

  test("writes BigInt as text, a cycle as [Circular], a throwing getter as [Unreadable]", () => {
    const o: Record<string, unknown> = { n: 7n };
    o.self = o;
    Object.defineProperty(o, "bad", {
      enumerable: true,
      get: () => {
        throw new Error("no");
      },
    });
    expect(toSafeJson(o)).toEqual({ n: "7n", self: "[Circular]", bad: "[Unreadable]" });
  });

  test("a value reached twice without a cycle is written both times", () => {
    const shared = { x: 1 };
    expect(toSafeJson({ a: shared, b: shared })).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  test("cuts strings, arrays, objects and depth at the stated limits", () => {
    const long = toSafeJson("y".repeat(SAFE_JSON_LIMITS.stringChars + 10)) as string;
    expect(long.startsWith("y".repeat(SAFE_JSON_LIMITS.stringChars))).toBe(true);
    expect(long).toEndWith("[10 more chars]");
    const items = toSafeJson(Array.from({ length: 60 }, (_, i) => i)) as unknown[];
    expect(items).toHaveLength(SAFE_JSON_LIMITS.arrayItems + 1);
    expect(items.at(-1)).toBe("[10 more items]");
    const keys = toSafeJson(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i]))) as Record<string, unknown>;
    expect(Object.keys(keys)).toHaveLength(SAFE_JSON_LIMITS.objectKeys + 1);
    let deep: unknown = "bottom";
    for (let i = 0; i < 20; i++) deep = [deep];
    expect(JSON.stringify(toSafeJson(deep))).toContain("[Depth limit]");
  });

  test("safeStringify never exceeds totalChars, even for text that grows when escaped", () => {
    const quotes = Array.from({ length: 40 }, () => "\u0001".repeat(1_900));
    const text = safeStringify({ quotes });
    expect(text.length).toBeLessThanOrEqual(SAFE_JSON_LIMITS.totalChars);
    expect(() => JSON.parse(text)).not.toThrow();
  });
});

describe("errorToJson", () => {
  test("a SmithersError keeps its code, message and details, its cause nested", () => {
    const error = new SmithersError("TASK_FAILED", "t failed", { nodeId: "t", attempt: 2, cause: new Error("inner") });
    // Both were made in this file, an author's file: each keeps its stack (test/errors/stack.test.ts).
    const { stack, cause, ...rest } = errorToJson(error) as { stack?: string[]; cause: { stack?: string[] } };
    const { stack: causeStack, ...causeRest } = cause;
    expect(rest).toEqual({ name: "SmithersError", code: "TASK_FAILED", message: "t failed", nodeId: "t", attempt: 2 });
    expect(causeRest).toEqual({ name: "Error", message: "inner" });
    expect([stack?.[0], causeStack?.[0]]).toEqual([expect.stringContaining("safe-json.test.ts:"), expect.stringContaining("safe-json.test.ts:")]);
  });

  test("the summary keeps only scalars: no causes, issue lists or agent attempts", () => {
    const error = new SmithersError("INVALID_OUTPUT", "bad", { nodeId: "n", issues: [{ path: ["a"] }], attempts: [{ prompt: "p" }], cause: new Error("x") });
    expect(errorSummaryJson(error)).toEqual({ name: "SmithersError", code: "INVALID_OUTPUT", message: "bad", nodeId: "n" });
  });

  test("errorJsonText of anything parses back and stays within the limit", () => {
    for (const value of [undefined, null, 3, "s", Symbol("q"), { big: 1n }, new Error("e"), "z".repeat(1_000_000)]) {
      const text = errorJsonText(value);
      expect(text.length).toBeLessThanOrEqual(SAFE_JSON_LIMITS.totalChars);
      expect(typeof JSON.parse(text).message).toBe("string");
    }
  });
});

describe("asRunError", () => {
  test("a SQLite error is DB_WRITE_FAILED, any other non-Smithers error ENGINE_ERROR, a SmithersError itself", () => {
    const db = new Database(":memory:");
    let sqliteError: unknown;
    try {
      db.exec("INSERT INTO missing VALUES (1)");
    } catch (error) {
      sqliteError = error;
    }
    expect(asRunError(sqliteError).code).toBe("DB_WRITE_FAILED");
    expect(asRunError(new TypeError("x is not a function")).code).toBe("ENGINE_ERROR");
    expect(asRunError({ weird: 1n }).code).toBe("ENGINE_ERROR");
    const own = new SmithersError("RUN_OWNED", "taken");
    expect(asRunError(own)).toBe(own);
  });

  test("a PostgreSQL driver error is DB_WRITE_FAILED too, also as the cause Drizzle wraps it in", () => {
    const pgError = Object.assign(new Error('null value in column "value" violates not-null constraint'), { name: "PostgresError", code: "23502" });
    expect(asRunError(pgError).code).toBe("DB_WRITE_FAILED");
    expect(asRunError(new Error("Failed query: insert into …", { cause: pgError })).code).toBe("DB_WRITE_FAILED");
    expect(asRunError(new Error("wrapper", { cause: new TypeError("x") })).code).toBe("ENGINE_ERROR");
  });
});

import { describe, expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { buildCtx, type CtxSources } from "../../src/engine/workflow/ctx.ts";
import { OutputRegistry } from "../../src/db/output-tables.ts";
import type { OutputSnapshot } from "../../src/db/snapshot.ts";
import { errorOf } from "../helpers.ts";

const codeReview = z.object({ approved: z.boolean(), notes: z.string() });
const draft = z.object({ text: z.string() });
const notesTable = sqliteTable("notes", {
  runId: text("run_id").notNull(),
  nodeId: text("node_id").notNull(),
  iteration: integer("iteration").notNull().default(0),
  body: text("body").notNull(),
});

const RUN = "run-1";
const row = (nodeId: string, iteration: number, fields: Record<string, unknown>) => ({ runId: RUN, nodeId, iteration, ...fields });

function reviewRows() {
  return [
    row("review", 0, { approved: false, notes: "first" }),
    row("review", 2, { approved: true, notes: "third" }),
    row("review", 1, { approved: false, notes: "second" }),
    row("other", 5, { approved: true, notes: "elsewhere" }),
  ];
}

function makeCtx(overrides: Partial<CtxSources> = {}) {
  const registry = new OutputRegistry({ codeReview, draft });
  const reviews = reviewRows();
  const drafts = [row("write", 0, { text: "hello" })];
  const snapshot: OutputSnapshot = { codeReview: reviews, code_review: reviews, draft: drafts };
  return buildCtx<{ topic: string }>({
    runId: RUN,
    input: { topic: "caching" },
    snapshot,
    registry,
    iteration: 0,
    iterations: {},
    iterationOf: () => 0,
    ...overrides,
  });
}

describe("buildCtx", () => {
  test("exposes runId, input, iteration and iterations as given", () => {
    const ctx = makeCtx({ iteration: 3, iterations: { revise: 3 } });
    expect(ctx.runId).toBe(RUN);
    expect(ctx.input).toEqual({ topic: "caching" });
    expect(ctx.iteration).toBe(3);
    expect(ctx.iterations).toEqual({ revise: 3 });
  });
});

describe("ctx.output", () => {
  test("returns the row of the node at the given iteration without bookkeeping fields", () => {
    const ctx = makeCtx();
    expect(ctx.output(codeReview, { nodeId: "review", iteration: 1 })).toEqual({ approved: false, notes: "second" });
  });

  test("accepts the schema object, its key, or its table name as target", () => {
    const ctx = makeCtx();
    const expected = { approved: true, notes: "third" };
    expect(ctx.output(codeReview, { nodeId: "review", iteration: 2 })).toEqual(expected);
    expect(ctx.output("codeReview", { nodeId: "review", iteration: 2 })).toEqual(expected);
    expect(ctx.output("code_review", { nodeId: "review", iteration: 2 })).toEqual(expected);
  });

  test("defaults the iteration to the node's current loop iteration", () => {
    const asked: string[] = [];
    const ctx = makeCtx({
      iterationOf: (nodeId) => {
        asked.push(nodeId);
        return 2;
      },
    });
    expect(ctx.output(codeReview, { nodeId: "review" })).toEqual({ approved: true, notes: "third" });
    expect(asked).toEqual(["review"]);
  });

  test("an explicit iteration 0 wins over the node's loop iteration", () => {
    const ctx = makeCtx({ iterationOf: () => 2 });
    expect(ctx.output(codeReview, { nodeId: "review", iteration: 0 })).toEqual({ approved: false, notes: "first" });
  });

  test("throws OUTPUT_NOT_FOUND when the node has no row at that iteration", () => {
    const ctx = makeCtx();
    expect(errorOf(() => ctx.output(codeReview, { nodeId: "review", iteration: 7 })).code).toBe("OUTPUT_NOT_FOUND");
    expect(errorOf(() => ctx.output(draft, { nodeId: "missing" })).code).toBe("OUTPUT_NOT_FOUND");
  });

  test("the OUTPUT_NOT_FOUND error names the node and iteration", () => {
    const ctx = makeCtx();
    try {
      ctx.output(codeReview, { nodeId: "review", iteration: 7 });
      throw new Error("no throw");
    } catch (error) {
      expect(error).toMatchObject({ code: "OUTPUT_NOT_FOUND", details: { nodeId: "review", iteration: 7 } });
      expect((error as Error).message).toContain("review");
    }
  });

  test("does not return rows written by another node to the same table", () => {
    const ctx = makeCtx();
    expect(errorOf(() => ctx.output(codeReview, { nodeId: "review", iteration: 5 })).code).toBe("OUTPUT_NOT_FOUND");
    expect(ctx.output(codeReview, { nodeId: "other", iteration: 5 })).toEqual({ approved: true, notes: "elsewhere" });
  });

  test("an unknown target throws OUTPUT_NOT_FOUND", () => {
    const ctx = makeCtx();
    expect(errorOf(() => ctx.output("nope", { nodeId: "review" })).code).toBe("OUTPUT_NOT_FOUND");
    expect(errorOf(() => ctx.output(z.object({ x: z.string() }), { nodeId: "review" })).code).toBe("OUTPUT_NOT_FOUND");
  });

  test("a table with no rows in the snapshot gives OUTPUT_NOT_FOUND", () => {
    const ctx = makeCtx({ snapshot: {} });
    expect(errorOf(() => ctx.output(draft, { nodeId: "write" })).code).toBe("OUTPUT_NOT_FOUND");
  });

  test("reads a custom Drizzle table target from the snapshot under its table name", () => {
    const ctx = makeCtx({ snapshot: { notes: [row("note", 0, { body: "hi" })] } });
    expect(ctx.output(notesTable, { nodeId: "note" })).toEqual({ body: "hi" });
  });
});

describe("ctx.outputMaybe", () => {
  test("returns the row when present", () => {
    expect(makeCtx().outputMaybe(draft, { nodeId: "write" })).toEqual({ text: "hello" });
  });

  test("returns undefined when the node has no row", () => {
    const ctx = makeCtx();
    expect(ctx.outputMaybe(draft, { nodeId: "absent" })).toBeUndefined();
    expect(ctx.outputMaybe(codeReview, { nodeId: "review", iteration: 9 })).toBeUndefined();
  });

  test("still throws OUTPUT_NOT_FOUND for a target that is not an output of the workflow", () => {
    expect(errorOf(() => makeCtx().outputMaybe("unknownKey", { nodeId: "x" })).code).toBe("OUTPUT_NOT_FOUND");
  });
});

describe("ctx.latest", () => {
  test("returns the row with the highest iteration regardless of snapshot order", () => {
    expect(makeCtx().latest(codeReview, "review")).toEqual({ approved: true, notes: "third" });
  });

  test("returns undefined when the node never wrote a row", () => {
    expect(makeCtx().latest(codeReview, "never")).toBeUndefined();
  });

  test("accepts a key string as target", () => {
    expect(makeCtx().latest("draft", "write")).toEqual({ text: "hello" });
  });
});

describe("ctx.iterationCount", () => {
  test("counts the iterations of the node that wrote a row", () => {
    const ctx = makeCtx();
    expect(ctx.iterationCount(codeReview, "review")).toBe(3);
    expect(ctx.iterationCount("code_review", "other")).toBe(1);
  });

  test("is 0 for a node without rows", () => {
    expect(makeCtx().iterationCount(draft, "nobody")).toBe(0);
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { openSmithersDb } from "../../src/db/index.ts";
import { sqliteOf } from "../helpers.ts";
import { migrateOutputTables, OutputRegistry, writeOutputRow } from "../../src/db/output-tables.ts";
import { loadInput, loadOutputs, writeInput } from "../../src/db/snapshot.ts";

const sdb = sqliteOf(openSmithersDb(":memory:"));
afterAll(() => sdb.close());

const customTable = sqliteTable("legacy_reviews", {
  runId: text("run_id").notNull(),
  nodeId: text("node_id").notNull(),
  iteration: integer("iteration").notNull().default(0),
  ok: integer("ok", { mode: "boolean" }).notNull(),
});
const registry = new OutputRegistry({
  input: z.object({ topic: z.string(), urgent: z.boolean() }),
  codeReview: z.object({ approved: z.boolean(), notes: z.array(z.string()) }),
  review: customTable,
});
migrateOutputTables(sdb.sqlite, [registry.input, ...registry.all()]);

describe("loadOutputs", () => {
  test("indexes each table's rows under both its schema key and its table name, booleans and JSON decoded", async () => {
    await sdb.withTransaction("seed", async (q) => {
      await writeOutputRow(q, registry.resolve("codeReview"), { runId: "r1", nodeId: "rev", iteration: 0 }, { approved: true, notes: ["a"] });
      await writeOutputRow(q, registry.resolve("codeReview"), { runId: "r2", nodeId: "rev", iteration: 0 }, { approved: false, notes: [] });
      await writeOutputRow(q, registry.resolve(customTable), { runId: "r1", nodeId: "legacy", iteration: 1 }, { ok: false });
    });
    const snapshot = await loadOutputs(sdb, registry, "r1");
    expect(snapshot.codeReview).toEqual([{ runId: "r1", nodeId: "rev", iteration: 0, approved: true, notes: ["a"] }]);
    expect(snapshot.code_review).toBe(snapshot.codeReview!);
    expect(snapshot.review).toEqual([{ runId: "r1", nodeId: "legacy", iteration: 1, ok: false }]);
    expect(snapshot.legacy_reviews).toBe(snapshot.review!);
    expect(snapshot.codeReview![0]!.approved).toBe(true); // a boolean, not 1
  });
});

describe("loadInput", () => {
  test("returns the run's input as written, booleans coerced, and undefined for an unknown run", async () => {
    await sdb.withTransaction("input", (d) => writeInput(d, registry, "r1", { topic: "t", urgent: true }));
    expect(await loadInput(sdb, registry, "r1")).toEqual({ topic: "t", urgent: true });
    expect(await loadInput(sdb, registry, "nope")).toBeUndefined();
  });

  test("a workflow without an input schema stores and returns the whole input as JSON", async () => {
    const free = new OutputRegistry({ out: z.object({ n: z.number() }) });
    const db = sqliteOf(openSmithersDb(":memory:"));
    migrateOutputTables(db.sqlite, [free.input]);
    await db.withTransaction("input", (d) => writeInput(d, free, "r1", { nested: { list: [1, 2] } }));
    expect(await loadInput(db, free, "r1")).toEqual({ nested: { list: [1, 2] } });
    await db.close();
  });
});

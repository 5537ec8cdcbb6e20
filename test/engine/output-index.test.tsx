/** @jsxImportSource smithers-workflows */
import { afterAll, describe, expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb, readOutputRowNow } from "../../src/db/index.ts";
import { migrateOutputTables, OutputRegistry, writeOutputRow } from "../../src/db/output-tables.ts";
import { normalizeRow } from "../../src/db/snapshot.ts";
import { OutputIndex } from "../../src/engine/workflow/ctx.ts";
import { ROW_CACHE_SIZE } from "../../src/engine/core/constants.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { sqliteOf, tempDbPath } from "../helpers.ts";

const sdb = sqliteOf(openSmithersDb(":memory:"));
afterAll(() => sdb.close());
const registry = new OutputRegistry({ step: z.object({ n: z.number().int(), text: z.string() }) });
migrateOutputTables(sdb.sqlite, registry.all());
const info = registry.resolve("step");

/** An index over this database's `step` table, read through the engine's synchronous reader. */
function indexOver(runId: string, limits: { maxEntries: number; maxBytes: number }) {
  return new OutputIndex((tableKey, nodeId, iteration) => readOutputRowNow(sdb, registry.byKey.get(tableKey)!, { runId, nodeId, iteration }), limits);
}

/** Stores `count` iterations of node "t" and adds them to the index the way a run does (settled, then committed). */
async function storeAndAdd(index: OutputIndex, runId: string, count: number, text: (i: number) => string) {
  for (let i = 0; i < count; i++) {
    const row = await sdb.withTransaction("seed", (d) => writeOutputRow(d, info, { runId, nodeId: "t", iteration: i }, { n: i, text: text(i) }));
    index.add(info.key, normalizeRow(row));
    index.committed();
    const { entries, bytes, maxEntries, maxBytes } = index.stats();
    if (entries > maxEntries || bytes > maxBytes) throw new Error(`after row ${i}: ${entries} rows / ${bytes} bytes held`);
  }
}

describe("OutputIndex", () => {
  test("holds no more committed rows than its entry cap, and still reads every row from SQLite", async () => {
    const index = indexOver("cap-entries", { maxEntries: 50, maxBytes: 2 ** 30 });
    await storeAndAdd(index, "cap-entries", 600, (i) => `row ${i}`);
    expect(index.stats().entries).toBe(50);
    expect(index.count(info.key, "t")).toBe(600);
    for (let i = 0; i < 600; i++) expect(index.row(info.key, "t", i)).toEqual({ runId: "cap-entries", nodeId: "t", iteration: i, n: i, text: `row ${i}` });
    expect(index.latest(info.key, "t")?.n).toBe(599);
    expect(index.row(info.key, "t", 600)).toBeUndefined();
    expect(index.stats().misses).toBeGreaterThanOrEqual(550); // the evicted rows came from SQLite
  });

  test("holds no more estimated bytes than its byte cap when rows are large", async () => {
    const index = indexOver("cap-bytes", { maxEntries: 10_000, maxBytes: 1_000_000 });
    await storeAndAdd(index, "cap-bytes", 60, (i) => `${i}`.padEnd(100_000, "x"));
    const { entries, bytes } = index.stats();
    expect(bytes).toBeLessThanOrEqual(1_000_000);
    expect(bytes).toBeGreaterThan(100_000 * (entries - 1)); // the estimate counts each row's text
    expect(entries).toBeLessThan(10);
    expect(String(index.row(info.key, "t", 0)?.text).length).toBe(100_000);
  });

  test("a settled row is held until committed, whatever the caps, since SQLite does not have it yet", () => {
    const index = indexOver("pending", { maxEntries: 0, maxBytes: 0 });
    index.add(info.key, { runId: "pending", nodeId: "t", iteration: 0, n: 1, text: "in memory" });
    expect(index.row(info.key, "t", 0)?.text).toBe("in memory");
    expect(index.stats().pending).toBe(1);
    index.committed(); // never written: once let go, the store is all there is
    expect(index.stats().pending).toBe(0);
    expect(index.row(info.key, "t", 0)).toBeUndefined();
  });

  test("counts iterations added out of order, with gaps, and again, exactly", () => {
    const index = indexOver("sets", { maxEntries: 0, maxBytes: 0 });
    const its = [5, 0, 2, 1, 9, 3, 2, 7, 8, 0, 4];
    for (const i of its) index.addKey(info.key, "t", i);
    expect(index.count(info.key, "t")).toBe(new Set(its).size);
    index.addKey(info.key, "u", 3);
    index.addKey(info.key, "u", 3);
    expect(index.count(info.key, "u")).toBe(1);
    expect(index.count(info.key, "none")).toBe(0);
  });
});

describe("runWorkflow memory", () => {
  test("a loop longer than the row cache reads rows the cache let go of through ctx, from SQLite", async () => {
    const dbPath = tempDbPath();
    const iterations = ROW_CACHE_SIZE + 50;
    const lag = ROW_CACHE_SIZE + 10; // each iteration reads a row this many iterations old: evicted by then
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number().int(), old: z.number().int() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="long-loop">
        <Loop id="l" until={ctx.iterationCount(outputs.step, "t") >= iterations} maxIterations={iterations}>
          <Task id="t" output={outputs.step}>
            {() => ({
              n: ctx.iteration,
              old: ctx.iteration < lag ? -1 : ctx.output<{ n: number }>(outputs.step, { nodeId: "t", iteration: ctx.iteration - lag }).n,
            })}
          </Task>
        </Loop>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ n: iterations - 1, old: iterations - 1 - lag });
  }, 60_000);
});

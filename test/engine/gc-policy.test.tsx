/** @jsxImportSource smithers-workflows */
/**
 * A large run collects its garbage itself (see GC_AFTER_TASKS): once after its first render, then
 * every GC_EVERY settled attempts or steps; a run smaller than GC_AFTER_TASKS never does.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { z } from "zod";
import { GC_AFTER_TASKS, GC_EVERY } from "../../src/engine/core/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

const realGc = Bun.gc;
afterEach(() => {
  (Bun as { gc: typeof Bun.gc }).gc = realGc;
});

/** Runs a sequence of `n` static tasks, counting the engine's synchronous collections. */
async function collectionsOf(n: number): Promise<number> {
  let full = 0;
  (Bun as { gc: typeof Bun.gc }).gc = (force?: boolean) => {
    if (force) full++;
    return realGc(force);
  };
  const dbPath = tempDbPath();
  const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="many">
      <Sequence>
        {Array.from({ length: n }, (_, i) => (
          <Task key={i} id={`t${i}`} output={outputs.out}>
            {{ n: i }}
          </Task>
        ))}
      </Sequence>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input: {} });
  (Bun as { gc: typeof Bun.gc }).gc = realGc;
  expect(result.status).toBe("finished");
  expect(await query(dbPath, "SELECT count(*) AS c FROM out")).toEqual([{ c: n }]);
  return full;
}

describe("the engine's own garbage collections", () => {
  test("a run below GC_AFTER_TASKS collects nothing; a larger one after its first render and every GC_EVERY tasks", async () => {
    expect(await collectionsOf(GC_AFTER_TASKS - 1)).toBe(0);
    const n = GC_AFTER_TASKS + GC_EVERY;
    // One after the first render, then one per GC_EVERY settled attempts (each step of a sequence settles one).
    expect(await collectionsOf(n)).toBe(1 + Math.floor(n / GC_EVERY));
  }, 60_000);
});

/**
 * Steps that start only static tasks commit in groups (Run.defers): what a listener hears is
 * still on disk when it hears it, a bad value still fails its task where it stands, and a long
 * chain of them still lets the process's timers run.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

function chain(dbPath: string, n: number, bad?: number) {
  return kit(dbPath, n, bad).wf;
}

function kit(dbPath: string, n: number, bad?: number) {
  const { Workflow, Task, Sequence, smithers, outputs, smithersDb } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  const ids = Array.from({ length: n }, (_, i) => i);
  const wf = smithers(() => (
    <Workflow name="chain">
      <Sequence>
        {ids.map((i) => (
          <Task key={i} id={`t${i}`} output={outputs.out} retries={0}>
            {i === bad ? ({ n: "not a number" } as unknown as { n: number }) : { n: i }}
          </Task>
        ))}
      </Sequence>
    </Workflow>
  ));
  return { wf, db: smithersDb };
}

describe("a chain of static tasks", () => {
  test("commits in groups, far fewer transactions than tasks", async () => {
    const { wf, db } = kit(tempDbPath(), 600);
    let transactions = 0;
    const withTransaction = db.withTransaction.bind(db);
    db.withTransaction = (label, fn) => {
      transactions++;
      return withTransaction(label, fn);
    };
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    // One per task without grouping; at most 128 steps per group, so ~5 here (plus the run's start and end).
    expect(transactions).toBeLessThan(60);
  });

  test("every NodeFinished a listener hears has its output row stored already, read from another connection", async () => {
    const dbPath = tempDbPath();
    const reads: Promise<unknown[]>[] = [];
    const result = await runWorkflow(chain(dbPath, 600), {
      input: {},
      // On SQLite query() reads at once, in the listener: before this process writes anything more.
      onEvent: (event) => {
        if (event.type === "NodeFinished") reads.push(query(dbPath, "SELECT n FROM out WHERE node_id = ?", (event as { nodeId: string }).nodeId));
      },
    });
    expect(result.status).toBe("finished");
    const rows = await Promise.all(reads);
    expect(rows.length).toBe(600);
    expect(rows.filter((r) => r.length !== 1)).toEqual([]);
  });

  test("a compute task's outcome commits in its own step, not held back with the static tasks after it", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="work-then-chain">
        <Sequence>
          <Task id="work" output={outputs.out}>
            {async () => ({ n: -1 })}
          </Task>
          {Array.from({ length: 300 }, (_, i) => (
            <Task key={i} id={`s${i}`} output={outputs.out}>
              {{ n: i }}
            </Task>
          ))}
        </Sequence>
      </Workflow>
    ));
    let staticRowsWhenHeard: Promise<{ n: number }[]> | undefined;
    const result = await runWorkflow(wf, {
      input: {},
      onEvent: (event) => {
        // Read at once from another connection: what was committed together with the work's outcome.
        if (event.type === "NodeFinished" && (event as { nodeId: string }).nodeId === "work")
          staticRowsWhenHeard = query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM out WHERE node_id <> 'work'");
      },
    });
    expect(result.status).toBe("finished");
    expect((await staticRowsWhenHeard)?.[0]?.n).toBe(0);
  });

  test("a value that fails its schema mid-chain fails the run with INVALID_OUTPUT; the tasks before it are stored finished, its own attempt failed", async () => {
    const dbPath = tempDbPath();
    const result = await runWorkflow(chain(dbPath, 300, 200), { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    expect(await query(dbPath, "SELECT state, count(*) AS n, count(def_sig) AS signed FROM _smithers_nodes GROUP BY state ORDER BY state")).toEqual([
      { state: "failed", n: 1, signed: 1 },
      { state: "finished", n: 200, signed: 200 },
    ]);
    expect(await query(dbPath, "SELECT node_id, state, finished_at_ms IS NOT NULL AS closed FROM _smithers_attempts WHERE state <> 'finished'")).toEqual([
      { node_id: "t200", state: "failed", closed: 1 },
    ]);
    expect((await query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM out"))[0]!.n).toBe(200);
  });

  test("a long chain lets the process's timers fire while it runs (the heartbeat among them)", async () => {
    const dbPath = tempDbPath();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = performance.now();
    const result = await runWorkflow(chain(dbPath, 1500), { input: {} });
    const tookMs = performance.now() - started;
    clearInterval(timer);
    expect(result.status).toBe("finished");
    // The run spans several yield periods (YIELD_EVERY_MS, 20 ms): without a turn for the event
    // loop the interval could not fire once, however long the run.
    expect(tookMs).toBeGreaterThan(40);
    expect(ticks).toBeGreaterThan(0);
  }, 30_000);
});

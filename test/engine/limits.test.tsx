/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb } from "../../src/db/index.ts";
import { limitUse, pruneRuns, requestCancel, supervise } from "../../src/engine/index.ts";
import { createSmithers, Parallel, runWorkflow, type RunResult, type SmithersWorkflow } from "../../src/index.ts";
import { errorOf, query, rejection, tempDbPath } from "../helpers.ts";

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** The most intervals open at one time, from their stored start and end. */
function maxOverlap(spans: { start: number; end: number }[]): number {
  const edges = spans.flatMap((s) => [
    { at: s.start, d: 1 },
    { at: s.end, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d); // an end before a start at the same ms
  let open = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (open += e.d));
  return most;
}

function keyedWorkflow(dbPath: string, limit: number, width: number) {
  const { Workflow, Task, smithers, outputs } = createSmithers(
    { span: z.object({ start: z.number(), end: z.number() }) },
    { dbPath, limits: { shared: { concurrency: limit } } },
  );
  return smithers(() => (
    <Workflow name="keyed">
      <Parallel>
        {Array.from({ length: width }, (_, i) => (
          <Task id={`t${i}`} output={outputs.span} concurrencyKey="shared">
            {async () => {
              const start = Date.now();
              await sleep(15);
              return { start, end: Date.now() };
            }}
          </Task>
        ))}
      </Parallel>
    </Workflow>
  ));
}

/** Resumes waiting runs of the database (as a daemon would) until every run ended. */
async function untilAllEnded(dbPath: string, results: RunResult[], wf: SmithersWorkflow): Promise<void> {
  const db = openSmithersDb(dbPath);
  try {
    for (let pass = 0; pass < 200; pass++) {
      const open = await query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM _smithers_runs WHERE status NOT IN ('finished', 'failed', 'cancelled')");
      if (Number(open[0]!.n) === 0) return;
      const outcomes = await supervise({ db, resolveWorkflow: () => wf });
      for (const o of outcomes) if (o.action === "resumed") results.push(o.result);
      await sleep(5);
    }
  } finally {
    await db.close();
  }
}

describe("concurrencyKey", () => {
  test("runs of one database never hold more slots of a key than its concurrency; a run with nothing else to do waits waiting-slot and is woken", async () => {
    const dbPath = tempDbPath();
    const wf = keyedWorkflow(dbPath, 2, 4);
    const results = await Promise.all(["a", "b", "c"].map((runId) => runWorkflow(wf, { runId, input: {} })));
    expect(results.some((r) => r.status === "waiting-slot") || results.every((r) => r.status === "finished")).toBe(true);
    await untilAllEnded(dbPath, results, wf);
    const spans = await query<{ start: number; end: number }>(dbPath, 'SELECT start, "end" FROM span');
    expect(spans.length).toBe(12);
    expect(maxOverlap(spans.map((s) => ({ start: Number(s.start), end: Number(s.end) })))).toBeLessThanOrEqual(2);
    expect(await query(dbPath, "SELECT DISTINCT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_slots")).toEqual([{ n: 0 }]);
  });

  test("a node waiting for a slot is stored waiting-slot with its key, and the run waits waiting-slot", async () => {
    const dbPath = tempDbPath();
    const wf = keyedWorkflow(dbPath, 1, 2);
    const [a, b] = await Promise.all([runWorkflow(wf, { runId: "a", input: {} }), runWorkflow(wf, { runId: "b", input: {} })]);
    const waiting = [a!, b!].filter((r) => r.status === "waiting-slot");
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    const nodes = await query<{ state: string; wait_json: string }>(
      dbPath,
      "SELECT state, wait_json FROM _smithers_nodes WHERE run_id = ? AND state = 'waiting-slot'",
      waiting[0]!.runId,
    );
    expect(nodes.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(nodes[0]!.wait_json)).toEqual({ concurrencyKey: "shared" });
    const results: RunResult[] = [];
    await untilAllEnded(dbPath, results, wf);
    expect(await query(dbPath, "SELECT DISTINCT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
  });

  test("a key with no declared limit fails the run with LIMIT_UNDECLARED at render", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="undeclared">
        <Task id="t" output={outputs.out} concurrencyKey="nowhere">
          {{ v: 1 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("LIMIT_UNDECLARED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_attempts")).toEqual([{ n: 0 }]);
  });

  test("a key named tenant:acme runs under the limit declared for tenant", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(
      { out: z.object({ v: z.number() }), input: z.object({ org: z.string() }) },
      { dbPath, limits: { tenant: { concurrency: 1 } } },
    );
    const wf = smithers((ctx) => (
      <Workflow name="tenants">
        <Task id="t" output={outputs.out} concurrencyKey={(c: typeof ctx) => `tenant:${c.input.org}`}>
          {{ v: 1 }}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: { org: "acme" } })).status).toBe("finished");
    expect(await query(dbPath, "SELECT limit_key, concurrency FROM _smithers_limits")).toEqual([{ limit_key: "tenant:acme", concurrency: 1 }]);
  });

  test("a limit of 0, a negative or fractional one, or an unknown option is INVALID_LIMIT when the workflow is made or run", async () => {
    for (const limits of [{ k: { concurrency: 0 } }, { k: { concurrency: -1 } }, { k: { perMinute: 1.5 } }, { k: { burst: 3 } }, { k: {} }]) {
      expect(errorOf(() => createSmithers({}, { limits: limits as never })).code).toBe("INVALID_LIMIT");
    }
    expect((await rejection(runWorkflow(keyedWorkflow(tempDbPath(), 1, 1), { limits: { shared: { concurrency: 0 } } }))).code).toBe("INVALID_LIMIT");
  });

  test("a slot is given back when its task times out, and when its run is cancelled", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath, limits: { k: { concurrency: 1 } } });
    const wf = smithers(() => (
      <Workflow name="stuck">
        <Task id="slow" output={outputs.out} concurrencyKey="k" timeoutMs={30} retries={0}>
          {async ({ signal }) => {
            await new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped"))));
            return { v: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const timedOut = await runWorkflow(wf, { input: {} });
    expect(timedOut.error?.code).toBe("TASK_TIMEOUT");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_slots")).toEqual([{ n: 0 }]);
    const abort = new AbortController();
    const cancelled = runWorkflow(wf, { input: {}, signal: abort.signal });
    for (let i = 0; i < 100 && (await query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM _smithers_slots WHERE state = 'held'"))[0]!.n === 0; i++)
      await sleep(2);
    abort.abort();
    expect((await cancelled).status).toBe("cancelled");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_slots")).toEqual([{ n: 0 }]);
  });
});

describe("concurrencyKey and the ends of a run", () => {
  test("a run cancelled while it waits for a slot counts no more, and pruning it removes its rows", async () => {
    const dbPath = tempDbPath();
    const wf = keyedWorkflow(dbPath, 1, 2);
    const db = openSmithersDb(dbPath);
    try {
      const [a, b] = await Promise.all([runWorkflow(wf, { runId: "a", input: {} }), runWorkflow(wf, { runId: "b", input: {} })]);
      const waiting = [a!, b!].find((r) => r.status === "waiting-slot")!;
      expect(waiting).toBeDefined();
      const [rows] = await query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM _smithers_slots WHERE run_id = ? AND state = 'waiting'", waiting.runId);
      expect(Number(rows!.n)).toBeGreaterThan(0);
      await requestCancel(db, waiting.runId);
      expect((await limitUse(db, Date.now())).map((u) => [u.key, u.held, u.waiting])).toEqual([["shared", 0, 0]]);
      await pruneRuns(db, { olderThanMs: 0 });
      expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_slots")).toEqual([{ n: 0 }]);
    } finally {
      await db.close();
    }
  });
});

describe("concurrencyKey and needsApproval", () => {
  test("a task under a key that waits for its approval holds no slot meanwhile", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath, limits: { k: { concurrency: 1 } } });
    const wf = smithers(() => (
      <Workflow name="gated">
        <Parallel>
          <Task id="gated" output={outputs.out} concurrencyKey="k" needsApproval async>
            {{ v: 1 }}
          </Task>
          <Task id="free" output={outputs.out} concurrencyKey="k" dependsOn={[]}>
            {async () => {
              await sleep(20);
              return { v: 2 };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "free", state: "finished" },
      { node_id: "gated", state: "waiting-approval" },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_slots")).toEqual([{ n: 0 }]);
  });
});

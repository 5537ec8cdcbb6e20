/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { createSmithers, runWorkflow, scriptedAgent } from "../../src/index.ts";
import { ERROR_JSON_LIMITS } from "../../src/errors/index.ts";
import { query, tempDbPath } from "../helpers.ts";

type Stored = { state: string; error_json: string | null };

/** Runs one compute task whose body throws `thrown`, with no retries. */
async function runThrowing(thrown: () => unknown) {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="throws">
      <Task id="t" output={outputs.out} retries={0}>
        {async () => {
          throw thrown();
        }}
      </Task>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input: {} });
  const attempts = await query<Stored>(dbPath, "SELECT state, error_json FROM _smithers_attempts");
  const nodes = await query<{ state: string }>(dbPath, "SELECT state FROM _smithers_nodes");
  const runs = await query<{ status: string; error_json: string }>(dbPath, "SELECT status, error_json FROM _smithers_runs");
  return { dbPath, result, attempts, nodes, run: runs[0]! };
}

const circular = () => {
  const o: Record<string, unknown> = { name: "loop" };
  o.self = o;
  return o;
};

const throwingGetter = () =>
  Object.defineProperty({}, "message", {
    enumerable: true,
    get() {
      throw new Error("getter exploded");
    },
  });

const cases: [string, () => unknown][] = [
  ["an object holding a BigInt", () => ({ big: 1n })],
  ["a circular object", circular],
  ["a 10 MB string", () => "x".repeat(10_000_000)],
  ["undefined", () => undefined],
  ["a number", () => 42],
  ["null", () => null],
  ["an Error whose cause is circular", () => new Error("outer", { cause: circular() })],
  ["an object with a throwing getter", throwingGetter],
  ["a deeply nested object", () => JSON.parse(`${"[".repeat(500)}1${"]".repeat(500)}`)],
];

describe("failure recording", () => {
  for (const [name, thrown] of cases) {
    test(`a task that throws ${name} ends its attempt, node and run as failed with TASK_FAILED, in bounded bytes`, async () => {
      const { result, attempts, nodes, run } = await runThrowing(thrown);
      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("TASK_FAILED");
      expect(attempts.map((a) => a.state)).toEqual(["failed"]);
      expect(nodes.map((n) => n.state)).toEqual(["failed"]);
      expect(run.status).toBe("failed");
      const attemptError = JSON.parse(attempts[0]!.error_json!);
      expect(attemptError.code).toBe("TASK_FAILED");
      expect(JSON.parse(run.error_json).code).toBe("TASK_FAILED");
      expect(attempts[0]!.error_json!.length).toBeLessThanOrEqual(ERROR_JSON_LIMITS.totalChars);
      expect(run.error_json.length).toBeLessThanOrEqual(ERROR_JSON_LIMITS.totalChars);
    });
  }

  test("a BigInt and a cycle are written as text markers, not lost", async () => {
    const big = await runThrowing(() => ({ big: 12n }));
    expect(big.attempts[0]!.error_json).toContain("12n");
    const loop = await runThrowing(circular);
    expect(loop.attempts[0]!.error_json).toContain("[Circular]");
  });

  test("an agent error never stores the prompt: a 100 KB prompt leaves every stored error small", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ verdict: z.object({ ok: z.boolean() }) }, { dbPath });
    const agent = scriptedAgent(() => ({ text: "not json at all" }));
    const prompt = `Review: ${"Q".repeat(100_000)}`;
    const wf = smithers(() => (
      <Workflow name="big-prompt">
        <Task id="review" output={outputs.verdict} agent={agent} retries={0}>
          {prompt}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    const stored = [
      ...(await query<{ t: string | null }>(dbPath, "SELECT error_json AS t FROM _smithers_attempts")),
      ...(await query<{ t: string | null }>(dbPath, "SELECT error_json AS t FROM _smithers_runs")),
      ...(await query<{ t: string | null }>(dbPath, "SELECT payload_json AS t FROM _smithers_events")),
    ].map((r) => r.t ?? "");
    for (const text of stored) expect(text).not.toContain("Q".repeat(500));
    const total = stored.reduce((n, t) => n + t.length, 0);
    expect(total).toBeLessThan(4 * ERROR_JSON_LIMITS.totalChars);
  });

  test("a task whose meta holds a BigInt still runs and records its meta as text", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="meta">
        <Task id="t" output={outputs.out} meta={{ budget: 5n }}>
          {{ v: 1 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT state, meta_json FROM _smithers_attempts")).toEqual([{ state: "finished", meta_json: '{"budget":"5n"}' }]);
  });

  test("a task whose output cannot be stored fails its attempt with INVALID_OUTPUT, and the run is failed, not stuck", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ data: z.any() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="unstorable">
        <Task id="t" output={outputs.out} retries={0}>
          {async () => ({ data: { big: 1n } })}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "failed" }]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
  });

  test("a step whose writes SQLite refuses ends the run failed with DB_WRITE_FAILED and leaves nothing running", async () => {
    const dbPath = tempDbPath();
    const strict = sqliteTable("strict_rows", {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      iteration: integer("iteration").notNull().default(0),
      value: integer("value").notNull(),
    });
    const { Workflow, Task, Parallel, smithers } = createSmithers({ strict }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="refused">
        <Parallel>
          <Task id="null-into-not-null" output={strict} outputSchema={z.object({ value: z.number().nullable() })}>
            {{ value: null }}
          </Task>
          <Task id="slow" output={strict} outputSchema={z.object({ value: z.number() })}>
            {async () => {
              await Bun.sleep(50);
              return { value: 1 };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("DB_WRITE_FAILED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_attempts WHERE state = 'running'")).toEqual([{ n: 0 }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_nodes WHERE state = 'running'")).toEqual([{ n: 0 }]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
    expect(await query(dbPath, "SELECT type FROM _smithers_events WHERE type = 'RunFailed'")).toEqual([{ type: "RunFailed" }]);
  });
});

/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, FatalError, RetryableError, runWorkflow, scriptedAgent, SmithersError, type SmithersEvent } from "../../src/index.ts";
import { execute, query, sleepUnlessAborted, tablesReady, tempDbPath } from "../helpers.ts";

const fast = { initialDelayMs: 1, maxDelayMs: 5 };

describe("runWorkflow", () => {
  test("a static, a compute and an agent task each write one row to their generated table", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(
      {
        noteCard: z.object({ title: z.string(), tags: z.array(z.string()) }),
        score: z.object({ value: z.number().int(), ok: z.boolean() }),
        verdict: z.object({ approved: z.boolean(), reason: z.string() }),
      },
      { dbPath },
    );
    const judge = scriptedAgent([{ approved: true, reason: "fine" }]);
    const wf = smithers(() => (
      <Workflow name="modes">
        <Task id="static" output={outputs.noteCard}>
          {{ title: "t", tags: ["a", "b"] }}
        </Task>
        <Task id="compute" output={outputs.score}>
          {async () => ({ value: 7, ok: false })}
        </Task>
        <Task id="agent" output={outputs.verdict} agent={judge}>
          Judge it
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ approved: true, reason: "fine" });
    expect(await query(dbPath, "SELECT run_id, node_id, iteration, title, tags FROM note_card")).toEqual([
      { run_id: result.runId, node_id: "static", iteration: 0, title: "t", tags: '["a","b"]' },
    ]);
    expect(await query(dbPath, "SELECT node_id, value, ok FROM score")).toEqual([{ node_id: "compute", value: 7, ok: 0 }]);
    expect(await query(dbPath, "SELECT approved, reason FROM verdict")).toEqual([{ approved: 1, reason: "fine" }]);
    expect(judge.calls[0]!.prompt).toContain("Judge it");
    expect(judge.calls[0]!.prompt).toContain("approved");
    const runs = await query<{ status: string; workflow_name: string }>(dbPath, "SELECT status, workflow_name FROM _smithers_runs");
    expect(runs).toEqual([{ status: "finished", workflow_name: "modes" }]);
    expect(await query(dbPath, "SELECT node_id, state, last_attempt FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "agent", state: "finished", last_attempt: 1 },
      { node_id: "compute", state: "finished", last_attempt: 1 },
      { node_id: "static", state: "finished", last_attempt: 1 },
    ]);
  });

  test("the run input is stored once in the input table and read back through ctx.input", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(
      { input: z.object({ who: z.string(), count: z.number().int() }), echo: z.object({ text: z.string() }) },
      { dbPath },
    );
    const wf = smithers((ctx) => (
      <Workflow name="echo">
        <Task id="echo" output={outputs.echo}>
          {{ text: `${ctx.input.who}x${ctx.input.count}` }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: { who: "ada", count: 2 } });
    expect(await query(dbPath, "SELECT run_id, who, count FROM input")).toEqual([{ run_id: result.runId, who: "ada", count: 2 }]);
    expect(await query(dbPath, "SELECT text FROM echo")).toEqual([{ text: "adax2" }]);
  });

  test("input that fails the input schema rejects with INVALID_INPUT and creates no run", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ input: z.object({ n: z.number() }), out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {{ n: ctx.input.n }}
        </Task>
      </Workflow>
    ));
    const error = await runWorkflow(wf, { input: { n: "nope" } }).catch((e) => e);
    expect(SmithersError.is(error, "INVALID_INPUT")).toBe(true);
    await tablesReady(wf.dbFor()); // on PostgreSQL the tables may still be in the making
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_runs")).toEqual([{ n: 0 }]);
  });

  test("a task that fails twice then succeeds with retries=2 leaves three attempts, two with their errors", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="flaky">
        <Task id="flaky" output={outputs.out} retries={2} retryPolicy={fast}>
          {() => {
            calls++;
            if (calls < 3) throw new Error(`boom ${calls}`);
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect(result.status).toBe("finished");
    const attempts = await query<{ attempt: number; state: string; error_json: string | null }>(
      dbPath,
      "SELECT attempt, state, error_json FROM _smithers_attempts ORDER BY attempt",
    );
    expect(attempts.map((a) => [a.attempt, a.state])).toEqual([
      [1, "failed"],
      [2, "failed"],
      [3, "finished"],
    ]);
    expect(JSON.parse(attempts[0]!.error_json!)).toMatchObject({ code: "TASK_FAILED", nodeId: "flaky", attempt: 1 });
    expect(JSON.parse(attempts[0]!.error_json!).cause.message).toBe("boom 1");
    expect(events.filter((e) => e.type === "NodeRetrying").length).toBe(2);
    expect(await query(dbPath, "SELECT n FROM out")).toEqual([{ n: 3 }]);
  });

  test("a task that keeps failing fails the run with its structured error and writes no row", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="bad" output={outputs.out} retries={1} retryPolicy={fast}>
          {() => {
            throw new Error("always");
          }}
        </Task>
        <Task id="never" output={outputs.out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_FAILED");
    expect(result.error?.nodeId).toBe("bad");
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes")).toEqual([{ node_id: "bad", state: "failed" }]);
    const run = (await query<{ status: string; error_json: string }>(dbPath, "SELECT status, error_json FROM _smithers_runs"))[0]!;
    expect(run.status).toBe("failed");
    expect(JSON.parse(run.error_json)).toMatchObject({ code: "TASK_FAILED", nodeId: "bad", attempt: 2 });
  });

  test("an output that fails validation is never persisted and the attempt records INVALID_OUTPUT", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={0}>
          {() => ({ n: "not a number" }) as unknown as { n: number }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
    const err = JSON.parse((await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts"))[0]!.error_json);
    expect(err.code).toBe("INVALID_OUTPUT");
    expect(err.issues[0].path).toEqual(["n"]);
  });

  test("timeoutMs fails a slow attempt with TASK_TIMEOUT", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="slow" output={outputs.out} timeoutMs={30} retries={0}>
          {async ({ signal }) => {
            await sleepUnlessAborted(2_000, signal);
            return { n: signal.aborted ? 0 : 1 };
          }}
        </Task>
      </Workflow>
    ));
    const started = performance.now();
    const result = await runWorkflow(wf, { input: {} });
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "failed" }]);
  });

  test("skipIf skips a task without a row and the sequence goes on", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="skipped" output={outputs.out} skipIf>
          {{ n: 1 }}
        </Task>
        <Task id="after" output={outputs.out}>
          {{ n: 2 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, n FROM out")).toEqual([{ node_id: "after", n: 2 }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "skipped", state: "skipped" },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_attempts WHERE node_id = 'skipped'")).toEqual([{ n: 0 }]);
  });

  test("continueOnFail lets the run finish past a failed task", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="optional" output={outputs.out} continueOnFail retries={0}>
          {() => {
            throw new Error("nope");
          }}
        </Task>
        <Task id="after" output={outputs.out}>
          {{ n: 2 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "optional", state: "failed" },
    ]);
  });

  test("Parallel maxConcurrency and the run's maxConcurrency cap tasks running at once", async () => {
    for (const [groupCap, runCap, expected] of [
      [2, undefined, 2],
      [undefined, 3, 3],
      [4, 1, 1],
    ] as const) {
      const dbPath = tempDbPath();
      const { Workflow, Task, Parallel, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
      let active = 0;
      let peak = 0;
      const ids = ["a", "b", "c", "d", "e", "f"];
      const wf = smithers(() => (
        <Workflow name="w">
          <Parallel maxConcurrency={groupCap}>
            {ids.map((id, i) => (
              <Task key={id} id={id} output={outputs.out}>
                {async () => {
                  active++;
                  peak = Math.max(peak, active);
                  await Bun.sleep(15);
                  active--;
                  return { n: i };
                }}
              </Task>
            ))}
          </Parallel>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {}, maxConcurrency: runCap });
      expect(result.status).toBe("finished");
      expect(peak).toBe(expected);
      expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 6 }]);
    }
  });

  test("Branch mounts one side; the other never runs", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Branch, smithers, outputs } = createSmithers(
      { input: z.object({ big: z.boolean() }), out: z.object({ size: z.string() }) },
      { dbPath },
    );
    const wf = smithers((ctx) => (
      <Workflow name="w">
        <Branch
          if={ctx.input.big}
          then={
            <Task id="big" output={outputs.out}>
              {{ size: "big" }}
            </Task>
          }
          else={
            <Task id="small" output={outputs.out}>
              {{ size: "small" }}
            </Task>
          }
        />
      </Workflow>
    ));
    await runWorkflow(wf, { input: { big: false } });
    expect(await query(dbPath, "SELECT node_id, size FROM out")).toEqual([{ node_id: "small", size: "small" }]);
  });

  test("ctx reads booleans as booleans and JSON columns parsed, so later tasks can branch on them", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(
      { check: z.object({ ok: z.boolean(), list: z.array(z.number()) }), out: z.object({ seen: z.string() }) },
      { dbPath },
    );
    const wf = smithers((ctx) => {
      const check = ctx.outputMaybe<{ ok: boolean; list: number[] }>(outputs.check, { nodeId: "check" });
      return (
        <Workflow name="w">
          <Task id="check" output={outputs.check}>
            {{ ok: true, list: [1, 2] }}
          </Task>
          {check ? (
            <Task id="after" output={outputs.out}>
              {{ seen: `${check.ok === true}:${check.list.length}` }}
            </Task>
          ) : null}
        </Workflow>
      );
    });
    const result = await runWorkflow(wf, { input: {} });
    expect(result.output).toEqual({ seen: "true:2" });
  });

  test("Loop re-runs its children with new iterations until until is true, counting in _smithers_ralph", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number().int() }) }, { dbPath });
    const wf = smithers((ctx) => {
      const last = ctx.latest<{ n: number }>(outputs.step, "step");
      return (
        <Workflow name="w">
          <Loop id="count" until={(last?.n ?? 0) >= 3} maxIterations={10}>
            <Task id="step" output={outputs.step}>
              {{ n: ctx.iteration + 1 }}
            </Task>
          </Loop>
        </Workflow>
      );
    });
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT iteration, n FROM step ORDER BY iteration")).toEqual([
      { iteration: 0, n: 1 },
      { iteration: 1, n: 2 },
      { iteration: 2, n: 3 },
    ]);
    expect(await query(dbPath, "SELECT ralph_id, iteration, done FROM _smithers_ralph")).toEqual([{ ralph_id: "count", iteration: 2, done: 1 }]);
  });

  test("a Loop that reaches maxIterations fails the run with RALPH_MAX_REACHED (the peer's code) when onMaxReached is fail", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="w">
        <Loop id="never" until={false} maxIterations={2} onMaxReached="fail">
          <Task id="step" output={outputs.step}>
            {{ n: ctx.iteration }}
          </Task>
        </Loop>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("RALPH_MAX_REACHED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM step")).toEqual([{ n: 2 }]);
  });

  test("an agent that never returns valid JSON fails the run, each attempt's error recorded, no output row", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const agent = scriptedAgent(() => "I refuse to answer in JSON");
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="ask" output={outputs.out} agent={agent} retries={1} retryPolicy={fast}>
          Give me n
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    const attempts = await query<{ attempt: number; state: string; error_json: string }>(
      dbPath,
      "SELECT attempt, state, error_json FROM _smithers_attempts ORDER BY attempt",
    );
    expect(attempts.map((a) => [a.attempt, a.state, JSON.parse(a.error_json).code])).toEqual([
      [1, "failed", "INVALID_OUTPUT"],
      [2, "failed", "INVALID_OUTPUT"],
    ]);
    expect(agent.calls.length).toBe(8); // two attempts, each the first call plus three schema corrections
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
  });

  test("an invalid agent reply is repaired by the validation retry within one attempt", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const agent = scriptedAgent(['{"n": "seven"}', '```json\n{"n": 7}\n```']);
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="ask" output={outputs.out} agent={agent}>
          Give me n
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.output).toEqual({ n: 7 });
    expect(agent.calls[0]!.prompt).not.toContain("expected number");
    expect(agent.calls[1]!.prompt).toContain("expected number"); // the Zod issue, carried into the retry
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts")).toEqual([{ attempt: 1, state: "finished" }]);
  });

  test("agent={[primary, fallback]} falls through to the fallback when the primary fails", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const primary = scriptedAgent([new Error("rate limited")]);
    const fallback = scriptedAgent([{ n: 2 }]);
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="ask" output={outputs.out} agent={[primary, fallback]}>
          Give me n
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.output).toEqual({ n: 2 });
    expect(primary.calls.length).toBe(1);
    expect(fallback.calls.length).toBe(1);
  });

  test("events reach onEvent in order and are persisted to _smithers_events with gap-free seqs", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="a" output={outputs.out}>
          {{ n: 1 }}
        </Task>
        <Task id="b" output={outputs.out}>
          {{ n: 2 }}
        </Task>
      </Workflow>
    ));
    const seen: string[] = [];
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => seen.push(`${e.type}:${"nodeId" in e ? e.nodeId : ""}`) });
    // One FrameCommitted per step: start a; settle a + start b; settle b (committed with the finish).
    expect(seen).toEqual([
      "RunStarted:",
      "FrameCommitted:",
      "NodeStarted:a",
      "FrameCommitted:",
      "NodeFinished:a",
      "NodeStarted:b",
      "FrameCommitted:",
      "NodeFinished:b",
      "RunFinished:",
    ]);
    const rows = await query<{ seq: number; type: string }>(dbPath, "SELECT seq, type FROM _smithers_events WHERE run_id = ? ORDER BY seq", result.runId);
    expect(rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(rows.map((r) => r.type)).toEqual(seen.map((t) => t.slice(0, t.indexOf(":"))));
    expect(await query(dbPath, "SELECT frame_no, encoding FROM _smithers_frames WHERE run_id = ? ORDER BY frame_no", result.runId)).toEqual([
      { frame_no: 0, encoding: "full" },
      { frame_no: 1, encoding: "delta" },
      { frame_no: 2, encoding: "delta" },
    ]);
  });

  test("an AbortSignal cancels the run: the running attempt is marked cancelled, not lost", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const controller = new AbortController();
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="slow" output={outputs.out}>
          {async ({ signal }) => {
            setTimeout(() => controller.abort(), 20);
            await sleepUnlessAborted(5_000, signal);
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const started = performance.now();
    const result = await runWorkflow(wf, { input: {}, signal: controller.signal });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(result.status).toBe("cancelled");
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "cancelled" }]);
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "cancelled" }]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
  });

  test("a FatalError is never retried, whatever retries says", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={5} retryPolicy={fast}>
          {() => {
            calls++;
            throw new FatalError("credentials revoked");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(calls).toBe(1);
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts")).toEqual([{ attempt: 1, state: "failed" }]);
  });

  test("a RetryableError's retryAfterMs sets the wait before the next attempt", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const starts: number[] = [];
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={1} retryPolicy={{ initialDelayMs: 5_000 }}>
          {() => {
            starts.push(performance.now());
            if (starts.length === 1) throw new RetryableError("busy upstream", { retryAfterMs: 60 });
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    const waited = starts[1]! - starts[0]!;
    expect(waited).toBeGreaterThanOrEqual(55);
    expect(waited).toBeLessThan(4_000); // the 5 s policy backoff was not used
  });

  test("a failure in a Parallel cancels its siblings still running, so the run fails at once", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Parallel, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Parallel>
          <Task id="slow" output={outputs.out}>
            {async ({ signal }) => {
              await sleepUnlessAborted(5_000, signal);
              return { n: 1 };
            }}
          </Task>
          <Task id="broken" output={outputs.out} retries={0}>
            {async () => {
              await Bun.sleep(10);
              throw new Error("broken");
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const started = performance.now();
    const result = await runWorkflow(wf, { input: {} });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(result.status).toBe("failed");
    expect(result.error?.nodeId).toBe("broken");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "broken", state: "failed" },
      { node_id: "slow", state: "cancelled" },
    ]);
  });

  test("an attempt taken over by another process commits no output (fencing)", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {async () => {
            // What a resume elsewhere does to an attempt it believes dead.
            await execute(dbPath, "UPDATE _smithers_attempts SET state = 'abandoned'");
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("RUN_OWNED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "abandoned" }]);
  });
});

describe("ownership", () => {
  test("a run taken over by another owner mid-step writes nothing more: RUN_OWNED, the new owner's row untouched", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="owned">
        <Sequence>
          <Task id="a" output={outputs.out}>
            {async () => {
              // Another process claims the run while task a works (its attempt stays `running`).
              await execute(dbPath, "UPDATE _smithers_runs SET runtime_owner_id = 'other:1:x', heartbeat_at_ms = 1");
              return { n: 1 };
            }}
          </Task>
          <Task id="b" output={outputs.out}>
            {{ n: 2 }}
          </Task>
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("RUN_OWNED");
    expect(await query(dbPath, "SELECT status, runtime_owner_id, finished_at_ms FROM _smithers_runs")).toEqual([
      { status: "running", runtime_owner_id: "other:1:x", finished_at_ms: null },
    ]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_attempts")).toEqual([{ node_id: "a", state: "running" }]);
    expect(await query(dbPath, "SELECT COUNT(*) AS n FROM out")).toEqual([{ n: 0 }]);
  });
});

describe("tasks that leave the plan while they run", () => {
  test("a task unmounted while running still finishes, and what waits on it runs: the run is not stuck", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Parallel, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => {
      const fastDone = ctx.outputMaybe(outputs.out, { nodeId: "fast" }) !== undefined;
      return (
        <Workflow name="unmount">
          <Parallel>
            <Task id="fast" output={outputs.out}>
              {{ n: 1 }}
            </Task>
            {fastDone ? null : (
              <Task id="slow" output={outputs.out}>
                {async () => {
                  await Bun.sleep(30);
                  return { n: 2 };
                }}
              </Task>
            )}
            <Task id="last" output={outputs.out} dependsOn={["slow"]}>
              {{ n: 3 }}
            </Task>
          </Parallel>
        </Workflow>
      );
    });
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.error?.code).toBeUndefined();
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, n FROM out ORDER BY node_id")).toEqual([
      { node_id: "fast", n: 1 },
      { node_id: "last", n: 3 },
      { node_id: "slow", n: 2 },
    ]);
  });
});

describe("a dependsOn that can never be met", () => {
  test("fails the run with DEPENDENCY_DEADLOCK right after the last task ends (the ending task's wake-up is not lost)", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const wf = smithers(() => (
      <Workflow name="never">
        <Task id="first" output={outputs.out}>
          {{ n: 1 }}
        </Task>
        <Task id="second" output={outputs.out} dependsOn={["frist"]}>
          {{ n: 2 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect([result.status, result.error?.code]).toEqual(["failed", "DEPENDENCY_DEADLOCK"]);
  });
});

/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { answerHuman, approvalDecisionSchema, approve, createSmithers, runWorkflow, sendSignal, Subflow } from "../../src/index.ts";
import { forkRun, rewindRun, smithersEventSchema, smithersEventTypeSchema, supervise } from "../../src/engine/index.ts";
import { query, tempDbPath, tempDir } from "../helpers.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSmithersDb } from "../../src/db/index.ts";
import { RunQueue } from "../../src/server/queue.ts";

type EventRow = { run_id: string; seq: number; timestamp_ms: number; type: string; payload_json: string };

/** A journal row as the event it records: its columns plus its payload. */
const asEvent = (r: EventRow) => ({ ...JSON.parse(r.payload_json), runId: r.run_id, timestampMs: r.timestamp_ms, type: r.type });

const fast = { initialDelayMs: 1, maxDelayMs: 2 };

describe("smithersEventSchema()", () => {
  test("every event the engine journals, of every type, parses with the union of its type's variant", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sequence, Loop, ContinueAsNew, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let flaky = 0;
    const wf = smithers((ctx) => (
      <Workflow name="all-events">
        <Sequence>
          <Task id="plain" output={outputs.out}>
            {{ n: 1 }}
          </Task>
          <Task id="skipped" output={outputs.out} skipIf>
            {{ n: 2 }}
          </Task>
          <Task id="tools" output={outputs.out}>
            {async (t) => {
              await t.sideEffect("ok", () => 1);
              await t.sideEffect("bad", () => Promise.reject(new Error("no"))).catch(() => undefined);
              return { n: 3 };
            }}
          </Task>
          <Task id="flaky" output={outputs.out} retries={1} retryPolicy={fast}>
            {() => {
              if (flaky++ === 0) throw new Error("first try fails");
              return { n: 4 };
            }}
          </Task>
          <Loop id="l" until={ctx.iterationCount(outputs.out, "step") >= 2} maxIterations={5}>
            <Task id="step" output={outputs.out}>
              {{ n: ctx.iteration }}
            </Task>
          </Loop>
          <Task id="broken" output={outputs.out} retries={0}>
            {() => {
              throw new Error("always");
            }}
          </Task>
        </Sequence>
      </Workflow>
    ));
    const failed = await runWorkflow(wf, { runId: "failing" });
    expect(failed.status).toBe("failed");
    expect((await runWorkflow(wf, { runId: "failing", resume: true })).status).toBe("failed");

    const controller = new AbortController();
    const hang = smithers(() => (
      <Workflow name="hang">
        <Task id="wait" output={outputs.out}>
          {(t) => new Promise((_, reject) => t.signal.addEventListener("abort", () => reject(t.signal.reason)))}
        </Task>
      </Workflow>
    ));
    const cancelled = runWorkflow(hang, { runId: "cancelled", signal: controller.signal, onEvent: (e) => e.type === "NodeStarted" && controller.abort() });
    expect((await cancelled).status).toBe("cancelled");

    const deaf = smithers(() => (
      <Workflow name="deaf">
        <Task id="ignores" output={outputs.out} timeoutMs={5} retries={0}>
          {() => Bun.sleep(200).then(() => ({ n: 0 }))}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(deaf, { runId: "abandoned", graceMs: 10 })).status).toBe("failed");

    const gate = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const gated = gate.smithers(() => (
      <gate.Workflow name="gated">
        <gate.Timer id="tick" duration="1ms" />
        <gate.Approval id="ok" output={gate.outputs.approval} request={{ title: "ok?" }} />
      </gate.Workflow>
    ));
    expect((await runWorkflow(gated, { runId: "waiting" })).status).toBe("waiting-approval");
    await approve(gate.smithersDb, { runId: "waiting" });
    // A daemon that cannot load the run's workflow hands it back (RunResumeFailed); the next resume goes ahead.
    const cannotLoad = await supervise({ db: gate.smithersDb, resolveWorkflow: () => Promise.reject(new Error("no such file")) });
    expect(cannotLoad.map((o) => o.action)).toEqual(["released"]);
    expect((await runWorkflow(gated, { runId: "waiting", resume: true })).status).toBe("finished");

    // Signals (waiting, refused, taken, timed out) and a human task (asked, answered).
    const w = createSmithers({ fb: z.object({ rating: z.number() }), hr: z.object({ ok: z.boolean() }) }, { dbPath });
    const waits = w.smithers(() => (
      <w.Workflow name="waits">
        <w.WaitForEvent id="late" event="never" output={w.outputs.fb} timeoutMs={1} onTimeout="skip" />
        <w.HumanTask id="ask" output={w.outputs.hr} prompt="ok?" />
        <w.Signal id="fb" schema={w.outputs.fb} />
      </w.Workflow>
    ));
    expect((await runWorkflow(waits, { runId: "waits" })).status).toBe("waiting-approval");
    await sendSignal(w.smithersDb, { runId: "waits", name: "fb", data: { rating: "bad" } }); // stored: nothing waits for it yet
    await sendSignal(w.smithersDb, { runId: "waits", name: "fb", data: { rating: 5 } });
    await answerHuman(w.smithersDb, { requestId: "waits:ask:0:1", data: { ok: true } });
    expect((await runWorkflow(waits, { runId: "waits", resume: true })).status).toBe("finished");

    // A child run that waits (SubflowWaiting), decided through its parent's id.
    const childKit = createSmithers({ approval: approvalDecisionSchema });
    const waitingChild = childKit.smithers(() => (
      <childKit.Workflow name="child">
        <childKit.Approval id="ok" output={childKit.outputs.approval} request={{ title: "child ok?" }} />
      </childKit.Workflow>
    ));
    const parentKit = createSmithers({ sub: approvalDecisionSchema }, { dbPath });
    const parent = parentKit.smithers(() => (
      <parentKit.Workflow name="parent">
        <Subflow id="sub" workflow={waitingChild} output={parentKit.outputs.sub} />
      </parentKit.Workflow>
    ));
    expect((await runWorkflow(parent, { runId: "parent" })).status).toBe("waiting-approval");
    await approve(parentKit.smithersDb, { runId: "parent" });
    expect((await runWorkflow(parent, { runId: "parent", resume: true })).status).toBe("finished");

    // A run that continues as new (RunContinuedAsNew), then finishes.
    const chained = smithers((ctx) => (
      <Workflow name="chained">
        <Task id="only" output={outputs.out}>
          {{ n: 0 }}
        </Task>
        {"__smithersContinuation" in (ctx.input as object) ? null : <ContinueAsNew state={{ page: 2 }} />}
      </Workflow>
    ));
    expect((await runWorkflow(chained, { runId: "continued" })).status).toBe("finished");

    const easy = smithers(() => (
      <Workflow name="easy">
        <Task id="only" output={outputs.out}>
          {{ n: 0 }}
        </Task>
        <Task id="cached" output={outputs.out} cache={{ by: () => "same" }}>
          {() => ({ n: 1 })}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(easy, { runId: "finished" })).status).toBe("finished");

    // An agent that reports its text as it works (NodeOutput), after a first agent that fails (AgentFallback).
    const talkative = smithers(() => (
      <Workflow name="talkative">
        <Task
          id="talk"
          output={outputs.out}
          agent={[
            {
              id: "busy",
              generate: async () => {
                throw new Error("429 Too Many Requests");
              },
            },
            {
              generate: async ({ onEvent }) => {
                onEvent?.({ type: "text", text: "thinking" });
                return { text: '{"n":2}' };
              },
            },
          ]}
        >
          Count.
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(talkative, { runId: "talkative" })).status).toBe("finished");
    expect((await runWorkflow(easy, { runId: "cache-hit" })).status).toBe("finished"); // a NodeFinished with cached: true

    // `smithers serve` with a full queue journals a RunRefused under its pseudo-run.
    const serverDb = openSmithersDb(dbPath);
    const full = new RunQueue({
      db: serverDb,
      workflows: new Map([["easy", { name: "easy", path: "easy.tsx", workflow: easy }]]),
      capacity: 0,
      maxConcurrent: 1,
      retryAfterSeconds: 1,
      onEvent: () => undefined,
      onError: () => undefined,
    });
    expect(await full.enqueue({ workflow: "easy", runId: "refused" }).catch((e: { code: string }) => e.code)).toBe("QUEUE_FULL");
    await serverDb.close();

    // Time travel: a forced fork across a side effect (RunForked, SideEffectBoundaryCrossed), a rewind
    // (RunRewound), and a resume whose code changed, allowed (WorkflowCodeChanged).
    let failOnce = true;
    const effect = smithers(() => (
      <Workflow name="effect">
        <Task id="fx" output={outputs.out}>
          {async (c) => ({ n: await c.sideEffect("note", () => 3) })}
        </Task>
        <Task id="flaky" output={outputs.out} noRetry>
          {() => {
            if (failOnce) throw new Error("once");
            return { n: 4 };
          }}
        </Task>
      </Workflow>
    ));
    const dir = tempDir();
    writeFileSync(join(dir, "v1.tsx"), "// version 1");
    writeFileSync(join(dir, "v2.tsx"), "// version 2");
    expect((await runWorkflow(effect, { runId: "effect", workflowPath: join(dir, "v1.tsx") })).status).toBe("failed");
    failOnce = false;
    await forkRun(effect, { runId: "effect", frame: 0, force: true, newRunId: "forked" });
    expect((await runWorkflow(effect, { runId: "effect", resume: true, workflowPath: join(dir, "v2.tsx"), allowCodeChange: true })).status).toBe("finished");
    await rewindRun(effect.dbFor(), { runId: "effect", frame: 0, force: true });

    const rows = await query<EventRow>(dbPath, "SELECT run_id, seq, timestamp_ms, type, payload_json FROM _smithers_events ORDER BY run_id, seq");
    const rejected = rows.flatMap((r) => {
      const parsed = smithersEventSchema().safeParse(asEvent(r));
      return parsed.success ? [] : [`${r.run_id}#${r.seq} ${r.type} ${r.payload_json}: ${parsed.error.message}`];
    });
    expect(rejected).toEqual([]);
    expect(rows.filter((r) => r.type === "NodeFinished" && JSON.parse(r.payload_json).cached === true).map((r) => r.run_id)).toEqual(["cache-hit"]);
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(smithersEventTypeSchema().options));
  });

  test("a variant has exactly its fields: a NodeFailed without its error, or with a stray field, is rejected", () => {
    const failed = { type: "NodeFailed", runId: "r", timestampMs: 1, nodeId: "a", iteration: 0, attempt: 1, durationMs: 3, error: { code: "TASK_FAILED" } };
    expect(smithersEventSchema().safeParse(failed).success).toBe(true);
    const { error: _omit, ...withoutError } = failed;
    expect(smithersEventSchema().safeParse(withoutError).success).toBe(false);
    expect(smithersEventSchema().safeParse({ ...failed, loopId: "x" }).success).toBe(false);
  });

  test("checking the type narrows: a NodeFailed event has an error", () => {
    const event = smithersEventSchema().parse({
      type: "NodeFailed",
      runId: "r",
      timestampMs: 1,
      nodeId: "a",
      iteration: 0,
      attempt: 1,
      durationMs: 3,
      error: { code: "X" },
    });
    const code = event.type === "NodeFailed" ? event.error.code : undefined;
    expect(code).toBe("X");
  });
});

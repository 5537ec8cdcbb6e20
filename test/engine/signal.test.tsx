/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, sendSignal } from "../../src/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { rejection, query, tempDbPath } from "../helpers.ts";

const feedback = z.object({ rating: z.number().int().min(1).max(5), comment: z.string() });

function kit(dbPath: string) {
  return createSmithers({ feedback, summary: z.object({ text: z.string() }), deployed: z.object({ version: z.string() }) }, { dbPath });
}

describe("<Signal> and <WaitForEvent>", () => {
  test("the run ends waiting-event; a signal sent later is taken on resume and its children mount with the payload", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Signal, Task, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="feedback">
        <Signal id="user-feedback" schema={outputs.feedback}>
          {(f) => (
            <Task id="summarize" output={outputs.summary}>
              {{ text: `${f.rating}: ${f.comment.toUpperCase()}` }}
            </Task>
          )}
        </Signal>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-event");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "waiting-event" }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes")).toEqual([{ node_id: "user-feedback", state: "waiting-event" }]);
    const sent = await sendSignal(smithersDb, { runId: "r", name: "user-feedback", data: { rating: 5, comment: "great" } });
    expect(sent).toMatchObject({ seq: 0, waitingNodes: [{ nodeId: "user-feedback", iteration: 0 }] });
    const result = await runWorkflow(wf, { runId: "r", resume: true });
    expect(result).toMatchObject({ status: "finished", output: { text: "5: GREAT" } });
    expect(await query(dbPath, "SELECT rating, comment FROM feedback")).toEqual([{ rating: 5, comment: "great" }]);
    expect(await query(dbPath, "SELECT seq, consumed_by_node_id, consumed_at_ms > 0 AS taken FROM _smithers_signals")).toEqual([
      { seq: 0, consumed_by_node_id: "user-feedback", taken: 1 },
    ]);
  });
});

describe("signals: order, correlation, validation", () => {
  test("a signal sent before its node starts is kept and taken when it starts; of several, the first in seq order; others stay open", async () => {
    const dbPath = tempDbPath();
    const { Workflow, WaitForEvent, Task, Loop, Sequence, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers((ctx) => (
      <Workflow name="early">
        <Sequence>
          <Task id="first" output={outputs.summary}>
            {async () => {
              await sendSignal(smithersDb, { runId: ctx.runId, name: "deploy.done", data: { version: "1.0.0" } });
              await sendSignal(smithersDb, { runId: ctx.runId, name: "deploy.done", data: { version: "1.0.1" } });
              return { text: "sent two" };
            }}
          </Task>
          <Loop id="each" until={ctx.iterationCount(outputs.deployed, "take") >= 2} maxIterations={3}>
            <WaitForEvent id="take" event="deploy.done" output={outputs.deployed} />
          </Loop>
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT iteration, version FROM deployed ORDER BY iteration")).toEqual([
      { iteration: 0, version: "1.0.0" },
      { iteration: 1, version: "1.0.1" },
    ]);
    expect(await query(dbPath, "SELECT seq, consumed_by_node_id AS node, consumed_by_iteration AS it FROM _smithers_signals ORDER BY seq")).toEqual([
      { seq: 0, node: "take", it: 0 },
      { seq: 1, node: "take", it: 1 },
    ]);
  });

  test("a node with a correlation id takes only signals with that id; one without takes any of the name", async () => {
    const dbPath = tempDbPath();
    const { Workflow, WaitForEvent, Parallel, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="correlated">
        <Parallel>
          <WaitForEvent id="mine" event="deployed" correlationId="d-2" output={outputs.deployed} async />
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-event");
    const other = await sendSignal(smithersDb, { runId: "r", name: "deployed", correlationId: "d-1", data: { version: "other" } });
    expect(other.waitingNodes).toEqual([]);
    expect(await query(dbPath, "SELECT wake_at_ms FROM _smithers_runs")).toEqual([{ wake_at_ms: null }]); // nothing for it: not woken
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("waiting-event");
    const mine = await sendSignal(smithersDb, { runId: "r", name: "deployed", correlationId: "d-2", data: { version: "mine" } });
    expect(mine.waitingNodes).toEqual([{ nodeId: "mine", iteration: 0 }]);
    expect(await query(dbPath, "SELECT wake_at_ms > 0 AS due FROM _smithers_runs")).toEqual([{ due: 1 }]);
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT version FROM deployed")).toEqual([{ version: "mine" }]);
    expect(await query(dbPath, "SELECT correlation_id, consumed_by_node_id AS node FROM _smithers_signals ORDER BY seq")).toEqual([
      { correlation_id: "d-1", node: null },
      { correlation_id: "d-2", node: "mine" },
    ]);
  });

  test("bad signals: unknown run, ended run, a payload failing the waiting node's schema: each an error with its code, nothing stored", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Signal, Task, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="strict">
        <Signal id="user-feedback" schema={outputs.feedback} />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    expect((await rejection(sendSignal(smithersDb, { runId: "nope", name: "user-feedback", data: {} }))).code).toBe("RUN_NOT_FOUND");
    const invalid = await rejection(sendSignal(smithersDb, { runId: "r", name: "user-feedback", data: { rating: 9, comment: 3 } }));
    expect(invalid.code).toBe("SIGNAL_INVALID");
    expect(invalid.message).toContain("rating");
    expect(invalid.message).toContain("comment");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_signals")).toEqual([{ n: 0 }]);
    const done = smithers(() => (
      <Workflow name="done">
        <Task id="t" output={outputs.summary}>
          {{ text: "x" }}
        </Task>
      </Workflow>
    ));
    await runWorkflow(done, { input: {}, runId: "over" });
    expect((await rejection(sendSignal(smithersDb, { runId: "over", name: "x", data: {} }))).code).toBe("RUN_ENDED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_signals")).toEqual([{ n: 0 }]);
  });

  test("a signal stored before its node started that fails the node's schema is refused when offered (SignalRejected); the next one is taken", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Signal, HumanTask, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="late-check">
        <HumanTask id="first" output={outputs.summary} prompt="say something" />
        <Signal id="user-feedback" schema={outputs.feedback} />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    // Nothing waits for it yet: stored unchecked.
    await sendSignal(smithersDb, { runId: "r", name: "user-feedback", data: { rating: "five" } });
    await sendSignal(smithersDb, { runId: "r", name: "user-feedback", data: { rating: 4, comment: "fine" } });
    const { answerHuman } = await import("../../src/index.ts");
    await answerHuman(smithersDb, { requestId: "r:first:0:1", data: { text: "hi" } });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT rating FROM feedback")).toEqual([{ rating: 4 }]);
    const signals = await query<{ seq: number; node: string | null; rejected: string | null }>(
      dbPath,
      "SELECT seq, consumed_by_node_id AS node, rejected_json AS rejected FROM _smithers_signals ORDER BY seq",
    );
    expect(signals.map((s) => [s.seq, s.node, s.rejected === null ? null : JSON.parse(s.rejected).code])).toEqual([
      [0, null, "SIGNAL_INVALID"],
      [1, "user-feedback", null],
    ]);
    expect(await query(dbPath, "SELECT type FROM _smithers_events WHERE type LIKE 'Signal%' ORDER BY seq")).toEqual([
      { type: "SignalWaiting" },
      { type: "SignalRejected" },
      { type: "SignalReceived" },
    ]);
  });
});

describe("signal timeouts", () => {
  const waitFor = (onTimeout: "fail" | "skip" | "continue", tagged = false, timeoutMs = 30) => {
    const dbPath = tempDbPath();
    const k = createSmithers(
      {
        deployed: z.object({ version: z.string() }),
        tagged: z.object({ kind: z.enum(["signal", "timeout"]), payload: z.object({ version: z.string() }).optional() }),
        after: z.object({ ok: z.boolean() }),
      },
      { dbPath },
    );
    const wf = k.smithers(() => (
      <k.Workflow name="timeouts">
        <k.WaitForEvent id="w" event="go" output={tagged ? k.outputs.tagged : k.outputs.deployed} timeoutMs={timeoutMs} onTimeout={onTimeout} tagged={tagged} />
        <k.Task id="after" output={k.outputs.after}>
          {{ ok: true }}
        </k.Task>
      </k.Workflow>
    ));
    return { dbPath, wf, k };
  };

  test("a short timeout is waited for in the process; fail ends the node with SIGNAL_TIMEOUT", async () => {
    const { dbPath, wf } = waitFor("fail");
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("SIGNAL_TIMEOUT");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([{ node_id: "w", state: "failed" }]);
  });

  test("skip skips the node; continue with tagged stores { kind: 'timeout' }; a tagged signal stores { kind: 'signal', payload }", async () => {
    const skip = waitFor("skip");
    expect((await runWorkflow(skip.wf, { input: {} })).status).toBe("finished");
    expect(await query(skip.dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "w", state: "skipped" },
    ]);
    const cont = waitFor("continue", true);
    expect((await runWorkflow(cont.wf, { input: {} })).status).toBe("finished");
    expect(await query(cont.dbPath, "SELECT kind, payload FROM tagged")).toEqual([{ kind: "timeout", payload: null }]);

    const got = waitFor("continue", true, 60_000); // the signal comes first, however slow the machine
    expect((await runWorkflow(got.wf, { input: {}, runId: "g", waitInPlaceMs: 0 })).status).toBe("waiting-event");
    await sendSignal(got.k.smithersDb, { runId: "g", name: "go", data: { version: "2" } });
    expect((await runWorkflow(got.wf, { runId: "g", resume: true })).status).toBe("finished");
    expect(await query(got.dbPath, "SELECT kind, payload FROM tagged")).toEqual([{ kind: "signal", payload: '{"version":"2"}' }]);
  });

  test("onTimeout continue without tagged is refused at render (no row to store)", async () => {
    const { Workflow, WaitForEvent, smithers, outputs } = kit(tempDbPath());
    const wf = smithers(() => (
      <Workflow name="x">
        <WaitForEvent id="w" event="go" output={outputs.deployed} timeoutMs={10} onTimeout="continue" />
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("INVALID_WORKFLOW");
  });

  test("a process that exits while waiting: the run stores the deadline, and the daemon times it out once it passed", async () => {
    // Long enough that the run surely ends waiting before the deadline, even on a loaded machine.
    const { dbPath, wf, k } = waitFor("skip", false, 500);
    expect((await runWorkflow(wf, { input: {}, runId: "t", waitInPlaceMs: 0 })).status).toBe("waiting-event");
    const wake = (await query<{ wake: number }>(dbPath, "SELECT wake_at_ms AS wake FROM _smithers_runs"))[0]!.wake;
    expect(await query(dbPath, "SELECT wake_at_ms AS wake FROM _smithers_nodes WHERE node_id = 'w'")).toEqual([{ wake }]);
    const early = await supervise({ db: k.smithersDb, resolveWorkflow: () => wf, now: () => wake - 1 });
    expect(early).toEqual([]);
    await Bun.sleep(Math.max(0, wake - Date.now() + 5));
    const outcomes = await supervise({ db: k.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : undefined])).toEqual([["t", "resumed", "finished"]]);
    expect(await query(dbPath, "SELECT type FROM _smithers_events WHERE type = 'WaitTimedOut'")).toEqual([{ type: "WaitTimedOut" }]);
  });
});

describe("async", () => {
  const build = (async: boolean) => {
    const dbPath = tempDbPath();
    const k = kit(dbPath);
    const wf = k.smithers(() => (
      <k.Workflow name="lanes">
        <k.Parallel>
          <k.WaitForEvent id="gate" event="go" output={k.outputs.deployed} async={async} />
          <k.Sequence>
            <k.Task id="a" output={k.outputs.summary}>
              {async () => {
                await Bun.sleep(20);
                return { text: "a" };
              }}
            </k.Task>
            <k.Task id="b" output={k.outputs.summary}>
              {{ text: "b" }}
            </k.Task>
          </k.Sequence>
        </k.Parallel>
      </k.Workflow>
    ));
    return { dbPath, wf, k };
  };

  test("without async, a waiting node holds up the whole run: the other lane finishes what runs but starts nothing new", async () => {
    const { dbPath, wf, k } = build(false);
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-event");
    expect(await query(dbPath, "SELECT node_id FROM summary ORDER BY node_id")).toEqual([{ node_id: "a" }]);
    await sendSignal(k.smithersDb, { runId: "r", name: "go", data: { version: "1" } });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id FROM summary ORDER BY node_id")).toEqual([{ node_id: "a" }, { node_id: "b" }]);
  });

  test("with async, only what depends on it waits: the other lane runs to its end", async () => {
    const { dbPath, wf } = build(true);
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-event");
    expect(await query(dbPath, "SELECT node_id FROM summary ORDER BY node_id")).toEqual([{ node_id: "a" }, { node_id: "b" }]);
  });
});

describe("waiting nodes are visible", () => {
  test("ctx.nodeState shows a node waiting-event, and the run's frames record the state", async () => {
    const dbPath = tempDbPath();
    const { Workflow, WaitForEvent, Task, Parallel, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers((ctx) => (
      <Workflow name="visible">
        <Parallel>
          <WaitForEvent id="gate" event="go" output={outputs.deployed} async />
          {ctx.nodeState("gate") === "waiting-event" ? (
            <Task id="notify" output={outputs.summary}>
              {{ text: `gate is ${ctx.nodeState("gate")}` }}
            </Task>
          ) : null}
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-event");
    expect(await query(dbPath, "SELECT text FROM summary")).toEqual([{ text: "gate is waiting-event" }]);
    const { readFrameXml } = await import("../../src/engine/index.ts");
    const frames = await query<{ n: number }>(dbPath, "SELECT frame_no AS n FROM _smithers_frames ORDER BY frame_no");
    const last = await readFrameXml(smithersDb, "r", frames.at(-1)!.n);
    expect(last).toMatch(/id="gate"[^>]*state="waiting-event"|state="waiting-event"[^>]*id="gate"/);
  });
});

describe("de-duplication", () => {
  test("a retry with the same dedupeKey stores nothing and returns the first seq; another key is a new signal", async () => {
    const dbPath = tempDbPath();
    const { Workflow, WaitForEvent, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="dedupe">
        <WaitForEvent id="w" event="deployed" output={outputs.deployed} />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    const first = await sendSignal(smithersDb, { runId: "r", name: "deployed", data: { version: "1" }, dedupeKey: "evt-1" });
    const retry = await sendSignal(smithersDb, { runId: "r", name: "deployed", data: { version: "1" }, dedupeKey: "evt-1" });
    const other = await sendSignal(smithersDb, { runId: "r", name: "deployed", data: { version: "2" }, dedupeKey: "evt-2" });
    expect([first.seq, first.duplicate, retry.seq, retry.duplicate, other.seq, other.duplicate]).toEqual([0, false, 0, true, 1, false]);
    expect(await query(dbPath, "SELECT seq, dedupe_key FROM _smithers_signals ORDER BY seq")).toEqual([
      { seq: 0, dedupe_key: "evt-1" },
      { seq: 1, dedupe_key: "evt-2" },
    ]);
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT version FROM deployed")).toEqual([{ version: "1" }]);
  });
});

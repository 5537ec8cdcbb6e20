/** @jsxImportSource smithers-workflows */
/** Where a signal addressed to a parent run goes when a `<Subflow>` child run waits for it. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { main } from "../../src/cli/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow, sendSignal, Subflow } from "../../src/index.ts";
import { createServer } from "../../src/server/index.ts";
import { query, rejection, tempDbPath } from "../helpers.ts";

/** A child workflow that waits for signal "go" (with `correlationId` when given), then finishes. */
function waitingChild(correlationId?: string) {
  const child = createSmithers({ go: z.object({ ok: z.boolean() }) });
  return child.smithers(
    () => (
      <child.Workflow name="waiting-child">
        <child.WaitForEvent id="go" event="go" output={child.outputs.go} correlationId={correlationId} />
      </child.Workflow>
    ),
    { output: child.outputs.go },
  );
}

/** A parent whose `<Subflow>` children (ids `a`, `b` …) each wait for "go"; `own` makes the parent wait for "go" itself too. */
function parentOf(dbPath: string, subflows: { id: string; correlationId?: string }[], own = false) {
  const kit = createSmithers({ go: z.object({ ok: z.boolean() }) }, { dbPath });
  const { Workflow, Parallel, WaitForEvent, smithers, outputs } = kit;
  const wf = smithers(() => (
    <Workflow name="parent">
      <Parallel>
        {subflows.map((s) => (
          <Subflow key={s.id} id={s.id} workflow={waitingChild(s.correlationId)} input={{}} output={outputs.go} />
        ))}
        {own ? <WaitForEvent id="own-go" event="go" output={outputs.go} async /> : null}
      </Parallel>
    </Workflow>
  ));
  return { wf, kit };
}

const signalRows = (dbPath: string) =>
  query(dbPath, "SELECT run_id, signal_name, seq, consumed_by_node_id AS taken_by FROM _smithers_signals ORDER BY run_id, seq");

describe("sendSignal to a parent run", () => {
  test("with nothing of its own waiting, it goes to the child run that waits for it; the answer names that run, and the daemon finishes both", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const sent = await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true } });
    expect(sent).toEqual({ runId: "p/a#0", viaRunId: "p", name: "go", seq: 0, duplicate: false, waitingNodes: [{ nodeId: "go", iteration: 0 }] });
    expect(await signalRows(dbPath)).toEqual([{ run_id: "p/a#0", signal_name: "go", seq: 0, taken_by: null }]);
    const outcomes = await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action === "resumed" ? o.result.status : o.action])).toEqual([["p", "finished"]]);
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "p", status: "finished" },
      { run_id: "p/a#0", status: "finished" },
    ]);
    expect(await signalRows(dbPath)).toEqual([{ run_id: "p/a#0", signal_name: "go", seq: 0, taken_by: "go" }]);
  });

  test("a node of the parent that waits for it takes it, before any child", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }], true);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const sent = await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true } });
    expect(sent).toMatchObject({ runId: "p", waitingNodes: [{ nodeId: "own-go", iteration: 0 }] });
    expect(sent.viaRunId).toBeUndefined();
  });

  test("a correlation id picks the one child waiting with it", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [
      { id: "a", correlationId: "eu" },
      { id: "b", correlationId: "us" },
    ]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    expect(await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, correlationId: "us" })).toMatchObject({ runId: "p/b#0" });
  });

  test("when several child runs wait for it, it is SIGNAL_AMBIGUOUS naming them, and nothing is stored", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }, { id: "b" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const error = await rejection(sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true } }));
    expect(error.code).toBe("SIGNAL_AMBIGUOUS");
    expect(error.details).toMatchObject({ runId: "p", childRunIds: ["p/a#0", "p/b#0"] });
    expect(error.message).toContain("p/a#0, p/b#0");
    expect(await signalRows(dbPath)).toEqual([]);
    // Addressed to one child by its run id, it goes there.
    expect(await sendSignal(kit.smithersDb, { runId: "p/b#0", name: "go", data: { ok: true } })).toMatchObject({ runId: "p/b#0" });
  });

  test("a payload the child's schema refuses is SIGNAL_INVALID naming the child run, and nothing is stored", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const error = await rejection(sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: "yes" } }));
    expect(error.code).toBe("SIGNAL_INVALID");
    expect(error.details).toMatchObject({ runId: "p/a#0", nodeId: "go" });
    expect(await signalRows(dbPath)).toEqual([]);
  });

  test("a retry after the child took it and the parent finished is RUN_ENDED, as for any ended run", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, dedupeKey: "k1" });
    await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(await query(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = 'p'")).toEqual([{ status: "finished" }]);
    expect((await rejection(sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, dedupeKey: "k1" }))).code).toBe("RUN_ENDED");
  });

  test("a retry with the same dedupe key while the parent still runs answers with the child's signal", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a" }, { id: "b", correlationId: "later" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const first = await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, dedupeKey: "k1" });
    expect(first).toMatchObject({ runId: "p/a#0", duplicate: false });
    const again = await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, dedupeKey: "k1" });
    expect(again).toEqual({ runId: "p/a#0", viaRunId: "p", name: "go", seq: first.seq, duplicate: true, waitingNodes: [] });
    expect(await signalRows(dbPath)).toEqual([{ run_id: "p/a#0", signal_name: "go", seq: 0, taken_by: null }]);
  });

  test("with nothing waiting anywhere it is kept by the parent run itself", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = parentOf(dbPath, [{ id: "a", correlationId: "eu" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    expect(await sendSignal(kit.smithersDb, { runId: "p", name: "go", data: { ok: true }, correlationId: "us" })).toMatchObject({
      runId: "p",
      waitingNodes: [],
    });
    expect(await signalRows(dbPath)).toEqual([{ run_id: "p", signal_name: "go", seq: 0, taken_by: null }]);
  });
});

describe("smithers signal and POST /runs/:id/signals to a parent run", () => {
  test("both route it like sendSignal: the CLI names the child run it went to, the HTTP answer carries that run's id", async () => {
    const dbPath = tempDbPath();
    const { wf } = parentOf(dbPath, [
      { id: "a", correlationId: "eu" },
      { id: "b", correlationId: "us" },
    ]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: () => {} };
    expect(await main(["signal", "p", "go", "--data", '{"ok":true}', "--correlation-id", "eu", "--db", dbPath], io)).toBe(0);
    expect(out.join("\n")).toContain("signal go stored for child run p/a#0 of p (seq 0); go waits for it");

    const server = await createServer({ dbPath, pollMs: 20, onError: () => undefined });
    const { url } = await server.start({ port: 0 });
    try {
      const res = await fetch(`${url}/runs/p/signals`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "go", data: { ok: true }, correlationId: "us" }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ runId: "p/b#0", viaRunId: "p", name: "go", seq: 0, duplicate: false, waitingNodes: [{ nodeId: "go", iteration: 0 }] });
    } finally {
      await server.stop();
    }
  });

  test("with several children waiting, the CLI exits 2 with SIGNAL_AMBIGUOUS and the server answers 400 with the code", async () => {
    const dbPath = tempDbPath();
    const { wf } = parentOf(dbPath, [{ id: "a" }, { id: "b" }]);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    const err: string[] = [];
    expect(await main(["signal", "p", "go", "--data", '{"ok":true}', "--db", dbPath], { out: () => {}, err: (l) => err.push(l) })).toBe(2);
    expect(err.join("\n")).toContain("SIGNAL_AMBIGUOUS");
    const server = await createServer({ dbPath, pollMs: 20, onError: () => undefined });
    const { url } = await server.start({ port: 0 });
    try {
      const res = await fetch(`${url}/runs/p/signals`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "go", data: { ok: true } }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: "SIGNAL_AMBIGUOUS" });
    } finally {
      await server.stop();
    }
  });
});

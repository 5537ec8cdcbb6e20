/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, render, runWorkflow, Subflow } from "../../src/index.ts";
import { errorOf, sleepUnlessAborted, query, tempDbPath } from "../helpers.ts";

type Behaviour = { calls: string[]; failScan?: boolean; waitInScan?: boolean; started?: () => void };

/** A two-task child: `fetch` then `scan`, whose row is the child's result. */
function childWorkflow(b: Behaviour) {
  const child = createSmithers({
    input: z.object({ repo: z.string() }),
    fetched: z.object({ files: z.number() }),
    scanResult: z.object({ summary: z.string() }),
  });
  return child.smithers((ctx) => (
    <child.Workflow name="scan-child">
      <child.Task id="fetch" output={child.outputs.fetched}>
        {() => {
          b.calls.push("fetch");
          return { files: 3 };
        }}
      </child.Task>
      <child.Task id="scan" output={child.outputs.scanResult} noRetry>
        {async ({ signal }) => {
          b.calls.push("scan");
          if (b.failScan) throw new Error("scan is broken");
          if (b.waitInScan) {
            b.started?.();
            await sleepUnlessAborted(60_000, signal);
          }
          return { summary: `Scanned ${ctx.input.repo}` };
        }}
      </child.Task>
    </child.Workflow>
  ));
}

function parentWorkflow(dbPath: string, b: Behaviour, props: { retries?: number; timeoutMs?: number } = {}) {
  const scan = childWorkflow(b);
  const parent = createSmithers(
    { input: z.object({ repo: z.string() }), childSummary: z.object({ summary: z.string() }), done: z.object({ message: z.string() }) },
    { dbPath },
  );
  return parent.smithers((ctx) => {
    const summary = ctx.outputMaybe(parent.outputs.childSummary, { nodeId: "run-scan" });
    return (
      <parent.Workflow name="parent-flow">
        <Subflow id="run-scan" workflow={scan} input={{ repo: ctx.input.repo }} output={parent.outputs.childSummary} {...props} />
        <parent.Task id="report" output={parent.outputs.done}>
          {{ message: `Child said: ${summary?.summary ?? "?"}` }}
        </parent.Task>
      </parent.Workflow>
    );
  });
}

describe("<Subflow>", () => {
  test("the child's result becomes the node's output row; the child run is linked and writes its own rows", async () => {
    const dbPath = tempDbPath();
    const b: Behaviour = { calls: [] };
    const result = await runWorkflow(parentWorkflow(dbPath, b), { input: { repo: "acme/app" } });
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ message: "Child said: Scanned acme/app" });
    const childId = `${result.runId}/run-scan#0`;
    expect(await query(dbPath, "SELECT run_id, parent_run_id, status, workflow_name FROM _smithers_runs ORDER BY created_at_ms, run_id")).toEqual([
      { run_id: result.runId, parent_run_id: null, status: "finished", workflow_name: "parent-flow" },
      { run_id: childId, parent_run_id: result.runId, status: "finished", workflow_name: "scan-child" },
    ]);
    expect(await query(dbPath, "SELECT run_id, node_id, summary FROM child_summary")).toEqual([
      { run_id: result.runId, node_id: "run-scan", summary: "Scanned acme/app" },
    ]);
    expect(await query(dbPath, "SELECT run_id, node_id, files FROM fetched")).toEqual([{ run_id: childId, node_id: "fetch", files: 3 }]);
    expect(await query(dbPath, "SELECT run_id, node_id FROM scan_result")).toEqual([{ run_id: childId, node_id: "scan" }]);
    expect(b.calls).toEqual(["fetch", "scan"]);
  });

  test("a failing child fails the parent node with SUBFLOW_FAILED carrying the child's run id and error", async () => {
    const dbPath = tempDbPath();
    const b: Behaviour = { calls: [], failScan: true };
    const result = await runWorkflow(parentWorkflow(dbPath, b), { input: { repo: "r" } });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("SUBFLOW_FAILED");
    const childId = `${result.runId}/run-scan#0`;
    expect(result.error?.details.childRunId).toBe(childId);
    expect(result.error?.details.childError).toMatchObject({ code: "TASK_FAILED" });
    expect(result.error?.message).toContain("scan is broken");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes WHERE run_id = ?", result.runId)).toEqual([
      { node_id: "run-scan", state: "failed" },
    ]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = ?", childId)).toEqual([{ status: "failed" }]);
    const attempt = await query<{ error_json: string }>(
      dbPath,
      "SELECT error_json FROM _smithers_attempts WHERE run_id = ? AND node_id = 'run-scan'",
      result.runId,
    );
    expect(JSON.parse(attempt[0]!.error_json).code).toBe("SUBFLOW_FAILED");
  });

  test("a retry of the node, and a resume of the failed parent, resume the same child without re-running its finished tasks", async () => {
    const dbPath = tempDbPath();
    const b: Behaviour = { calls: [], failScan: true };
    const wf = parentWorkflow(dbPath, b, { retries: 1 });
    const first = await runWorkflow(wf, { input: { repo: "r" } });
    expect(first.status).toBe("failed");
    expect(b.calls).toEqual(["fetch", "scan", "scan"]); // the retry resumed the child: fetch ran once
    b.failScan = false;
    const second = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(second.status).toBe("finished");
    expect(b.calls).toEqual(["fetch", "scan", "scan", "scan"]);
    expect(await query(dbPath, "SELECT COUNT(*) AS n FROM _smithers_runs WHERE parent_run_id = ?", first.runId)).toEqual([{ n: 1 }]);
  });

  test("cancelling the parent cancels the child", async () => {
    const dbPath = tempDbPath();
    const controller = new AbortController();
    const b: Behaviour = { calls: [], waitInScan: true, started: () => setTimeout(() => controller.abort(), 10) };
    const result = await runWorkflow(parentWorkflow(dbPath, b), { input: { repo: "r" }, signal: controller.signal });
    expect(result.status).toBe("cancelled");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = ?", `${result.runId}/run-scan#0`)).toEqual([{ status: "cancelled" }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes WHERE run_id = ? ORDER BY node_id", `${result.runId}/run-scan#0`)).toEqual([
      { node_id: "fetch", state: "finished" },
      { node_id: "scan", state: "cancelled" },
    ]);
  });

  test("the node's timeoutMs stops the child: the node fails with TASK_TIMEOUT and the child run is cancelled", async () => {
    const dbPath = tempDbPath();
    const b: Behaviour = { calls: [], waitInScan: true };
    const result = await runWorkflow(parentWorkflow(dbPath, b, { timeoutMs: 100 }), { input: { repo: "r" } });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = ?", `${result.runId}/run-scan#0`)).toEqual([{ status: "cancelled" }]);
  });

  test("works on an in-memory database: the child shares the parent's connection", async () => {
    const b: Behaviour = { calls: [] };
    const result = await runWorkflow(parentWorkflow(":memory:", b), { input: { repo: "m" } });
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ message: "Child said: Scanned m" });
  });

  test("smithers(build, { output }) names the child's result: that output's row, not the last task's", async () => {
    const child = createSmithers({ fetched: z.object({ files: z.number() }), scanResult: z.object({ summary: z.string() }) });
    const declared = child.smithers(
      () => (
        <child.Workflow name="declared-child">
          <child.Task id="fetch" output={child.outputs.fetched}>
            {{ files: 7 }}
          </child.Task>
          <child.Task id="scan" output={child.outputs.scanResult}>
            {{ summary: "last" }}
          </child.Task>
        </child.Workflow>
      ),
      { output: child.outputs.fetched },
    );
    const parent = createSmithers({ count: z.object({ files: z.number() }) }, { dbPath: tempDbPath() });
    const wf = parent.smithers(() => (
      <parent.Workflow name="p">
        <Subflow id="sub" workflow={declared} output={parent.outputs.count} />
      </parent.Workflow>
    ));
    const result = await runWorkflow(wf);
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ files: 7 });
    expect(errorOf(() => child.smithers(() => null, { output: "nope" })).code).toBe("OUTPUT_NOT_FOUND");
  });

  test("props it cannot honour fail at render naming the prop: UNSUPPORTED_PROP, or INVALID_WORKFLOW for a value it cannot take", () => {
    const { Workflow, outputs, smithers } = createSmithers({ out: z.object({ summary: z.string() }) });
    const child = smithers(() => <Workflow name="c" />);
    const cases: [Record<string, unknown>, string, string][] = [
      [{ cache: { by: () => "k" } }, "cache", "UNSUPPORTED_PROP"],
      [{ needs: { a: "b" } }, "needs", "UNSUPPORTED_PROP"],
      [{ heartbeatTimeoutMs: 1000 }, "heartbeatTimeoutMs", "UNSUPPORTED_PROP"],
      [{ mode: "inline" }, "mode", "INVALID_WORKFLOW"],
      [{ workflow: { path: "child.tsx" } }, "workflow", "INVALID_WORKFLOW"],
    ];
    for (const [extra, prop, code] of cases) {
      const error = errorOf(() => render(<Workflow name="p">{<Subflow id="s" workflow={child} output={outputs.out} {...extra} />}</Workflow>));
      expect(error.code).toBe(code);
      expect(error.details?.prop).toBe(prop);
      expect(error.message).toContain(prop);
    }
    expect(errorOf(() => render(<Workflow name="p">{<Subflow id="s" workflow={child} output={undefined as never} />}</Workflow>)).code).toBe("MISSING_OUTPUT");
  });
});

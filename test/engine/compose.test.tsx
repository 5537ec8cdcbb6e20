/** @jsxImportSource smithers-workflows */
/** <TryCatchFinally> and <Saga> in the engine: retries, resume after a crash or a failed run, frames. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decodeFrameXml, encodeFrameXml, type XmlElement } from "../../src/codec/index.ts";
import { openSmithersDb } from "../../src/db/index.ts";
import { readFrame } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow, Saga, TryCatchFinally, type SmithersError } from "../../src/index.ts";
import { execute, query, tempDbPath } from "../helpers.ts";

/** A kit whose tasks record the order their bodies ran in; a task listed in `failing` throws while it is listed. */
function kit() {
  const dbPath = tempDbPath();
  const calls: string[] = [];
  const failing = new Set<string>();
  const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ note: z.string() }) }, { dbPath });
  const step = (id: string, props: { retries?: number; continueOnFail?: boolean; note?: () => string } = {}) => (
    <Task id={id} output={outputs.step} retries={props.retries ?? 0} continueOnFail={props.continueOnFail} retryPolicy={{ initialDelayMs: 0 }}>
      {() => {
        calls.push(id);
        if (failing.has(id)) throw new Error(`${id} broke`);
        return { note: props.note?.() ?? id };
      }}
    </Task>
  );
  return { dbPath, calls, failing, Workflow, smithers, step };
}

/** Rewinds `nodeId` to how a kill -9 during its attempt leaves it (running, no row), with the run's owner dead. */
async function crashDuring(dbPath: string, nodeId: string): Promise<void> {
  await execute(dbPath, `UPDATE _smithers_runs SET status = 'running', runtime_owner_id = 'elsewhere:999999:x', heartbeat_at_ms = 0, finished_at_ms = NULL`);
  await execute(dbPath, `UPDATE _smithers_nodes SET state = 'running' WHERE node_id = ?`, nodeId);
  await execute(dbPath, `UPDATE _smithers_attempts SET state = 'running', finished_at_ms = NULL WHERE node_id = ?`, nodeId);
  await execute(dbPath, `DELETE FROM step WHERE node_id = ?`, nodeId);
}

/** Forgets that `nodeIds` ever started: what a crash before their first attempt leaves. */
async function neverStarted(dbPath: string, ...nodeIds: string[]): Promise<void> {
  for (const table of ["_smithers_nodes", "_smithers_attempts", "step"])
    for (const id of nodeIds) await execute(dbPath, `DELETE FROM ${table} WHERE node_id = ?`, id);
}

const attempts = async (dbPath: string, nodeId: string) =>
  (await query<{ attempt: number; state: string }>(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE node_id = ? ORDER BY attempt", nodeId)).map(
    (a) => `${a.attempt}:${a.state}`,
  );

describe("<TryCatchFinally> in the engine", () => {
  test("a task with retries is caught only after its last attempt failed; its error is stored on its node row", async () => {
    const { dbPath, calls, failing, Workflow, smithers, step } = kit();
    failing.add("flaky");
    const wf = smithers(() => (
      <Workflow name="retried">
        <TryCatchFinally try={step("flaky", { retries: 2 })} catch={step("recover")} />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(calls).toEqual(["flaky", "flaky", "flaky", "recover"]);
    expect(await attempts(dbPath, "flaky")).toEqual(["1:failed", "2:failed", "3:failed"]);
    const [node] = await query<{ state: string; error_json: string }>(dbPath, "SELECT state, error_json FROM _smithers_nodes WHERE node_id = 'flaky'");
    expect(node?.state).toBe("failed");
    expect(JSON.parse(node!.error_json)).toMatchObject({ code: "TASK_FAILED", message: 'Task "flaky" failed: flaky broke', nodeId: "flaky" });
  });

  test("a continueOnFail task failing in try is no failure of the block: catch does not run, finally does", async () => {
    const { calls, failing, Workflow, smithers, step } = kit();
    failing.add("optional");
    let catchCalled = false;
    const wf = smithers(() => (
      <Workflow name="tolerant">
        <TryCatchFinally
          try={step("optional", { continueOnFail: true })}
          catch={() => {
            catchCalled = true;
            return step("recover");
          }}
          finally={step("cleanup")}
        />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(calls).toEqual(["optional", "cleanup"]);
    expect(catchCalled).toBe(false);
  });

  test("after a crash in the catch, resume runs only the interrupted task: the caught failure does not fail the run and the catch function gets the same error", async () => {
    const { dbPath, calls, failing, Workflow, smithers, step } = kit();
    failing.add("deploy");
    const seen: string[] = [];
    const wf = smithers(() => (
      <Workflow name="resumed-catch">
        <TryCatchFinally
          try={step("deploy")}
          catch={(error: SmithersError) => {
            seen.push(`${error.code} ${error.message}`);
            return step("recover", { note: () => error.message });
          }}
          finally={step("cleanup")}
        />
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(first.status).toBe("finished");
    await crashDuring(dbPath, "recover");
    await neverStarted(dbPath, "cleanup");
    calls.length = 0;
    seen.length = 0;
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("finished");
    expect(calls).toEqual(["recover", "cleanup"]);
    expect(new Set(seen)).toEqual(new Set(['TASK_FAILED Task "deploy" failed: deploy broke']));
    expect(await attempts(dbPath, "deploy")).toEqual(["1:failed"]);
    expect(await attempts(dbPath, "recover")).toEqual(["1:abandoned", "2:finished"]);
    expect(await query(dbPath, "SELECT node_id, note FROM step ORDER BY node_id")).toEqual([
      { node_id: "cleanup", note: "cleanup" },
      { node_id: "recover", note: 'Task "deploy" failed: deploy broke' },
    ]);
  });

  test("frames show the boundary's sections, the catch once it is mounted, and every frame rebuilds", async () => {
    const { dbPath, failing, Workflow, smithers, step } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="framed">
        <TryCatchFinally id="guard" try={step("deploy")} catch={() => step("recover")} catchErrors={["TASK_FAILED"]} finally={step("cleanup")} />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    const db = openSmithersDb(dbPath);
    const [{ n }] = (await query<{ n: number }>(dbPath, "SELECT MAX(frame_no) AS n FROM _smithers_frames")) as [{ n: number }];
    const trees: XmlElement[] = [];
    for (let i = 0; i <= n; i++) trees.push(await readFrame(db, "r", i));
    const shape = (el: XmlElement): string =>
      el.tag === "task" ? `${el.props.id}=${el.props.state}` : `${el.tag}${el.props.id ? `#${el.props.id}` : ""}(${el.children.map(shape).join(" ")})`;
    expect(shape(trees[0]!)).toBe("workflow(try-catch-finally#guard(try(deploy=running) finally(cleanup=pending)))");
    expect(shape(trees[n]!)).toBe("workflow(try-catch-finally#guard(try(deploy=failed) catch(recover=finished) finally(cleanup=finished)))");
    expect(trees[n]!.children[0]!.props.catchErrors).toEqual(["TASK_FAILED"]);
    expect(decodeFrameXml(encodeFrameXml(trees[n]!))).toEqual(trees[n]!);
  });
});

describe("<Saga> in the engine", () => {
  const threeSteps = (step: ReturnType<typeof kit>["step"]) => ["1", "2", "3"].map((i) => ({ id: i, action: step(`a${i}`), compensation: step(`c${i}`) }));

  test("a failed compensation fails the run with SAGA_COMPENSATION_FAILED and runs no earlier one; resumed once fixed, it unwinds the rest without running any action again", async () => {
    const { dbPath, calls, failing, Workflow, smithers, step } = kit();
    failing.add("a3");
    failing.add("c2");
    const wf = smithers(() => (
      <Workflow name="stuck-undo">
        <Saga id="deploy" steps={threeSteps(step)} />
        {step("after")}
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(first.status).toBe("failed");
    expect(first.error?.code).toBe("SAGA_COMPENSATION_FAILED");
    expect(first.error?.details).toMatchObject({ sagaId: "deploy", stepId: "2", nodeId: "c2" });
    expect(first.error?.message).toContain('the compensation of step "2" failed (TASK_FAILED: Task "c2" failed: c2 broke)');
    expect(calls).toEqual(["a1", "a2", "a3", "c2"]);
    expect(JSON.parse((await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_runs"))[0]!.error_json).code).toBe(
      "SAGA_COMPENSATION_FAILED",
    );

    // The user fixes the compensation (and, as it happens, the action) and resumes the failed run.
    failing.clear();
    calls.length = 0;
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("finished");
    expect(calls).toEqual(["c2", "c1", "after"]);
    expect(await attempts(dbPath, "c2")).toEqual(["1:failed", "2:finished"]);
    expect(await attempts(dbPath, "a3")).toEqual(["1:failed"]);
    expect(await query(dbPath, "SELECT node_id FROM step WHERE node_id LIKE 'c%' ORDER BY node_id")).toEqual([{ node_id: "c1" }, { node_id: "c2" }]);
  });

  test("after a crash during a compensation, resume retries only that one and goes on unwinding; nothing done runs twice", async () => {
    const { dbPath, calls, failing, Workflow, smithers, step } = kit();
    failing.add("a3");
    const wf = smithers(() => (
      <Workflow name="crash-undo">
        <Saga id="deploy" onFailure="compensate-and-fail" steps={threeSteps(step)} />
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, runId: "r" });
    expect([first.status, first.error?.nodeId]).toEqual(["failed", "a3"]);
    expect(calls).toEqual(["a1", "a2", "a3", "c2", "c1"]);
    await crashDuring(dbPath, "c2");
    await neverStarted(dbPath, "c1");
    calls.length = 0;
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect([resumed.status, resumed.error?.code, resumed.error?.nodeId]).toEqual(["failed", "TASK_FAILED", "a3"]);
    expect(calls).toEqual(["c2", "c1"]);
    expect(await attempts(dbPath, "c2")).toEqual(["1:abandoned", "2:finished"]);
    expect(await Promise.all(["a1", "a2", "a3", "c1"].map((id) => attempts(dbPath, id)))).toEqual([
      ["1:finished"],
      ["1:finished"],
      ["1:failed"],
      ["1:finished"],
    ]);
  });

  test('resuming a "compensate-and-fail" saga that already unwound runs nothing and fails with SAGA_FAILED', async () => {
    const { calls, failing, Workflow, smithers, step } = kit();
    failing.add("a2");
    const wf = smithers(() => (
      <Workflow name="unwound">
        <Saga id="deploy" onFailure="compensate-and-fail" steps={threeSteps(step)} />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).error?.code).toBe("TASK_FAILED");
    failing.clear();
    calls.length = 0;
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect([resumed.status, resumed.error?.code, calls]).toEqual(["failed", "SAGA_FAILED", []]);
  });

  test("a saga's failure is caught by a boundary around it, by its code", async () => {
    const { dbPath, calls, failing, Workflow, smithers, step } = kit();
    failing.add("a3");
    failing.add("c1");
    const wf = smithers(() => (
      <Workflow name="guarded-saga">
        <TryCatchFinally
          try={<Saga id="deploy" steps={threeSteps(step)} />}
          catch={(error: SmithersError) => step("page", { note: () => `${error.code} ${String(error.nodeId)}` })}
          catchErrors={["SAGA_COMPENSATION_FAILED"]}
        />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(calls).toEqual(["a1", "a2", "a3", "c2", "c1", "page"]);
    expect(await query(dbPath, "SELECT note FROM step WHERE node_id = 'page'")).toEqual([{ note: "SAGA_COMPENSATION_FAILED c1" }]);
  });

  test("frames show each step with its action and compensation", async () => {
    const { dbPath, failing, Workflow, smithers, step } = kit();
    failing.add("a2");
    const wf = smithers(() => (
      <Workflow name="framed">
        <Saga id="deploy" steps={[{ id: "1", label: "first", action: step("a1"), compensation: step("c1") }, ...threeSteps(step).slice(1, 2)]} />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    const [{ n }] = (await query<{ n: number }>(dbPath, "SELECT MAX(frame_no) AS n FROM _smithers_frames")) as [{ n: number }];
    const tree = await readFrame(openSmithersDb(dbPath), "r", n);
    const saga = tree.children[0]!;
    expect([saga.tag, saga.props]).toEqual(["saga", { id: "deploy", onFailure: "compensate" }]);
    expect(saga.children.map((s) => [s.props, s.children.map((c) => `${c.tag}:${c.children.map((t) => `${t.props.id}=${t.props.state}`).join()}`)])).toEqual([
      [{ id: "1", label: "first" }, ["action:a1=finished", "compensation:c1=finished"]],
      [{ id: "2" }, ["action:a2=failed", "compensation:c2=pending"]],
    ]);
  });
});

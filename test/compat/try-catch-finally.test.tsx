/** @jsxImportSource smithers-workflows */
/**
 * <TryCatchFinally> as smithers-orchestrator documents it: a workflow-scoped error boundary whose
 * catch may be a function of the error, whose catchErrors narrows what it catches (the rest goes
 * on to an outer boundary) and whose finally always runs, also when the catch fails.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, TryCatchFinally, type TaskRunContext } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

const schemas = { step: z.object({ note: z.string() }) };

/** A kit whose tasks record, in `calls`, the order their bodies ran in. */
function kit() {
  const dbPath = tempDbPath();
  const calls: string[] = [];
  const { Workflow, Task, Sequence, smithers, outputs } = createSmithers(schemas, { dbPath });
  const step = (id: string, behave: (t: TaskRunContext) => { note: string } | Promise<{ note: string }> = () => ({ note: id })) => (
    <Task id={id} output={outputs.step} retries={0}>
      {(t: TaskRunContext) => {
        calls.push(id);
        return behave(t);
      }}
    </Task>
  );
  const boom = (id: string) =>
    step(id, () => {
      throw new Error(`${id} broke`);
    });
  return { dbPath, calls, Workflow, Task, Sequence, smithers, outputs, step, boom };
}

const states = (dbPath: string) => sql(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id");

describe("<TryCatchFinally> (smithers-orchestrator docs)", () => {
  test("a task failing in try runs catch in its place and finally after it; the run finishes", async () => {
    const { dbPath, calls, Workflow, Sequence, smithers, step, boom } = kit();
    const wf = smithers(() => (
      <Workflow name="safe-deploy">
        <TryCatchFinally
          try={
            <Sequence>
              {step("build")}
              {boom("deploy")}
            </Sequence>
          }
          catch={step("recover")}
          finally={step("cleanup")}
        />
        {step("after")}
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["build", "deploy", "recover", "cleanup", "after"]);
    expect(states(dbPath)).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "build", state: "finished" },
      { node_id: "cleanup", state: "finished" },
      { node_id: "deploy", state: "failed" },
      { node_id: "recover", state: "finished" },
    ]);
    expect(sql(dbPath, "SELECT node_id FROM step ORDER BY node_id")).toEqual(["after", "build", "cleanup", "recover"].map((node_id) => ({ node_id })));
  });

  test("a catch function is called with the failure: its code and summary reach the catch's task", async () => {
    const { dbPath, Workflow, Task, smithers, outputs, boom } = kit();
    const wf = smithers(() => (
      <Workflow name="safe-deploy">
        <TryCatchFinally
          try={boom("deploy")}
          catch={(error) => (
            <Task id="recover" output={outputs.step}>
              {{ note: `Recover from ${error.code} at ${error.nodeId}: ${error.summary}` }}
            </Task>
          )}
        />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(sql(dbPath, "SELECT note FROM step WHERE node_id = 'recover'")).toEqual([
      { note: 'Recover from TASK_FAILED at deploy: Task "deploy" failed: deploy broke' },
    ]);
  });

  test("catchErrors catches only its codes: another failure runs finally, then goes on up to an outer boundary", async () => {
    const { dbPath, calls, Workflow, Task, smithers, outputs, step } = kit();
    const slow = (
      <Task id="slow" output={outputs.step} timeoutMs={20} retries={0}>
        {async (t: TaskRunContext) => {
          calls.push("slow");
          await new Promise((resolve) => t.signal.addEventListener("abort", resolve, { once: true }));
          return { note: "late" };
        }}
      </Task>
    );
    const wf = smithers(() => (
      <Workflow name="narrow">
        <TryCatchFinally
          try={<TryCatchFinally try={slow} catch={step("inner-catch")} catchErrors={["TASK_FAILED"]} finally={step("inner-finally")} />}
          catch={(error) => step("outer-catch", () => ({ note: error.code }))}
          catchErrors={["TASK_TIMEOUT"]}
        />
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["slow", "inner-finally", "outer-catch"]);
    expect(sql(dbPath, "SELECT note FROM step WHERE node_id = 'outer-catch'")).toEqual([{ note: "TASK_TIMEOUT" }]);
  });

  test("finally runs even when catch fails, and the run then fails with the catch's error", async () => {
    const { dbPath, calls, Workflow, smithers, step, boom } = kit();
    const wf = smithers(() => (
      <Workflow name="broken-catch">
        <TryCatchFinally try={boom("deploy")} catch={boom("recover")} finally={step("cleanup")} />
        {step("after")}
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_FAILED");
    expect(result.error?.nodeId).toBe("recover");
    expect(calls).toEqual(["deploy", "recover", "cleanup"]);
    expect(sql(dbPath, "SELECT node_id FROM step")).toEqual([{ node_id: "cleanup" }]);
  });
});

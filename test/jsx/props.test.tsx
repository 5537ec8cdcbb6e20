/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { Branch, createSmithers, Parallel, render, runWorkflow, Sequence } from "../../src/index.ts";
import { errorOf, sql, tempDbPath } from "../helpers.ts";

const { Workflow, Task, outputs, smithers } = createSmithers({ out: z.object({ n: z.number() }) });
const spread = (props: Record<string, unknown>) => props as object;

describe("checkProps", () => {
  test("a prop no component takes fails the render with UNSUPPORTED_PROP naming it and listing what the component takes", () => {
    const error = errorOf(() =>
      render(
        <Workflow name="w">
          <Task id="t" output={outputs.out} {...spread({ retires: 2 })}>
            {{ n: 1 }}
          </Task>
        </Workflow>,
      ),
    );
    expect(error.code).toBe("UNSUPPORTED_PROP");
    expect(error.details).toMatchObject({ component: "Task", prop: "retires", peerOnly: false, nodeId: "t" });
    expect(error.message).toContain('<Task id="t"> has no prop "retires"; it takes id, output');
  });

  test("a smithers-orchestrator prop not supported yet says so and points at the README's differences", () => {
    const error = errorOf(() =>
      render(
        <Workflow name="w">
          <Task id="t" output={outputs.out} {...spread({ fork: "plan" })}>
            {{ n: 1 }}
          </Task>
        </Workflow>,
      ),
    );
    expect(error.code).toBe("UNSUPPORTED_PROP");
    expect(error.details).toMatchObject({ prop: "fork", peerOnly: true });
    expect(error.message).toContain("docs/migrating-from-smithers-orchestrator.md");
  });

  test("every structural component checks its props: Workflow, Sequence, Parallel, Loop, Branch", () => {
    const task = (
      <Task id="t" output={outputs.out}>
        {{ n: 1 }}
      </Task>
    );
    const trees = [
      <Workflow name="w" {...spread({ maxConcurrency: 2 })}>
        {task}
      </Workflow>,
      <Workflow name="w">
        <Sequence {...spread({ failurePolicy: "quarantine" })}>{task}</Sequence>
      </Workflow>,
      <Workflow name="w">
        <Parallel {...spread({ priority: 2 })}>{task}</Parallel>
      </Workflow>,
      <Workflow name="w">
        <Branch if={true} then={task} {...spread({ otherwise: task })} />
      </Workflow>,
    ];
    expect(trees.map((tree) => errorOf(() => render(tree)).details?.prop)).toEqual(["maxConcurrency", "failurePolicy", "priority", "otherwise"]);
  });

  test("a prop set to undefined counts as absent", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="t" output={outputs.out} {...spread({ fork: undefined })}>
          {{ n: 1 }}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks.map((t) => t.nodeId)).toEqual(["t"]);
  });

  test("the run fails before any task runs, with the code on the run row", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="first" output={kit.outputs.out}>
          {{ n: 1 }}
        </kit.Task>
        <kit.Task id="second" output={kit.outputs.out} {...spread({ hijack: true })}>
          {{ n: 2 }}
        </kit.Task>
      </kit.Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("UNSUPPORTED_PROP");
    expect(sql(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
    expect(sql<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_runs")[0]?.error_json).toContain("UNSUPPORTED_PROP");
  });
});

describe("Branch", () => {
  test("skipIf mounts neither branch", () => {
    const wf = smithers(() => (
      <Workflow name="w">
        <Branch
          if={true}
          skipIf
          then={
            <Task id="a" output={outputs.out}>
              {{ n: 1 }}
            </Task>
          }
        />
      </Workflow>
    ));
    expect(render(wf.build({} as never)).tasks).toEqual([]);
  });
});

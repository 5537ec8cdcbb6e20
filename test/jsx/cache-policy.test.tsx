/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { Approval, render, scriptedAgent, Subflow } from "../../src/index.ts";
import { Task, Workflow } from "../../src/jsx/index.ts";
import { errorOf } from "../helpers.ts";

const out = z.object({ n: z.number() });
const agent = scriptedAgent([]);
const loose = (value: unknown) => value as never;

describe("Task cache", () => {
  test("render keeps the policy on the plan task, with scope workflow by default and an infinite ttl as none", () => {
    const by = () => "k";
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out} cache={{ by, version: "v2", key: "shared", ttlMs: Infinity }}>
          {() => ({ n: 1 })}
        </Task>
        <Task id="b" output={out} cache={{ scope: "global", ttlMs: 0 }}>
          {{ n: 1 }}
        </Task>
        <Task id="c" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks.map((t) => t.cache)).toEqual([
      { by, version: "v2", key: "shared", ttlMs: undefined, scope: "workflow" },
      { by: undefined, version: undefined, key: undefined, ttlMs: 0, scope: "global" },
      undefined,
    ]);
  });

  test("a policy it cannot honour fails the render with INVALID_WORKFLOW naming the task and what is wrong", () => {
    const cases: [unknown, string][] = [
      ["yes", "must be an object"],
      [{ by: "repo" }, "by must be a function"],
      [{ version: { major: 1 } }, "version must be a string or a finite number"],
      [{ key: "" }, "key must be a non-empty string"],
      [{ ttlMs: -1 }, "ttlMs must be a number"],
      [{ scope: "session" }, 'scope must be "run", "workflow" or "global"'],
      [{ by: () => 1, invalidateOn: ["x"] }, 'has no field "invalidateOn"'],
    ];
    for (const [cache, message] of cases) {
      const error = errorOf(() =>
        render(
          <Workflow name="w">
            <Task id="t" output={out} cache={loose(cache)}>
              {{ n: 1 }}
            </Task>
          </Workflow>,
        ),
      );
      expect([error.code, error.details?.nodeId, error.details?.prop]).toEqual(["INVALID_WORKFLOW", "t", "cache"]);
      expect(error.message).toContain(message);
    }
  });

  test("<Workflow cache> gives agent tasks without their own policy one keyed by prompt and iteration; compute, static and own policies are left as they are", () => {
    const own = { by: () => "mine", scope: "run" as const };
    const plan = render(
      <Workflow name="w" cache>
        <Task id="ask" output={out} agent={agent}>
          Summarize the repo
        </Task>
        <Task id="compute" output={out}>
          {() => ({ n: 1 })}
        </Task>
        <Task id="static" output={out}>
          {{ n: 1 }}
        </Task>
        <Task id="own" output={out} agent={agent} cache={own}>
          Another prompt
        </Task>
      </Workflow>,
    );
    const [ask, compute, fixed, mine] = plan.tasks;
    expect(ask?.cache?.scope).toBe("workflow");
    expect(ask?.cache?.by?.(loose({}))).toEqual({ prompt: "Summarize the repo", iteration: 0 });
    expect([compute?.cache, fixed?.cache]).toEqual([undefined, undefined]);
    expect(mine?.cache).toMatchObject({ by: own.by, scope: "run" });
    expect(
      render(
        <Workflow name="w">
          {
            <Task id="ask" output={out} agent={agent}>
              {"p"}
            </Task>
          }
        </Workflow>,
      ).tasks[0]?.cache,
    ).toBeUndefined();
  });

  test("<Workflow cache> takes only true or false", () => {
    const error = errorOf(() => render(<Workflow name="w" cache={loose({ ttlMs: 5 })} />));
    expect([error.code, error.details?.prop]).toEqual(["INVALID_WORKFLOW", "cache"]);
  });

  test("<Approval> and <Subflow> still refuse cache as a smithers-orchestrator prop not supported yet", () => {
    const approval = errorOf(() =>
      render(<Workflow name="w">{<Approval id="a" output={out} request={{ title: "ok?" }} {...({ cache: { by: () => 1 } } as object)} />}</Workflow>),
    );
    expect([approval.code, approval.details?.prop, approval.details?.peerOnly]).toEqual(["UNSUPPORTED_PROP", "cache", true]);
    const child = { kind: "smithers.workflow" };
    const subflow = errorOf(() =>
      render(<Workflow name="w">{<Subflow id="s" workflow={child} output={out} {...({ cache: { by: () => 1 } } as object)} />}</Workflow>),
    );
    expect([subflow.code, subflow.details?.prop, subflow.details?.peerOnly]).toEqual(["UNSUPPORTED_PROP", "cache", true]);
  });
});

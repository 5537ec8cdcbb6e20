/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { errorJsonText, errorToJson, describeThrown, toSafeJson, ERROR_JSON_LIMITS } from "../../src/errors/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

test("errorJsonText stays within totalChars for an error whose fields escape to 6x", () => {
  const e = new Error("m") as Error & Record<string, string>;
  for (let i = 0; i < 50; i++) e[`f${i}`] = "\u0001".repeat(2000);
  const text = errorJsonText(e);
  expect(text.length).toBeLessThanOrEqual(ERROR_JSON_LIMITS.totalChars);
});

const revoked = () => {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
};
const protoTrap = () =>
  new Proxy(
    {},
    {
      getPrototypeOf() {
        throw new Error("trap");
      },
    },
  );
const badFn = () =>
  Object.assign(() => 1, {
    toString() {
      throw new Error("no toString");
    },
  });

for (const [name, make] of [
  ["a revoked proxy", revoked],
  ["a proxy whose getPrototypeOf throws", protoTrap],
  ["a function whose toString throws", badFn],
] as const) {
  test(`the serializers do not throw on ${name}`, () => {
    expect(() => toSafeJson({ v: make() })).not.toThrow();
    expect(() => errorToJson(make())).not.toThrow();
    expect(() => describeThrown(make())).not.toThrow();
  });
  test(`a task that throws ${name} ends the run failed, not running`, async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={0}>
          {async () => {
            throw make();
          }}
        </Task>
      </Workflow>
    ));
    let status: string;
    try {
      status = (await runWorkflow(wf, { input: {} })).status;
    } catch (e) {
      status = `rejected: ${String((e as Error).message)}`;
    }
    const run = sql<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs")[0]!;
    const att = sql<{ state: string }>(dbPath, "SELECT state FROM _smithers_attempts");
    expect(status).toBe("failed");
    expect(run.status).toBe("failed");
    expect(att).toEqual([{ state: "failed" }]);
  });
}

/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { inspectRun, loadWorkflowFile } from "../../src/engine/index.ts";
import { openSmithersDb } from "../../src/db/index.ts";
import { query, tempDbPath } from "../helpers.ts";

const FIXTURE = resolve(import.meta.dir, "../fixtures/throws.tsx");
/** `file:line:` of the fixture's `throw`, found by its text so the fixture may move lines. */
const THROW_AT = `${FIXTURE}:${
  readFileSync(FIXTURE, "utf8")
    .split("\n")
    .findIndex((l) => l.includes("// THROWS HERE")) + 1
}:`;
const SRC = join(resolve(import.meta.dir, "../.."), "src") + "/";

type StoredError = { code?: string; stack?: string[]; cause?: StoredError };

describe("the stored error of a task that throws", () => {
  test("the attempt's error_json keeps the author's frames, starting at the throw, with the internal frames counted", async () => {
    const dbPath = tempDbPath();
    const result = await runWorkflow(await loadWorkflowFile(FIXTURE), { input: {}, dbPath });
    expect(result.status).toBe("failed");
    const [attempt] = await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts");
    const stored = JSON.parse(attempt!.error_json) as StoredError;
    // The TASK_FAILED the engine wraps the throw in has no line of the author's; the thrown Error does.
    expect(stored.code).toBe("TASK_FAILED");
    expect(stored.stack).toBeUndefined();
    const stack = stored.cause!.stack!;
    expect(stack[0]).toStartWith(`at parseTotal (${THROW_AT}`);
    expect(stack[1]).toContain(FIXTURE); // the task body that called it
    expect(stack.at(-1)).toMatch(/^… \d+ internal frames?$/);
    expect(stack.some((f) => f.includes(SRC) || f.includes("node_modules"))).toBe(false);
  });

  test("the run's and the node's error and the events carry no stack (they hold the summary)", async () => {
    const dbPath = tempDbPath();
    await runWorkflow(await loadWorkflowFile(FIXTURE), { input: {}, dbPath });
    const stored = [
      ...(await query<{ t: string }>(dbPath, "SELECT error_json AS t FROM _smithers_runs")),
      ...(await query<{ t: string }>(dbPath, "SELECT error_json AS t FROM _smithers_nodes")),
      ...(await query<{ t: string }>(dbPath, "SELECT payload_json AS t FROM _smithers_events WHERE type IN ('NodeFailed', 'RunFailed')")),
    ].map((r) => r.t);
    expect(stored.length).toBe(4); // the run, the node, NodeFailed, RunFailed
    for (const text of stored) expect(text).not.toContain('"stack"');
  });

  test("inspectRun lists the failed attempt with that stack", async () => {
    const dbPath = tempDbPath();
    const { runId } = await runWorkflow(await loadWorkflowFile(FIXTURE), { input: {}, dbPath });
    const db = openSmithersDb(dbPath);
    try {
      const report = await inspectRun(db, runId);
      const [failed] = report.nodes.find((n) => n.nodeId === "total")!.failedAttempts;
      expect([failed?.attempt, failed?.error.code]).toEqual([1, "TASK_FAILED"]);
      expect(failed?.error.stack?.[0]).toStartWith(`at parseTotal (${THROW_AT}`);
    } finally {
      await db.close();
    }
  });

  test("an output that fails its schema (an error the engine makes) stores no stack: no line is invented", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="bad-output">
        <Task id="t" output={outputs.out} retries={0}>
          {async () => ({ n: "not a number" }) as unknown as { n: number }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    const [attempt] = await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts");
    expect(JSON.parse(attempt!.error_json).code).toBe("INVALID_OUTPUT");
    expect(attempt!.error_json).not.toContain('"stack"');
  });

  test("each retry's attempt keeps its own stack, and inspect lists them oldest first", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="flaky">
        <Task id="t" output={outputs.out} retries={1} retryPolicy={{ initialDelayMs: 0 }}>
          {async () => {
            calls++;
            throw new Error(`try ${calls}`);
          }}
        </Task>
      </Workflow>
    ));
    const { runId } = await runWorkflow(wf, { input: {} });
    const db = openSmithersDb(dbPath);
    try {
      const [node] = (await inspectRun(db, runId)).nodes;
      expect(node!.failedAttempts.map((f) => [f.attempt, f.error.message, f.error.stack?.[0]?.includes("error-stack.test.tsx:")])).toEqual([
        [1, 'Task "t" failed: try 1', true],
        [2, 'Task "t" failed: try 2', true],
      ]);
    } finally {
      await db.close();
    }
  });
});

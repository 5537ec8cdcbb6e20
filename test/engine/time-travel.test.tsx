/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { z } from "zod";
import { ToolLoopAgent } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { approvalDecisionSchema, createSmithers, defineTool, runWorkflow } from "../../src/index.ts";
import { forkRun, readFrame, rewindRun, runAtFrame } from "../../src/engine/index.ts";
import type { SmithersError } from "../../src/errors/index.ts";
import { execute, query, tempDbPath, tempDir } from "../helpers.ts";
import type { XmlElement } from "../../src/codec/index.ts";

/** Every row of every table that has a run_id column, for one run: what "byte-identical" compares. */
async function rowsOf(dbPath: string, runId: string): Promise<string> {
  const tables = dbPath.startsWith("postgres")
    ? (
        await query<{ name: string }>(
          dbPath,
          "SELECT table_name AS name FROM information_schema.columns WHERE column_name = 'run_id' AND table_schema = current_schema()",
        )
      ).map((r) => r.name)
    : (
        await query<{ name: string }>(dbPath, "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND p.name = 'run_id'")
      ).map((r) => r.name);
  const out: Record<string, unknown[]> = {};
  for (const t of tables.sort()) out[t] = (await query(dbPath, `SELECT * FROM "${t}" WHERE run_id = ?`, runId)).map((r) => JSON.stringify(r)).sort();
  return JSON.stringify(out);
}

function finishedIn(tree: XmlElement, into = new Set<string>()): Set<string> {
  if (tree.tag === "task" && tree.props.state === "finished") into.add(String(tree.props.id));
  for (const c of tree.children) finishedIn(c, into);
  return into;
}

/** Ten tasks run one at a time; t5…t9 each depend on t0…t4. `calls` counts executions. */
function tenTasks(dbPath: string) {
  const calls: string[] = [];
  const kit = createSmithers({ input: z.object({ base: z.number() }), out: z.object({ v: z.number() }) }, { dbPath });
  const wf = kit.smithers((ctx) => (
    <kit.Workflow name="ten">
      <kit.Parallel maxConcurrency={1}>
        {Array.from({ length: 10 }, (_, i) => (
          <kit.Task key={i} id={`t${i}`} output={kit.outputs.out} dependsOn={i >= 5 ? [`t${i - 5}`] : undefined}>
            {() => {
              calls.push(`t${i}`);
              return { v: ctx.input.base + i };
            }}
          </kit.Task>
        ))}
      </kit.Parallel>
    </kit.Workflow>
  ));
  return { wf, calls };
}

describe("fork", () => {
  test("a fork at frame 5 with one node reset runs exactly that node, what depends on it and what was not done; the parent is untouched", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = tenTasks(dbPath);
    expect((await runWorkflow(wf, { runId: "parent", input: { base: 100 } })).status).toBe("finished");
    const db = wf.dbFor();
    const done5 = finishedIn(await readFrame(db, "parent", 5));
    expect(done5.has("t1")).toBe(true); // the reset node was done at frame 5
    const before = await rowsOf(dbPath, "parent");
    calls.length = 0;
    const fork = await forkRun(wf, { runId: "parent", frame: 5, resetNodes: ["t1"], newRunId: "child" });
    expect(fork.reset.sort()).toEqual(["t1", "t6"]);
    expect(calls).toEqual([]); // a fork without running executes nothing
    const result = await runWorkflow(wf, { runId: "child", resume: true });
    expect(result.status).toBe("finished");
    const expected = Array.from({ length: 10 }, (_, i) => `t${i}`).filter((id) => !done5.has(id) || id === "t1" || id === "t6");
    expect(calls.sort()).toEqual(expected.sort());
    expect(await rowsOf(dbPath, "parent")).toBe(before);
    const [row] = await query<{ parent_run_id: string; forked_from_frame: number; status: string; started: number | null; finished: number | null }>(
      dbPath,
      "SELECT parent_run_id, forked_from_frame, status, started_at_ms AS started, finished_at_ms AS finished FROM _smithers_runs WHERE run_id = 'child'",
    );
    expect([row?.parent_run_id, Number(row?.forked_from_frame), row?.status]).toEqual(["parent", 5, "finished"]);
    // The fork started when it was first resumed: it has a run time like any run.
    expect(Number(row?.started)).toBeGreaterThan(0);
    expect(Number(row?.finished)).toBeGreaterThanOrEqual(Number(row?.started));
    const outputs = await query<{ node_id: string; v: number }>(dbPath, "SELECT node_id, v FROM out WHERE run_id = 'child' ORDER BY node_id");
    expect(outputs.map((r) => Number(r.v))).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
  });

  test("a fork with another input re-runs with it; a bad input, frame or node is refused and nothing is written", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = tenTasks(dbPath);
    await runWorkflow(wf, { runId: "p", input: { base: 0 } });
    const last = Number((await query<{ n: number }>(dbPath, "SELECT max(frame_no) AS n FROM _smithers_frames WHERE run_id = 'p'"))[0]?.n);
    const runsBefore = await query(dbPath, "SELECT run_id FROM _smithers_runs");
    const code = async (p: Promise<unknown>) => {
      try {
        await p;
        return "none";
      } catch (error) {
        return (error as SmithersError).code;
      }
    };
    expect(await code(forkRun(wf, { runId: "nope", frame: 0 }))).toBe("RUN_NOT_FOUND");
    expect(await code(forkRun(wf, { runId: "p", frame: last + 1 }))).toBe("FRAME_NOT_FOUND");
    expect(await code(forkRun(wf, { runId: "p", frame: -1 }))).toBe("FRAME_NOT_FOUND");
    expect(await code(forkRun(wf, { runId: "p", frame: 1, resetNodes: ["zzz"] }))).toBe("NODE_NOT_FOUND");
    expect(await code(forkRun(wf, { runId: "p", frame: 1, input: { base: "x" } }))).toBe("INVALID_INPUT");
    expect(await code(forkRun(wf, { runId: "p", frame: 1, newRunId: "p" }))).toBe("RUN_EXISTS");
    expect(await query(dbPath, "SELECT run_id FROM _smithers_runs")).toEqual(runsBefore);
    // At frame 0 nothing was done: a new input re-runs everything with it.
    calls.length = 0;
    const fork = await forkRun(wf, { runId: "p", frame: 0, input: { base: 50 }, newRunId: "q" });
    expect(fork.copied).toBe(0);
    await runWorkflow(wf, { runId: "q", resume: true });
    expect(calls.length).toBe(10);
    const v = await query<{ v: number }>(dbPath, "SELECT v FROM out WHERE run_id = 'q' AND node_id = 't9'");
    expect(Number(v[0]?.v)).toBe(59);
  });

  test("a fork of a run whose recorded workflow file is gone keeps the parent's code hash, so resuming it is not WORKFLOW_CHANGED", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = tenTasks(dbPath);
    expect((await runWorkflow(wf, { runId: "p", input: { base: 0 } })).status).toBe("finished");
    const [parent] = await query<{ workflow_hash: string | null }>(dbPath, "SELECT workflow_hash FROM _smithers_runs WHERE run_id = 'p'");
    expect(parent?.workflow_hash).toMatch(/^[0-9a-f]{64}$/);
    // As if the file had moved since the run.
    await execute(dbPath, "UPDATE _smithers_runs SET workflow_path = ? WHERE run_id = 'p'", join(tempDir(), "moved.tsx"));
    await forkRun(wf, { runId: "p", frame: 0, newRunId: "f" });
    expect(await query(dbPath, "SELECT workflow_hash FROM _smithers_runs WHERE run_id = 'f'")).toEqual([{ workflow_hash: parent!.workflow_hash }]);
    calls.length = 0;
    expect((await runWorkflow(wf, { runId: "f", resume: true })).status).toBe("finished");
    expect(calls.length).toBe(10);
  });
});

describe("runAtFrame", () => {
  test("across keyframes, each task's state at a frame is the one readFrame shows for it", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="long">
        {Array.from({ length: 60 }, (_, i) => (
          <kit.Task key={i} id={`s${i}`} output={kit.outputs.out}>
            {{ v: i }}
          </kit.Task>
        ))}
      </kit.Workflow>
    ));
    await runWorkflow(wf, { runId: "k", keyframes: { interval: 10, mode: "fixed" } });
    const db = wf.dbFor();
    const encodings = await query<{ encoding: string }>(dbPath, "SELECT DISTINCT encoding FROM _smithers_frames WHERE run_id = 'k' ORDER BY encoding");
    expect(encodings.map((e) => e.encoding)).toEqual(["delta", "full", "keyframe"]);
    for (const frame of [0, 9, 10, 37, 55]) {
      const at = await runAtFrame(db, "k", frame);
      const shown = new Map<string, string>();
      const walk = (el: XmlElement) => {
        if (el.tag === "task") shown.set(String(el.props.id), String(el.props.state));
        for (const c of el.children) walk(c);
      };
      walk(await readFrame(db, "k", frame));
      expect([frame, Object.fromEntries([...at.tasks.values()].map((t) => [t.nodeId, t.state]))]).toEqual([frame, Object.fromEntries(shown)]);
    }
  });
});

describe("rewind", () => {
  test("rewind then resume reaches the same outputs as the uninterrupted run; what it removed is in its event", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = tenTasks(dbPath);
    await runWorkflow(wf, { runId: "r", input: { base: 7 } });
    const outputs = () => query(dbPath, "SELECT node_id, iteration, v FROM out WHERE run_id = 'r' ORDER BY node_id");
    const final = await outputs();
    const db = wf.dbFor();
    // What frame 3 shows, read on its own (not through runAtFrame, which rewind itself uses).
    const done3 = [...finishedIn(await readFrame(db, "r", 3))];
    expect(done3.length).toBeGreaterThan(0);
    expect(done3.length).toBeLessThan(10);
    const result = await rewindRun(db, { runId: "r", frame: 3 });
    expect(result.removedOutputs).toBe(10 - done3.length);
    expect((await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = 'r'"))[0]?.status).toBe("paused");
    expect(Number((await query<{ n: number }>(dbPath, "SELECT max(frame_no) AS n FROM _smithers_frames WHERE run_id = 'r'"))[0]?.n)).toBe(3);
    expect((await outputs()).length).toBe(done3.length);
    const [event] = await query<{ payload_json: string }>(dbPath, "SELECT payload_json FROM _smithers_events WHERE run_id = 'r' AND type = 'RunRewound'");
    const payload = JSON.parse(event!.payload_json) as { toFrame: number; removed: { outputs: unknown[]; frames: unknown[] } };
    expect([payload.toFrame, payload.removed.outputs.length, payload.removed.frames.length]).toEqual([3, 10 - done3.length, result.removedFrames]);
    calls.length = 0;
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(calls.sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `t${i}`)
        .filter((id) => !done3.includes(id))
        .sort(),
    );
    expect(await outputs()).toEqual(final);
  });

  test("a running or waiting run cannot be rewound", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: approvalDecisionSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="gate">
        <kit.Approval id="g" output={kit.outputs.out} request={{ title: "go?" }} />
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "w" })).status).toBe("waiting-approval");
    const error = await rewindRun(wf.dbFor(), { runId: "w", frame: 0 }).catch((e) => e);
    expect((error as SmithersError).code).toBe("RUN_NOT_REWINDABLE");
    expect((await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = 'w'"))[0]?.status).toBe("waiting-approval");
  });
});

describe("side-effect guard", () => {
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  /** A mock model that calls mail.send once, then answers. */
  function mailModel() {
    let step = 0;
    return new MockLanguageModelV4({
      doGenerate: async () =>
        step++ === 0
          ? {
              content: [{ type: "tool-call" as const, toolCallId: "c1", toolName: "send", input: '{"to": "a@example.com"}' }],
              finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
              usage,
              warnings: [],
            }
          : { content: [{ type: "text" as const, text: '{"done": true}' }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] },
    });
  }

  test("a side effect blocks rewind without force; a declared revert runs once and opens it", async () => {
    const dbPath = tempDbPath();
    const reverted: unknown[] = [];
    const sent: string[] = [];
    const send = defineTool({
      name: "mail.send",
      schema: z.object({ to: z.string() }),
      sideEffect: true,
      execute: (args) => {
        sent.push(args.to);
        return { id: `m-${sent.length}` };
      },
      revert: (args, ctx) => {
        reverted.push({ args, outcome: ctx.outcome, output: ctx.output });
      },
    });
    const kit = createSmithers({ out: z.object({ done: z.boolean() }) }, { dbPath });
    let charge = false;
    const wf = kit.smithers(() => (
      <kit.Workflow name="effects">
        <kit.Task id="mail" output={kit.outputs.out} agent={new ToolLoopAgent({ model: mailModel(), tools: { send } })}>
          Send the mail.
        </kit.Task>
        <kit.Task id="charge" output={kit.outputs.out}>
          {async (ctx) => {
            if (charge) await ctx.sideEffect("card.charge", () => ({ ok: true }));
            return { done: true };
          }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "e" })).status).toBe("finished");
    expect(sent).toEqual(["a@example.com"]);
    const db = wf.dbFor();
    const before = await rowsOf(dbPath, "e");
    // Frame 0: nothing done yet, so the mail would be discarded. Without reverts it is a blocker.
    const blocked = await rewindRun(db, { runId: "e", frame: 0, revert: false }).catch((e) => e);
    expect((blocked as SmithersError).code).toBe("SIDE_EFFECT_BOUNDARY");
    expect(await rowsOf(dbPath, "e")).toBe(before);
    expect(reverted).toEqual([]);
    // A fork would send it again: blocked too, unless forced (recorded on the fork, not the parent).
    expect(((await forkRun(wf, { runId: "e", frame: 0 }).catch((e) => e)) as SmithersError).code).toBe("SIDE_EFFECT_BOUNDARY");
    const forced = await forkRun(wf, { runId: "e", frame: 0, force: true, newRunId: "e2" });
    expect(forced.crossed.map((c) => c.toolName)).toEqual(["mail.send"]);
    expect(await rowsOf(dbPath, "e")).toBe(before);
    expect((await query(dbPath, "SELECT type FROM _smithers_events WHERE run_id = 'e2' AND type = 'SideEffectBoundaryCrossed'")).length).toBe(1);
    // With its revert the rewind goes through, reverting once.
    const result = await rewindRun(db, { runId: "e", frame: 0 });
    expect(result.reverted.map((c) => c.toolName)).toEqual(["mail.send"]);
    expect(reverted).toEqual([{ args: { to: "a@example.com" }, outcome: "succeeded", output: { id: "m-1" } }]);
    const status = await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_tool_calls WHERE run_id = 'e'");
    expect(status.map((r) => r.status)).toEqual(["reverted"]);
    // Resumed, the mail is sent again (its journal entry was reverted, not replayed), and now a charge is made.
    charge = true;
    expect((await runWorkflow(wf, { runId: "e", resume: true })).status).toBe("finished");
    expect(sent).toEqual(["a@example.com", "a@example.com"]);
    // The charge has no revert: rewinding past it needs force, and nothing is reverted meanwhile.
    const again = await rewindRun(db, { runId: "e", frame: 0 }).catch((e) => e);
    expect((again as SmithersError).code).toBe("SIDE_EFFECT_BOUNDARY");
    expect(((again as SmithersError).details as { calls: { toolName: string }[] }).calls.map((c) => c.toolName)).toEqual(["card.charge"]);
    expect(reverted.length).toBe(1);
    await rewindRun(db, { runId: "e", frame: 0, force: true });
    expect(reverted.length).toBe(2);
    expect((await query(dbPath, "SELECT type FROM _smithers_events WHERE run_id = 'e' AND type = 'SideEffectBoundaryCrossed'")).length).toBe(1);
  });
});

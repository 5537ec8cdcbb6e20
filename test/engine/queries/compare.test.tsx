/** @jsxImportSource smithers-workflows */
/** compareRuns and scorerSummaries against a real database: a run and its fork with another prompt, their scores as `_smithers_scorers` holds them. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { frames, scorers } from "../../../src/db/index.ts";
import { compareRuns, forkRun, scoreRowsOfRun, scorerSummaries } from "../../../src/engine/index.ts";
import { createSmithers, runWorkflow } from "../../../src/index.ts";
import { rejection, tempDbPath } from "../../helpers.ts";

/** A plan task, an agent that writes in the input's style (its tokens and cost grow with the style's length), and a polish task only some inputs mount. */
function writer(dbPath: string) {
  const kit = createSmithers(
    {
      input: z.object({ style: z.string(), polish: z.boolean().default(false) }),
      plan: z.object({ steps: z.number().int() }),
      text: z.object({ text: z.string() }),
    },
    { dbPath },
  );
  const agent = {
    id: "styled",
    // The prompt's first line is the task's text (the output format's instructions follow it).
    generate: async ({ prompt }: { prompt: string }) => {
      const ask = prompt.split("\n")[0]!;
      return {
        text: JSON.stringify({ text: ask.toUpperCase() }),
        usage: { inputTokens: ask.length, outputTokens: 10, costUsd: ask.length / 1000, model: "m-1" },
      };
    },
  };
  const wf = kit.smithers((ctx) => (
    <kit.Workflow name="writer">
      <kit.Task id="plan" output={kit.outputs.plan}>
        {{ steps: 2 }}
      </kit.Task>
      <kit.Task id="write" output={kit.outputs.text} agent={agent}>
        {`write it ${ctx.input.style}`}
      </kit.Task>
      {ctx.input.polish && (
        <kit.Task id="polish" output={kit.outputs.text}>
          {{ text: "polished" }}
        </kit.Task>
      )}
    </kit.Workflow>
  ));
  return { kit, wf };
}

const score = (
  runId: string,
  nodeId: string,
  scorerId: string,
  s: { score: number | null; status?: string; attempt?: number; error?: string; at?: number },
) => ({
  id: `${runId}:${nodeId}:${scorerId}:${s.attempt ?? 1}`,
  runId,
  nodeId,
  iteration: 0,
  attempt: s.attempt ?? 1,
  scorerId,
  scorerName: scorerId === "len" ? "Length" : "Tone",
  status: s.status ?? "scored",
  score: s.score,
  reason: s.score === null ? null : `scored ${s.score}`,
  error: s.error ?? null,
  scoredAtMs: s.at ?? 1,
});

describe("compareRuns", () => {
  test("a run and its fork with another prompt: tasks matched by id, outputs, scores with their change, tokens, cost, a task only the fork has, and the totals", async () => {
    const dbPath = tempDbPath();
    const { kit, wf } = writer(dbPath);
    const db = kit.smithersDb;
    expect((await runWorkflow(wf, { runId: "a", input: { style: "tersely" } })).status).toBe("finished");
    await forkRun(wf, {
      runId: "a",
      frame: await frames.lastFrameNo(db, "a"),
      resetNodes: ["write"],
      input: { style: "at length", polish: true },
      newRunId: "b",
    });
    expect((await runWorkflow(wf, { runId: "b", resume: true })).status).toBe("finished");
    await scorers.insertScore(db, score("a", "write", "len", { score: 0.25 }));
    await scorers.insertScore(db, score("b", "write", "len", { score: 0.75 }));
    await scorers.insertScore(db, score("b", "write", "tone", { score: null, status: "pending" }));

    const c = await compareRuns(db, "a", "b");
    expect(c.warnings).toEqual([]);
    expect(c.tasks.map((t) => [t.nodeId, t.presence])).toEqual([
      ["plan", "both"],
      ["write", "both"],
      ["polish", "only-b"],
    ]);
    const write = c.tasks[1]!;
    expect([write.a!.output, write.b!.output]).toEqual([{ text: "WRITE IT TERSELY" }, { text: "WRITE IT AT LENGTH" }]);
    expect([write.a!.usage!.inputTokens, write.b!.usage!.inputTokens]).toEqual([16, 18]);
    expect([write.a!.usage!.costUsd, write.b!.usage!.costUsd]).toEqual([0.016, 0.018]);
    expect(write.scores).toEqual([
      {
        scorerId: "len",
        scorerName: "Length",
        a: { status: "scored", score: 0.25, reason: "scored 0.25", error: null },
        b: { status: "scored", score: 0.75, reason: "scored 0.75", error: null },
        delta: 0.5,
      },
      { scorerId: "tone", scorerName: "Tone", a: null, b: { status: "pending", score: null, reason: null, error: null }, delta: null },
    ]);
    expect(c.tasks[2]!.a).toBeNull();
    expect(c.tasks[2]!.b!.output).toEqual({ text: "polished" });
    expect([c.a.tasks, c.b.tasks, c.a.finished, c.b.finished]).toEqual([2, 3, 2, 3]);
    expect([c.a.usage.inputTokens, c.b.usage.inputTokens]).toEqual([16, 18]);
    expect(c.scoreMeans).toEqual([
      { scorerId: "len", scorerName: "Length", a: 0.25, b: 0.75, delta: 0.5 },
      { scorerId: "tone", scorerName: "Tone", a: null, b: null, delta: null },
    ]);
  });

  test("runs of different workflows are compared with a warning naming both, their tasks matched only by id", async () => {
    const dbPath = tempDbPath();
    const { kit, wf } = writer(dbPath);
    const other = createSmithers({ plan: z.object({ steps: z.number().int() }) }, { dbPath });
    const planner = other.smithers(() => (
      <other.Workflow name="planner">
        <other.Task id="plan" output={other.outputs.plan}>
          {{ steps: 5 }}
        </other.Task>
      </other.Workflow>
    ));
    await runWorkflow(wf, { runId: "w", input: { style: "plainly" } });
    await runWorkflow(planner, { runId: "p" });
    const c = await compareRuns(kit.smithersDb, "w", "p");
    expect(c.warnings).toEqual(["the runs are of different workflows (writer and planner): only tasks with the same id are matched"]);
    expect(c.tasks.map((t) => [t.nodeId, t.presence])).toEqual([
      ["plan", "both"],
      ["write", "only-a"],
    ]);
    expect([c.tasks[0]!.a!.output, c.tasks[0]!.b!.output]).toEqual([{ steps: 2 }, { steps: 5 }]);
  });

  test("an unknown run is RUN_NOT_FOUND", async () => {
    const { kit, wf } = writer(tempDbPath());
    await runWorkflow(wf, { runId: "known", input: { style: "x" } });
    expect((await rejection<{ code: string }>(compareRuns(kit.smithersDb, "known", "nope"))).code).toBe("RUN_NOT_FOUND");
  });
});

describe("scorerSummaries", () => {
  test("each scorer's mean over its tasks' latest attempts, pending and failed results counted apart", async () => {
    const { kit, wf } = writer(tempDbPath());
    const db = kit.smithersDb;
    await runWorkflow(wf, { runId: "s", input: { style: "x" } });
    await scorers.insertScore(db, score("s", "plan", "len", { score: 1 }));
    await scorers.insertScore(db, score("s", "write", "len", { score: 0.1, attempt: 1 }));
    await scorers.insertScore(db, score("s", "write", "len", { score: 0.5, attempt: 2, at: 2 })); // the retry's score replaces the first attempt's
    await scorers.insertScore(db, score("s", "plan", "tone", { score: null, status: "pending" }));
    await scorers.insertScore(db, score("s", "write", "tone", { score: null, status: "error", error: "SCORER_TIMEOUT: took too long" }));
    expect(scorerSummaries(await scoreRowsOfRun(db, "s"))).toEqual([
      { scorerId: "len", scorerName: "Length", mean: 0.75, scored: 2, pending: 0, errors: 0 },
      { scorerId: "tone", scorerName: "Tone", mean: null, scored: 0, pending: 1, errors: 1 },
    ]);
  });
});

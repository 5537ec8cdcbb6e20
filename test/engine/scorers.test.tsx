/** @jsxImportSource smithers-workflows */
/**
 * `<Task scorers>`: pending rows with the attempt's outcome, scorers run after its commit and off
 * the run's path, their failures on their rows only, sampling, and rows a dead process left
 * pending scored by the next process that loads the run. Runs on SQLite and on PostgreSQL.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createScorer, createSmithers, runWorkflow, Subflow, type Scorer, type ScorerInput, type ScorersMap } from "../../src/index.ts";
import { errorOf, execute, query, tempDbPath } from "../helpers.ts";

const out = z.object({ n: z.number() });

type Row = {
  node_id: string;
  attempt: number;
  scorer_id: string;
  scorer_name: string;
  status: string;
  score: number | null;
  reason: string | null;
  error: string | null;
};
const rows = (dbPath: string) =>
  query<Row>(dbPath, "SELECT node_id, attempt, scorer_id, scorer_name, status, score, reason, error FROM _smithers_scorers ORDER BY node_id, attempt, id");

const fixed = (id: string, score: unknown, reason = "because"): Scorer =>
  createScorer({ id, name: `Scorer ${id}`, description: id, score: () => ({ score: score as number, reason }) });

/** A scorer that scores `score` only once `release` was called. */
function gatedScorer(score: number) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const waits = createScorer({
    id: "waits",
    name: "Waits",
    description: "",
    score: async () => {
      await released;
      return { score };
    },
  });
  return { waits, release };
}

/** A workflow of one compute task `work` (returning n = 1) with these scorers. */
function oneTask(dbPath: string, scorers: ScorersMap, extra: { groundTruth?: unknown; context?: unknown } = {}) {
  const kit = createSmithers({ out }, { dbPath });
  return kit.smithers(() => (
    <kit.Workflow name="scored">
      <kit.Task id="work" output={kit.outputs.out} scorers={scorers} {...extra}>
        {() => ({ n: 1 })}
      </kit.Task>
    </kit.Workflow>
  ));
}

describe("Task scorers", () => {
  test("each binding writes one scored row for the finished attempt, with its score, reason, scorer name, latency and duration", async () => {
    const dbPath = tempDbPath();
    const result = await runWorkflow(oneTask(dbPath, { a: { scorer: fixed("a", 0.25) }, b: { scorer: fixed("b", 1, "full") } }), { runId: "r" });
    expect(result.status).toBe("finished");
    expect(await rows(dbPath)).toEqual([
      { node_id: "work", attempt: 1, scorer_id: "a", scorer_name: "Scorer a", status: "scored", score: 0.25, reason: "because", error: null },
      { node_id: "work", attempt: 1, scorer_id: "b", scorer_name: "Scorer b", status: "scored", score: 1, reason: "full", error: null },
    ]);
    const [times] = await query<{ n: number }>(
      dbPath,
      "SELECT count(*) AS n FROM _smithers_scorers WHERE latency_ms >= 0 AND duration_ms >= 0 AND run_id = 'r' AND iteration = 0",
    );
    expect(Number(times!.n)).toBe(2);
  });

  test("a scorer runs after the attempt's outcome committed: it sees the attempt finished, the output stored and its own row pending", async () => {
    const dbPath = tempDbPath();
    let seen: unknown[] = [];
    const probe = createScorer({
      id: "probe",
      name: "Probe",
      description: "reads the database",
      score: async () => {
        seen = [
          ...(await query(dbPath, "SELECT state FROM _smithers_attempts WHERE node_id = 'work'")),
          ...(await query(dbPath, "SELECT n FROM out")),
          ...(await query(dbPath, "SELECT status FROM _smithers_scorers")),
        ];
        return { score: 1 };
      },
    });
    await runWorkflow(oneTask(dbPath, { probe: { scorer: probe } }), { runId: "r" });
    expect(seen).toEqual([{ state: "finished" }, { n: 1 }, { status: "pending" }]);
  });

  test("the next task starts while a scorer of the one before still runs", async () => {
    const dbPath = tempDbPath();
    // Scores only once the second task ran: a scheduler that waited for it would never get there (the row would time out).
    const { waits, release } = gatedScorer(1);
    const kit = createSmithers({ out }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="two">
        <kit.Task id="first" output={kit.outputs.out} scorers={{ waits: { scorer: waits, timeoutMs: 15_000 } }}>
          {() => ({ n: 1 })}
        </kit.Task>
        <kit.Task id="second" output={kit.outputs.out} dependsOn={["first"]}>
          {() => {
            release();
            return { n: 2 };
          }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "r" })).status).toBe("finished");
    expect(await rows(dbPath)).toMatchObject([{ node_id: "first", status: "scored", score: 1 }]);
  });

  test("a scorer that throws, one that times out and ones that return a bad score end as error rows; the task and the run finish", async () => {
    const dbPath = tempDbPath();
    const throws = createScorer({
      id: "throws",
      name: "Throws",
      description: "",
      score: () => {
        throw new Error("judge down");
      },
    });
    const hangs = createScorer({ id: "hangs", name: "Hangs", description: "", score: () => new Promise(() => undefined) });
    const result = await runWorkflow(
      oneTask(dbPath, {
        throws: { scorer: throws },
        hangs: { scorer: hangs, timeoutMs: 50 },
        high: { scorer: fixed("high", 1.5) },
        nan: { scorer: fixed("nan", "0.5") },
      }),
      { runId: "r" },
    );
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT n FROM out")).toEqual([{ n: 1 }]);
    const byId = Object.fromEntries((await rows(dbPath)).map((r) => [r.scorer_id, [r.status, r.score, r.error?.split(":")[0]]]));
    expect(byId).toEqual({
      throws: ["error", null, "SCORER_FAILED"],
      hangs: ["error", null, "SCORER_TIMEOUT"],
      high: ["error", null, "SCORER_INVALID_SCORE"],
      nan: ["error", null, "SCORER_INVALID_SCORE"],
    });
    expect((await rows(dbPath)).find((r) => r.scorer_id === "throws")!.error).toBe("SCORER_FAILED: judge down");
  });

  test("a scorer gets the output, the run's input for a compute task, groundTruth, context, latency and the output schema", async () => {
    const dbPath = tempDbPath();
    let got: ScorerInput | undefined;
    const spy = createScorer({
      id: "spy",
      name: "Spy",
      description: "",
      score: (input) => {
        got = input;
        return { score: 1 };
      },
    });
    await runWorkflow(oneTask(dbPath, { spy: { scorer: spy } }, { groundTruth: { n: 1 }, context: "docs" }), { runId: "r", input: { topic: "x" } });
    expect(got).toMatchObject({ input: { topic: "x" }, output: { n: 1 }, groundTruth: { n: 1 }, context: "docs" });
    expect(typeof got!.latencyMs).toBe("number");
    expect(got!.outputSchema!.safeParse({ n: 2 }).success).toBe(true);
  });

  test("a failed attempt gets no rows; the attempt that finishes after its retry is scored as attempt 2", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out }, { dbPath });
    let calls = 0;
    const wf = kit.smithers(() => (
      <kit.Workflow name="retry">
        <kit.Task id="work" output={kit.outputs.out} retries={1} retryPolicy={{ initialDelayMs: 1 }} scorers={{ a: { scorer: fixed("a", 0.5) } }}>
          {() => {
            if (++calls === 1) throw new Error("flaky");
            return { n: 1 };
          }}
        </kit.Task>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { runId: "r" });
    expect(await rows(dbPath)).toMatchObject([{ attempt: 2, status: "scored", score: 0.5 }]);
  });

  test("sampling none writes no row; ratio 0 none and ratio 1 every one", async () => {
    const dbPath = tempDbPath();
    await runWorkflow(
      oneTask(dbPath, {
        none: { scorer: fixed("none", 1), sampling: { type: "none" } },
        zero: { scorer: fixed("zero", 1), sampling: { type: "ratio", rate: 0 } },
        one: { scorer: fixed("one", 1), sampling: { type: "ratio", rate: 1 } },
      }),
      { runId: "r" },
    );
    expect((await rows(dbPath)).map((r) => r.scorer_id)).toEqual(["one"]);
  });

  test("a ratio picks the same attempts of the same run every time (a replay agrees)", async () => {
    const picked = async () => {
      const dbPath = tempDbPath();
      const kit = createSmithers({ out }, { dbPath });
      const half = { s: { scorer: fixed("s", 1), sampling: { type: "ratio" as const, rate: 0.5 } } };
      const wf = kit.smithers(() => (
        <kit.Workflow name="many">
          {Array.from({ length: 16 }, (_, i) => (
            <kit.Task id={`t${i}`} output={kit.outputs.out} scorers={half}>
              {{ n: i }}
            </kit.Task>
          ))}
        </kit.Workflow>
      ));
      await runWorkflow(wf, { runId: "same" });
      return (await rows(dbPath)).map((r) => r.node_id);
    };
    const first = await picked();
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(16);
    expect(await picked()).toEqual(first);
  });

  test("a row left pending (its process died) is scored by the next process that loads the run", async () => {
    const dbPath = tempDbPath();
    const wf = oneTask(dbPath, { a: { scorer: fixed("a", 0.75, "again") } });
    await runWorkflow(wf, { runId: "r" });
    await execute(dbPath, "UPDATE _smithers_scorers SET status = 'pending', score = NULL, reason = NULL");
    expect((await rows(dbPath))[0]).toMatchObject({ status: "pending", score: null });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("finished");
    expect(await rows(dbPath)).toMatchObject([{ status: "scored", score: 0.75, reason: "again" }]);
  });

  test("a resumed run that goes on scores the rows its dead process left pending, beside its own tasks", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out }, { dbPath });
    let failB = true;
    const wf = kit.smithers(() => (
      <kit.Workflow name="resumed">
        <kit.Task id="a" output={kit.outputs.out} scorers={{ s: { scorer: fixed("s", 0.4, "late") } }}>
          {() => ({ n: 1 })}
        </kit.Task>
        <kit.Task id="b" output={kit.outputs.out} dependsOn={["a"]} noRetry>
          {() => {
            if (failB) throw new Error("not yet");
            return { n: 2 };
          }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "r" })).status).toBe("failed");
    await execute(dbPath, "UPDATE _smithers_scorers SET status = 'pending', score = NULL, reason = NULL");
    failB = false;
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await rows(dbPath)).toMatchObject([{ node_id: "a", status: "scored", score: 0.4, reason: "late" }]);
  });

  test("a Subflow's task goes on while a scorer of its child run still runs; the parent's run waits for it at its end", async () => {
    const dbPath = tempDbPath();
    const { waits, release } = gatedScorer(0.9);
    const child = createSmithers({ out });
    const childWf = child.smithers(() => (
      <child.Workflow name="child">
        <child.Task id="inner" output={child.outputs.out} scorers={{ waits: { scorer: waits, timeoutMs: 15_000 } }}>
          {() => ({ n: 1 })}
        </child.Task>
      </child.Workflow>
    ));
    const parent = createSmithers({ out }, { dbPath });
    const wf = parent.smithers(() => (
      <parent.Workflow name="parent">
        <Subflow id="sub" workflow={childWf} output={parent.outputs.out} />
        <parent.Task id="after" output={parent.outputs.out} dependsOn={["sub"]}>
          {() => {
            release();
            return { n: 2 };
          }}
        </parent.Task>
      </parent.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "p" })).status).toBe("finished");
    expect(await query(dbPath, "SELECT run_id, node_id, status, score FROM _smithers_scorers")).toEqual([
      { run_id: "p/sub#0", node_id: "inner", status: "scored", score: 0.9 },
    ]);
  });

  test("a malformed scorers map fails the render with INVALID_SCORER", async () => {
    const dbPath = tempDbPath();
    const bad: unknown[] = [
      { a: { sampling: { type: "all" } } },
      { a: { scorer: fixed("a", 1), sampling: { type: "ratio", rate: 1.5 } } },
      { a: { scorer: fixed("a", 1), sampling: { type: "sometimes" } } },
      { a: { scorer: fixed("a", 1), timeoutMs: 0 } },
    ];
    for (const scorers of bad) {
      const result = await runWorkflow(oneTask(dbPath, scorers as ScorersMap), {});
      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("INVALID_SCORER");
    }
    const kit = createSmithers({ out }, { dbPath });
    const truthOnly = kit.smithers(() => (
      <kit.Workflow name="t">
        <kit.Task id="work" output={kit.outputs.out} groundTruth={{ n: 1 }}>
          {{ n: 1 }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(truthOnly, {})).error?.code).toBe("INVALID_SCORER");
    expect(errorOf(() => createScorer({ id: "", name: "x", description: "", score: () => ({ score: 1 }) })).code).toBe("INVALID_SCORER");
  });
});

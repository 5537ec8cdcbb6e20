/**
 * The load-bearing claim: a run survives kill -9 at any moment without losing or repeating work.
 *
 * `smithers up test/fixtures/crash-workflow.tsx` (sequence, bounded parallel fan-out, a 5-round
 * loop holding another parallel group; 33 task executions, 9 of them with a side effect) is
 * started, SIGKILLed after a random delay, restarted with --resume, killed again… at least
 * MIN_KILLS times, until a process exits 0 by itself. Then the database, the fixture's log of
 * every task-body execution and the side-effect "provider" file are checked against each other.
 *
 * Delays come from a seeded PRNG; the seed is printed and named in every failure. Re-run one with
 *   CRASH_SEED=<seed> npx bun test test/e2e/crash.test.ts
 * (the seed fixes the kill schedule and the fixture's pauses; where exactly a kill lands still
 * depends on the machine's timing, so a failure is best narrowed down from the report it prints).
 */
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { prng, tempDbPath } from "../helpers.ts";
import { cli, root } from "./cli-helpers.ts";
import { EFFECT_TASKS, expectedNodes, ROUNDS } from "../fixtures/crash-workflow.tsx";

const FIXTURE = "test/fixtures/crash-workflow.tsx";
const RUN_ID = "crash";
const INPUT = '{"label":"k9"}';
const MIN_KILLS = 30;
/** Kills are paced so that about this many land before the run can finish (see planKill). */
const PACE_KILLS = MIN_KILLS + 8;
/** A run that needs more processes than this is not converging: fail instead of looping forever. */
const MAX_PROCESSES = 200;
/** One process running longer than this is hung (the whole workflow takes about a second). */
const PROCESS_WATCHDOG_MS = 30_000;

type KillPlan = { anchor: "spawn" | "first-output"; delayMs: number };

/**
 * Where the kill is aimed. 15 %: 0-700 ms from the spawn (module loading, opening the database,
 * the start or resume transaction, the first render; capped at the first attempt's start, see
 * `life`). 20 %: 0-4 ms after the first progress line (the first attempt row is committed), to
 * catch attempts that just started. 65 %: 5-120 ms after it, which lands anywhere in the workflow
 * (mid-task, inside a side effect, between a commit and the next start, in a parallel group, at a
 * loop step, after the run finished). While the run is ahead of the kill schedule (`hurry`: a
 * larger share of the workflow is done than of PACE_KILLS), that last range shrinks to 5-30 ms,
 * so a streak of long lives cannot finish the run before MIN_KILLS kills on a fast machine.
 */
function planKill(random: () => number, hurry: boolean): KillPlan {
  const r = random();
  if (r < 0.15) return { anchor: "spawn", delayMs: Math.floor(random() * 700) };
  if (r < 0.35) return { anchor: "first-output", delayMs: Math.floor(random() * 5) };
  return { anchor: "first-output", delayMs: 5 + Math.floor(random() * (hurry ? 26 : 116)) };
}

type Life = {
  index: number;
  pid: number;
  resumed: boolean;
  plan: KillPlan;
  killed: boolean;
  exitCode: number | null;
  hung: boolean;
  stdout: string;
  stderr: string;
  ms: number;
  /** Where the kill landed (see killPoint). */
  point?: string;
};

/** One `smithers up` process: started, killed as planned unless it exits first, reaped. */
async function life(index: number, resumed: boolean, plan: KillPlan, env: Record<string, string>): Promise<Life> {
  const args = ["up", FIXTURE, "--db", env.DB!, "--run-id", RUN_ID, "--input", INPUT, ...(resumed ? ["--resume"] : [])];
  const startedAt = performance.now();
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let stdout = "";
  let signalFirstOutput!: () => void;
  const firstOutput = new Promise<void>((resolve) => (signalFirstOutput = resolve));
  // Both pipes are drained to the end so the child never blocks or gets EPIPE on a write.
  const drained = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) {
      stdout += decoder.decode(chunk, { stream: true });
      signalFirstOutput();
    }
  })();
  const stderr = new Response(proc.stderr).text();
  let hung = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watchdog = new Promise<void>((resolve) => (timer = setTimeout(() => resolve(void (hung = true)), PROCESS_WATCHDOG_MS)));
  // A spawn-anchored kill is aimed at start-up: should the first attempt begin before its delay
  // is up, the kill comes within a few ms of it, whatever the machine's start-up time.
  const due =
    plan.anchor === "spawn"
      ? Promise.race([Bun.sleep(plan.delayMs), firstOutput.then(() => Bun.sleep(plan.delayMs % 5))])
      : firstOutput.then(() => Bun.sleep(plan.delayMs));
  await Promise.race([due, proc.exited, watchdog]);
  clearTimeout(timer);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await proc.exited;
  await drained;
  return {
    index,
    pid: proc.pid,
    resumed,
    plan,
    killed: proc.signalCode === "SIGKILL",
    exitCode: proc.exitCode,
    hung,
    stdout,
    stderr: await stderr,
    ms: Math.round(performance.now() - startedAt),
  };
}

/** Opens the database read-only for one query batch (no process is running when this is called). */
function withDb<T>(dbPath: string, fn: (db: Database) => T): T {
  const db = new Database(dbPath, { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function runExists(dbPath: string): boolean {
  if (!existsSync(dbPath)) return false;
  try {
    return withDb(dbPath, (db) => db.query("SELECT 1 FROM _smithers_runs WHERE run_id = ?").get(RUN_ID) !== null);
  } catch {
    return false; // killed before the tables were created
  }
}

const TOTAL_NODES = expectedNodes().length;

function finishedNodes(dbPath: string): number {
  if (!runExists(dbPath)) return 0;
  return withDb(
    dbPath,
    (db) => db.query<{ n: number }, [string]>("SELECT count(*) AS n FROM _smithers_nodes WHERE run_id = ? AND state = 'finished'").get(RUN_ID)!.n,
  );
}

/** Where the last kill landed, judged from what the dead process left in the database. */
function killPoint(dbPath: string, l: Life): string {
  if (!runExists(dbPath)) return "before the run row";
  if (withDb(dbPath, (db) => db.query<{ status: string }, [string]>("SELECT status FROM _smithers_runs WHERE run_id = ?").get(RUN_ID)?.status) === "finished") {
    return "after the run finished (process exiting)";
  }
  if (l.stdout === "") {
    // The owner id is `host:pid:…`: this process's pid there means its start or resume committed.
    const owner = withDb(
      dbPath,
      (db) => db.query<{ owner: string | null }, [string]>("SELECT runtime_owner_id AS owner FROM _smithers_runs WHERE run_id = ?").get(RUN_ID)?.owner,
    );
    return owner?.split(":")[1] === String(l.pid)
      ? "after its start/resume committed, before its first attempt"
      : "during start-up, before its start/resume committed";
  }
  return withDb(dbPath, (db) => {
    const running = db
      .query<{ node_id: string; iteration: number; attempt: number }, [string]>(
        "SELECT node_id, iteration, attempt FROM _smithers_attempts WHERE run_id = ? AND state = 'running'",
      )
      .all(RUN_ID);
    if (running.length === 0) return "between tasks";
    const inEffect = db
      .query<{ n: number }, [string]>(
        `SELECT count(*) AS n FROM _smithers_tool_calls t JOIN _smithers_attempts a
           ON a.run_id = t.run_id AND a.node_id = t.node_id AND a.iteration = t.iteration AND a.attempt = t.attempt
         WHERE t.run_id = ? AND t.status = 'started' AND a.state = 'running'`,
      )
      .get(RUN_ID)!.n;
    const where = running.some((r) => r.node_id.startsWith("fan-"))
      ? "fan-out"
      : running.some((r) => ["draft", "check-a", "check-b", "judge"].includes(r.node_id))
        ? "loop"
        : "sequence";
    return `mid-task (${where}${running.length > 1 ? `, ${running.length} running` : ""}${inEffect > 0 ? ", inside a side effect" : ""})`;
  });
}

const parseLog = (file: string) =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];

test("kill -9 at random moments, ≥30 times: the run finishes with every output once, no finished task re-run, every execution recorded, side effects once, a gap-free journal", async () => {
  const seed = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isInteger(seed)) throw new Error(`CRASH_SEED must be an integer, got ${process.env.CRASH_SEED}`);
  const random = prng(seed);
  const dbPath = tempDbPath();
  const execFile = join(dirname(dbPath), "executions.log");
  const effectsFile = join(dirname(dbPath), "effects.log");
  const header = `[crash test] CRASH_SEED=${seed} db=${dbPath}`;
  console.log(header);

  const lives: Life[] = [];
  const landed = new Map<string, number>();
  let final: Life | undefined;
  const t0 = performance.now();
  while (!final) {
    if (lives.length >= MAX_PROCESSES) {
      throw new Error(`${header}\nno process finished the run within ${MAX_PROCESSES} restarts (${lives.filter((l) => l.killed).length} kills)`);
    }
    const resumed = runExists(dbPath);
    const kills = lives.filter((l) => l.killed).length;
    // Ahead of schedule: a larger share of the workflow is done than of the paced kills.
    const hurry = kills < PACE_KILLS && finishedNodes(dbPath) / TOTAL_NODES > kills / PACE_KILLS;
    const l = await life(lives.length, resumed, planKill(random, hurry), {
      DB: dbPath,
      CRASH_EXEC_FILE: execFile,
      CRASH_EFFECTS_FILE: effectsFile,
      CRASH_WORK_SEED: String((seed + lives.length * 7919) >>> 0),
    });
    lives.push(l);
    if (l.hung)
      throw new Error(`${header}\nprocess ${l.index} (${l.resumed ? "resume" : "start"}) hung for ${PROCESS_WATCHDOG_MS} ms\n${l.stdout}\n${l.stderr}`);
    if (l.killed) {
      l.point = killPoint(dbPath, l);
      landed.set(l.point, (landed.get(l.point) ?? 0) + 1);
    } else if (l.exitCode === 0) {
      final = l;
    } else {
      throw new Error(
        `${header}\nprocess ${l.index} (${l.resumed ? "resume" : "start"}, after ${lives.filter((x) => x.killed).length} kills) exited ${l.exitCode} by itself\nstdout:\n${l.stdout}\nstderr:\n${l.stderr}`,
      );
    }
  }
  // Every life, for narrowing a failure down: what was planned, where it landed, what it printed.
  const traceFile = join(dirname(dbPath), "lives.log");
  writeFileSync(
    traceFile,
    lives
      .map(
        (l) =>
          `#${l.index} pid=${l.pid} ${l.resumed ? "resume" : "start"} ${l.plan.anchor}+${l.plan.delayMs}ms lived=${l.ms}ms ${l.killed ? `killed: ${l.point}` : `exit ${l.exitCode}`}\n${l.stdout}${l.stderr}`,
      )
      .join("\n"),
  );
  const kills = lives.filter((l) => l.killed).length;
  const elapsed = Math.round(performance.now() - t0);
  console.log(
    `${header}\n${kills} kills, ${lives.length} processes, ${elapsed} ms; kills landed:\n` +
      [...landed]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `  ${String(n).padStart(3)}  ${k}`)
        .join("\n"),
  );

  // Every violation is collected, so one failure report shows all of them.
  const violations: string[] = [];
  const check = (ok: boolean, message: string) => {
    if (!ok) violations.push(message);
  };

  check(kills >= MIN_KILLS, `only ${kills} kills before the run finished (need ${MIN_KILLS})`);
  check(final.stdout.includes(`run ${RUN_ID} finished`), `the last process did not report the run finished:\n${final.stdout}`);
  check(final.stderr === "", `the last process wrote to stderr:\n${final.stderr}`);

  type AttemptRow = { node_id: string; iteration: number; attempt: number; state: string; finished_at_ms: number | null; error_json: string | null };
  const db = {
    run: withDb(dbPath, (d) => d.query<{ status: string }, [string]>("SELECT status FROM _smithers_runs WHERE run_id = ?").all(RUN_ID)),
    outputs: withDb(dbPath, (d) =>
      d
        .query<{ node_id: string; iteration: number; attempt: number; label: string; receipt: string }, [string]>(
          "SELECT node_id, iteration, attempt, label, receipt FROM step WHERE run_id = ?",
        )
        .all(RUN_ID),
    ),
    nodes: withDb(dbPath, (d) =>
      d
        .query<{ node_id: string; iteration: number; state: string; last_attempt: number }, [string]>(
          "SELECT node_id, iteration, state, last_attempt FROM _smithers_nodes WHERE run_id = ?",
        )
        .all(RUN_ID),
    ),
    attempts: withDb(dbPath, (d) =>
      d
        .query<AttemptRow, [string]>(
          "SELECT node_id, iteration, attempt, state, finished_at_ms, error_json FROM _smithers_attempts WHERE run_id = ? ORDER BY node_id, iteration, attempt",
        )
        .all(RUN_ID),
    ),
    toolCalls: withDb(dbPath, (d) =>
      d
        .query<{ idempotency_key: string; status: string; attempt: number }, [string]>(
          "SELECT idempotency_key, status, attempt FROM _smithers_tool_calls WHERE run_id = ?",
        )
        .all(RUN_ID),
    ),
    events: withDb(dbPath, (d) =>
      d.query<{ seq: number; type: string }, [string]>("SELECT seq, type FROM _smithers_events WHERE run_id = ? ORDER BY seq").all(RUN_ID),
    ),
    loop: withDb(dbPath, (d) =>
      d
        .query<{ iteration: number; done: number }, [string]>("SELECT iteration, done FROM _smithers_ralph WHERE run_id = ? AND ralph_id = 'rounds'")
        .all(RUN_ID),
    ),
  };

  // The run finished, every expected output row exists exactly once, nothing else does.
  check(db.run.length === 1 && db.run[0]!.status === "finished", `run status: ${JSON.stringify(db.run)}`);
  const expected = expectedNodes();
  const k = (nodeId: string, iteration: number) => `${nodeId}#${iteration}`;
  const expectedKeys = new Set(expected.map((n) => k(n.nodeId, n.iteration)));
  check(expected.length === 33 && expectedKeys.size === 33, `the fixture should describe 33 distinct task executions, got ${expected.length}`);
  const outputCount = new Map<string, number>();
  for (const o of db.outputs) outputCount.set(k(o.node_id, o.iteration), (outputCount.get(k(o.node_id, o.iteration)) ?? 0) + 1);
  for (const key of expectedKeys) check(outputCount.get(key) === 1, `output rows for ${key}: ${outputCount.get(key) ?? 0} (expected exactly 1)`);
  for (const [key, n] of outputCount) check(expectedKeys.has(key), `unexpected output row ${key} (${n}x)`);
  check(db.outputs.length === expected.length, `${db.outputs.length} output rows, expected ${expected.length}`);
  check(db.loop.length === 1 && db.loop[0]!.done === 1 && db.loop[0]!.iteration === ROUNDS - 1, `loop state: ${JSON.stringify(db.loop)}`);
  const publish = db.outputs.find((o) => o.node_id === "publish");
  check(publish?.label === `published:${ROUNDS}`, `publish saw ${publish?.label} (expected published:${ROUNDS})`);
  check(db.outputs.find((o) => o.node_id === "merge")?.label === "merged:8", "merge did not see all 8 fan-out outputs");
  for (const node of db.nodes) check(node.state === "finished", `node ${k(node.node_id, node.iteration)} is ${node.state}`);
  check(db.nodes.length === expected.length, `${db.nodes.length} node rows, expected ${expected.length}`);

  // Every attempt has an outcome: none left running, the killed ones abandoned (no task ever fails).
  for (const a of db.attempts) {
    check(a.state === "finished" || a.state === "abandoned", `attempt ${k(a.node_id, a.iteration)}/${a.attempt} is ${a.state}`);
    check(a.finished_at_ms !== null, `attempt ${k(a.node_id, a.iteration)}/${a.attempt} has no finished_at_ms`);
    if (a.state === "abandoned")
      check(a.error_json?.includes("TASK_ABANDONED") === true, `abandoned attempt ${k(a.node_id, a.iteration)}/${a.attempt} has error ${a.error_json}`);
  }

  // Write before do: every execution the fixture logged has its attempt row, and ran only once.
  const executions = parseLog(execFile).map((line) => {
    const m = /^([^:]+):([^:]+):(\d+) (\d+)$/.exec(line);
    if (!m || m[1] !== RUN_ID) throw new Error(`${header}\nmalformed executions line: ${JSON.stringify(line)}`);
    return { node_id: m[2]!, iteration: Number(m[3]), attempt: Number(m[4]), line };
  });
  const attemptByKey = new Map(db.attempts.map((a) => [`${k(a.node_id, a.iteration)}/${a.attempt}`, a]));
  const seenExecution = new Set<string>();
  for (const e of executions) {
    const key = `${k(e.node_id, e.iteration)}/${e.attempt}`;
    check(attemptByKey.has(key), `execution "${e.line}" has no _smithers_attempts row`);
    check(
      !seenExecution.has(key),
      `attempt ${key} executed its body more than once (two processes used one attempt number: was a body started before its attempt row was committed?)`,
    );
    seenExecution.add(key);
  }

  // No finished task ran twice: exactly one finished attempt per node/iteration, it is the last
  // attempt that exists and the last that executed, and its output row came from it.
  for (const key of expectedKeys) {
    const attempts = db.attempts.filter((a) => k(a.node_id, a.iteration) === key);
    const finished = attempts.filter((a) => a.state === "finished");
    check(finished.length === 1, `${key}: ${finished.length} finished attempts (${JSON.stringify(attempts)})`);
    if (finished.length !== 1) continue;
    const done = finished[0]!.attempt;
    check(Math.max(...attempts.map((a) => a.attempt)) === done, `${key}: an attempt started after attempt ${done} finished (${JSON.stringify(attempts)})`);
    const ran = executions.filter((e) => k(e.node_id, e.iteration) === key);
    check(
      ran.some((e) => e.attempt === done),
      `${key}: finished attempt ${done} never executed its body`,
    );
    for (const e of ran) check(e.attempt <= done, `${key}: attempt ${e.attempt} executed after attempt ${done} had finished`);
    const out = db.outputs.find((o) => k(o.node_id, o.iteration) === key);
    check(out?.attempt === done, `${key}: output row written by attempt ${out?.attempt}, but attempt ${done} is the finished one`);
    const node = db.nodes.find((n) => k(n.node_id, n.iteration) === key);
    check(node?.last_attempt === done, `${key}: _smithers_nodes.last_attempt ${node?.last_attempt}, finished attempt ${done}`);
  }

  // Side effects: exactly one provider call per side-effecting task, and its receipt in the output.
  const effectKeys = expected.filter((n) => EFFECT_TASKS.has(n.nodeId)).map((n) => `${RUN_ID}:${n.nodeId}:${n.iteration}:append`);
  const effectLines = parseLog(effectsFile);
  const effectCount = new Map<string, number>();
  for (const line of effectLines) effectCount.set(line, (effectCount.get(line) ?? 0) + 1);
  for (const key of effectKeys) check(effectCount.get(key) === 1, `side effect ${key} landed ${effectCount.get(key) ?? 0} times at the provider`);
  check(effectLines.length === effectKeys.length, `${effectLines.length} provider lines for ${effectKeys.length} side-effecting tasks`);
  for (const key of effectKeys) {
    const [, nodeId, iteration] = key.split(":");
    const out = db.outputs.find((o) => o.node_id === nodeId && o.iteration === Number(iteration));
    check(out?.receipt === `receipt:${key}`, `${nodeId}#${iteration}: receipt ${JSON.stringify(out?.receipt)}`);
    const succeeded = db.toolCalls.filter((t) => t.idempotency_key === key && t.status === "succeeded");
    check(succeeded.length === 1, `${key}: ${succeeded.length} succeeded _smithers_tool_calls rows`);
  }

  // The journal: seqs 0..n-1 without gaps or repeats, ending with the one RunFinished.
  const seqs = db.events.map((e) => e.seq);
  const gap = seqs.findIndex((s, i) => s !== i);
  check(gap === -1, `event seqs not gap-free at index ${gap}: …${JSON.stringify(seqs.slice(Math.max(0, gap - 3), gap + 3))}…`);
  check(new Set(seqs).size === seqs.length, "duplicate event seqs");
  // A kill can land after RunFinished is stored but before the process exits; the harness, like
  // an operator who cannot tell, resumes it. Resuming a finished run runs nothing (but journals
  // RunResumed + RunFinished again), so after the first RunFinished only such pairs may follow.
  const firstFinish = db.events.findIndex((e) => e.type === "RunFinished");
  check(firstFinish >= 0, "no RunFinished event");
  const afterFinish = db.events.slice(firstFinish + 1).filter((e) => e.type !== "RunResumed" && e.type !== "RunFinished");
  check(afterFinish.length === 0, `events after the run finished: ${JSON.stringify(afterFinish)}`);
  check(db.events.at(-1)?.type === "RunFinished", `last event is ${db.events.at(-1)?.type}`);

  const abandoned = db.attempts.filter((a) => a.state === "abandoned").length;
  const uncertain = db.toolCalls.filter((t) => t.status === "started").length;
  console.log(
    `${header}\n${db.attempts.length} attempts (${abandoned} abandoned), ${executions.length} body executions, ${uncertain} side-effect intents left open by kills, ${db.events.length} events`,
  );
  if (violations.length > 0) {
    throw new Error(
      `${header}\n${kills} kills over ${lives.length} processes (trace: ${traceFile}); ${violations.length} violations:\n  ${violations.join("\n  ")}`,
    );
  }
  expect(violations).toEqual([]);
  expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
}, 240_000);

/** `_smithers_attempts`: every execution attempt of every node, kept as history. */
import type { Usage } from "../../contract/index.ts";
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, eq, inArray, sql } from "drizzle-orm/sql";
import { combinable, insertSql, sqlNames } from "./shared.ts";
import { smithersAttempts, smithersNodes } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type AttemptRow = InferSelectModel<typeof smithersAttempts>;
export type NewAttemptRow = InferInsertModel<typeof smithersAttempts>;

const A = sqlNames(smithersAttempts);

const INSERT_RUNNING = insertSql(smithersAttempts, ["runId", "nodeId", "iteration", "attempt", "state", "startedAtMs", "metaJson"]);
/** What closing an attempt sets: finishAttempt on a running row, or insertEndedAttempt's row. */
export type AttemptClose = Pick<
  Partial<NewAttemptRow>,
  | "state"
  | "finishedAtMs"
  | "errorJson"
  | "responseText"
  | "metaJson"
  | "cached"
  | "inputTokens"
  | "cachedInputTokens"
  | "outputTokens"
  | "costUsd"
  | "agentModel"
>;

const CLOSE_FIELDS = [
  "state",
  "finishedAtMs",
  "errorJson",
  "responseText",
  "metaJson",
  "cached",
  "inputTokens",
  "cachedInputTokens",
  "outputTokens",
  "costUsd",
  "agentModel",
] as const satisfies readonly (keyof AttemptClose)[];

const INSERT_ENDED = combinable(insertSql(smithersAttempts, ["runId", "nodeId", "iteration", "attempt", "startedAtMs", ...CLOSE_FIELDS]));

/** An attempt started and closed within one transaction, written once as it ended (what finishAttempt would leave). */
export function insertEndedAttempt(
  q: Sql,
  row: { runId: string; nodeId: string; iteration: number; attempt: number; startedAtMs: number } & AttemptClose,
): Promise<unknown> {
  const params: unknown[] = [row.runId, row.nodeId, row.iteration, row.attempt, row.startedAtMs];
  for (const field of CLOSE_FIELDS)
    params.push(field === "cached" ? Boolean(row.cached) : field === "state" ? (row.state ?? "finished") : (row[field] ?? null));
  return q.run(INSERT_ENDED, ...params);
}

export async function insertAttempt(q: Sql, row: NewAttemptRow): Promise<void> {
  if (row.finishedAtMs != null || row.errorJson != null || row.responseText != null) {
    await q.orm.insert(smithersAttempts).values(row).run(); // an attempt recorded already closed (rare)
    return;
  }
  await q.run(INSERT_RUNNING, row.runId, row.nodeId, row.iteration ?? 0, row.attempt, row.state, row.startedAtMs, row.metaJson ?? null);
}

const N = sqlNames(smithersNodes);

const FAIL_RUNNING_ATTEMPTS = `UPDATE ${A.$table} SET ${A.state} = 'failed', ${A.finishedAtMs} = ?, ${A.errorJson} = ?
  WHERE ${A.runId} = ? AND ${A.state} = 'running'
  RETURNING ${A.nodeId} AS "nodeId", ${A.iteration} AS iteration, ${A.attempt} AS attempt`;

const ANY_RUNNING_ATTEMPT = `SELECT 1 AS running FROM ${A.$table} WHERE ${A.runId} = ? AND ${A.state} = 'running' LIMIT 1`;

const FAIL_RUNNING_NODES = `UPDATE ${N.$table} SET ${N.state} = 'failed', ${N.updatedAtMs} = ? WHERE ${N.runId} = ? AND ${N.state} = 'running'`;

const FINISH_RUNNING = `UPDATE ${A.$table}
  SET ${A.state} = ?, ${A.finishedAtMs} = ?, ${A.errorJson} = ?, ${A.responseText} = ?, ${A.metaJson} = coalesce(?, ${A.metaJson}), ${A.cached} = ?,
    ${A.inputTokens} = ?, ${A.cachedInputTokens} = ?, ${A.outputTokens} = ?, ${A.costUsd} = ?, ${A.agentModel} = ?
  WHERE ${A.runId} = ? AND ${A.nodeId} = ? AND ${A.iteration} = ? AND ${A.attempt} = ? AND ${A.state} = 'running'`;

/**
 * Closes a `running` attempt; returns 0 when it was not running any more (taken over).
 * `cached`: its output came from `_smithers_cache` and its body did not run.
 */
export function finishAttempt(q: Sql, key: { runId: string; nodeId: string; iteration: number; attempt: number }, patch: AttemptClose): Promise<number> {
  return q.run(
    FINISH_RUNNING,
    patch.state ?? "finished",
    patch.finishedAtMs ?? null,
    patch.errorJson ?? null,
    patch.responseText ?? null,
    patch.metaJson ?? null,
    Boolean(patch.cached),
    patch.inputTokens ?? null,
    patch.cachedInputTokens ?? null,
    patch.outputTokens ?? null,
    patch.costUsd ?? null,
    patch.agentModel ?? null,
    key.runId,
    key.nodeId,
    key.iteration,
    key.attempt,
  );
}

export function listAttempts(db: SmithersDb, runId: string): Promise<AttemptRow[]> {
  return db.read("listAttempts", (q) =>
    q.orm.select().from(smithersAttempts).where(eq(smithersAttempts.runId, runId)).orderBy(smithersAttempts.startedAtMs).all(),
  );
}

/** What a resume reads of each attempt of the run: its key, outcome and usage. */
export type AttemptResumeRow = Pick<
  AttemptRow,
  "runId" | "nodeId" | "iteration" | "attempt" | "state" | "errorJson" | "inputTokens" | "cachedInputTokens" | "outputTokens" | "costUsd" | "agentModel"
>;

const ATTEMPTS_TO_RESUME = `SELECT ${A.runId} AS "runId", ${A.nodeId} AS "nodeId", ${A.iteration} AS iteration, ${A.attempt} AS attempt,
  ${A.state} AS state, ${A.errorJson} AS "errorJson", ${A.inputTokens} AS "inputTokens", ${A.cachedInputTokens} AS "cachedInputTokens",
  ${A.outputTokens} AS "outputTokens", ${A.costUsd} AS "costUsd", ${A.agentModel} AS "agentModel"
  FROM ${A.$table} WHERE ${A.runId} = ? ORDER BY ${A.startedAtMs}`;

/** listAttempts' rows (in its order) with only what a resume reads, as plain rows (see nodesToResume). */
export function attemptsToResume(db: SmithersDb, runId: string): Promise<AttemptResumeRow[]> {
  return db.read("attemptsToResume", (q) => q.all<AttemptResumeRow>(ATTEMPTS_TO_RESUME, runId));
}

/**
 * Ends what a run left `running` as `failed` (attempts and nodes), for a run that must end but
 * whose last step could not be stored.
 */
export async function failRunningWork(
  q: Sql,
  runId: string,
  nowMs: number,
  errorJson: string | (() => string),
): Promise<{ nodeId: string; iteration: number; attempt: number }[]> {
  // Plain prepared statements: this runs at the end of every run, where a Drizzle-built query
  // would cost a fresh process a millisecond or more to build. Given the error lazily, it looks
  // first and builds the error only for a run that has something to close (almost never).
  if (typeof errorJson === "function") {
    if ((await q.get(ANY_RUNNING_ATTEMPT, runId)) === undefined) return [];
    errorJson = errorJson();
  }
  const closed = await q.all<{ nodeId: string; iteration: number; attempt: number }>(FAIL_RUNNING_ATTEMPTS, nowMs, errorJson, runId);
  if (closed.length > 0) await q.run(FAIL_RUNNING_NODES, nowMs, runId);
  return closed;
}

/** Closes attempts a dead process left `running`; returns which. */
export function abandonRunningAttempts(
  q: Sql,
  runId: string,
  nowMs: number,
  errorJson: string,
): Promise<{ nodeId: string; iteration: number; attempt: number; agentPid: number | null; agentPidStart: string | null }[]> {
  return q.orm
    .update(smithersAttempts)
    .set({ state: "abandoned", finishedAtMs: nowMs, errorJson })
    .where(and(eq(smithersAttempts.runId, runId), eq(smithersAttempts.state, "running")))
    .returning({
      nodeId: smithersAttempts.nodeId,
      iteration: smithersAttempts.iteration,
      attempt: smithersAttempts.attempt,
      agentPid: smithersAttempts.agentPid,
      agentPidStart: smithersAttempts.agentPidStart,
    })
    .all();
}

type AttemptKey = { runId: string; nodeId: string; iteration: number; attempt: number };

/** The row of one attempt (its primary key). */
function attemptIs(key: AttemptKey) {
  return and(
    eq(smithersAttempts.runId, key.runId),
    eq(smithersAttempts.nodeId, key.nodeId),
    eq(smithersAttempts.iteration, key.iteration),
    eq(smithersAttempts.attempt, key.attempt),
  );
}

/** Records the agent subprocess a running attempt started (pid = its process group), for a resume to end it if the engine dies. */
export function recordAgentProcess(db: SmithersDb, key: AttemptKey, pid: number, startTime: string | undefined): Promise<void> {
  return db.write("recordAgentProcess", async (q) => {
    await q.orm
      .update(smithersAttempts)
      .set({ agentPid: pid, agentPidStart: startTime ?? null })
      .where(and(attemptIs(key), eq(smithersAttempts.state, "running")))
      .run();
  });
}

/** Nothing consumed (Usage, the contract's: tokens and cost summed over attempts, cost null while none had one). */
export const NO_USAGE: Usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: null };

export async function sumRunUsage(q: Sql, runId: string): Promise<Usage> {
  return (await sumUsageByRun(q, [runId])).get(runId) ?? { ...NO_USAGE };
}

/** sumRunUsage of each of `runIds`, in one grouped query (a run with no attempts has no entry). */
export async function sumUsageByRun(q: Sql, runIds: readonly string[]): Promise<Map<string, Usage>> {
  const byRun = new Map<string, Usage>();
  if (runIds.length === 0) return byRun;
  const rows = await q.orm
    .select({
      runId: smithersAttempts.runId,
      inputTokens: sql<number>`coalesce(sum(${smithersAttempts.inputTokens}), 0)`,
      cachedInputTokens: sql<number>`coalesce(sum(${smithersAttempts.cachedInputTokens}), 0)`,
      outputTokens: sql<number>`coalesce(sum(${smithersAttempts.outputTokens}), 0)`,
      costUsd: sql<number | null>`sum(${smithersAttempts.costUsd})`,
    })
    .from(smithersAttempts)
    .where(inArray(smithersAttempts.runId, [...runIds]))
    .groupBy(smithersAttempts.runId)
    .all();
  for (const r of rows) {
    byRun.set(r.runId, {
      inputTokens: Number(r.inputTokens),
      cachedInputTokens: Number(r.cachedInputTokens),
      outputTokens: Number(r.outputTokens),
      costUsd: r.costUsd === null ? null : Number(r.costUsd),
    });
  }
  return byRun;
}

/** Stores costs priced after the fact (attempts recorded without one, priced on resume). */
export async function setAttemptCosts(q: Sql, costs: (AttemptKey & { costUsd: number })[]): Promise<void> {
  for (const c of costs) {
    await q.orm.update(smithersAttempts).set({ costUsd: c.costUsd }).where(attemptIs(c)).run();
  }
}

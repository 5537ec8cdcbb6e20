/** `_smithers_runs`: one row per run; status, ownership and heartbeat. */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, asc, desc, eq, inArray, isNotNull, isNull, lt, lte, or, sql, type SQL } from "drizzle-orm/sql";
import { DEFAULT_HEARTBEAT_MS, STALE_RUN_THRESHOLD_MS, WAITING_STATUSES } from "../constants.ts";
import { smithersRuns } from "../internal-schema.ts";
import { perDialect, smaller, type Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { SmithersError } from "../../errors/index.ts";
import { isSame, notifyWorkers, sqlNames, unlockedRow } from "./shared.ts";

export type RunRow = InferSelectModel<typeof smithersRuns>;
export type NewRunRow = InferInsertModel<typeof smithersRuns>;

export function insertRun(db: SmithersDb, row: NewRunRow): Promise<void> {
  return db.write("insertRun", async (q) => {
    await insertRunRow(q, row);
  });
}

const R = sqlNames(smithersRuns);
/** The fields of `_smithers_runs`: every column holds text or an integer, stored as given, so no mapping is needed. */
const RUN_KEYS = Object.keys(R).filter((key) => key !== "$table") as (keyof RunRow)[];
const RUN_EXISTS = `SELECT 1 FROM ${R.$table} WHERE ${R.runId} = ?`;
// PostgreSQL: the row lock keeps a claim by another process from landing between this check and the commit.
const OWNS_RUN = perDialect(
  (dialect) => `SELECT 1 AS owned FROM ${R.$table} WHERE ${R.runId} = ? AND ${R.runtimeOwnerId} = ?${dialect === "postgres" ? " FOR UPDATE" : ""}`,
);
// PostgreSQL: held until the commit, so two processes resuming the run at once judge its owner one after the other.
const RUN_FIELDS = RUN_KEYS.map((key) => `${R[key]} AS "${key}"`).join(", ");
const LOCK_RUN = perDialect((dialect) => `SELECT ${RUN_FIELDS} FROM ${R.$table} WHERE ${R.runId} = ?${dialect === "postgres" ? " FOR UPDATE" : ""}`);
/**
 * The database's clock in ms since the epoch. Heartbeats, claims and staleness are judged by it,
 * so clock skew between the hosts of a PostgreSQL deployment cannot make a live run look stale.
 */
export const CLOCK_MS = perDialect((dialect) =>
  dialect === "postgres" ? "(extract(epoch from clock_timestamp()) * 1000)::bigint" : "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
);
const NOW_OR_CLOCK = perDialect((dialect) => `coalesce(${dialect === "postgres" ? "?::bigint" : "?"}, ${CLOCK_MS[dialect]})`);
const HEARTBEAT = perDialect(
  (dialect) => `UPDATE ${R.$table} SET ${R.heartbeatAtMs} = ${NOW_OR_CLOCK[dialect]} WHERE ${R.runId} = ? AND ${R.runtimeOwnerId} = ?`,
);

/**
 * What the database's clock says now: the time a process compares heartbeats and leases with
 * (an injected test clock aside). On SQLite, one host's clock, read the same way: SQLite runs in
 * this process, and its 'now' is the system clock Date.now() reads (CLOCK_MS rounds to the same
 * millisecond), so no turn of the queue is taken to ask it.
 */
export async function databaseNow(db: SmithersDb): Promise<number> {
  if (db.dialect === "sqlite") return Date.now();
  const row = await db.read("databaseNow", (q) => q.get<{ now: number | string }>(`SELECT ${CLOCK_MS[q.dialect]} AS now`));
  return Number(row?.now);
}

/** The set fields of `row` (undefined ones left out, as Drizzle does), as SQL column names and values. */
function runFields(row: Partial<NewRunRow>): { names: string[]; values: (string | number | null)[] } {
  const names: string[] = [];
  const values: (string | number | null)[] = [];
  for (const [field, value] of Object.entries(row)) {
    if (value === undefined) continue;
    if (!RUN_KEYS.includes(field as keyof RunRow)) throw new SmithersError("INVALID_INPUT", `_smithers_runs has no field "${field}"`, { field });
    names.push(R[field as keyof RunRow]);
    values.push(value as string | number | null);
  }
  return { names, values };
}

/**
 * Inserts a run row inside the caller's transaction. With `ifAbsent`, a run id already taken
 * (inserted by another process since the caller looked) inserts nothing and returns false.
 */
export async function insertRunRow(q: Sql, row: NewRunRow, o: { ifAbsent?: boolean } = {}): Promise<boolean> {
  const { names, values } = runFields(row);
  const onConflict = o.ifAbsent ? ` ON CONFLICT (${R.runId}) DO NOTHING` : "";
  return (await q.run(`INSERT INTO ${R.$table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})${onConflict}`, ...values)) > 0;
}

/** True when a run with this id is stored (inside the caller's transaction). */
export async function runExists(q: Sql, runId: string): Promise<boolean> {
  return (await q.get(RUN_EXISTS, runId)) !== undefined;
}

export function getRun(db: SmithersDb, runId: string): Promise<RunRow | undefined> {
  return db.read("getRun", (q) => readRun(q, runId));
}

/**
 * A run its own process drives: not the child of a `<Subflow>` (whose parent run resumes it). A
 * fork names its parent too, but runs on its own.
 */
const notSubflowChild = () => or(isNull(smithersRuns.parentRunId), isNotNull(smithersRuns.forkedFromFrame));

/** Runs forked from `runId` (`smithers fork`, replay), oldest first. */
export function listForks(db: SmithersDb, runId: string): Promise<RunRow[]> {
  return db.read("listForks", (q) =>
    q.orm
      .select()
      .from(smithersRuns)
      .where(and(eq(smithersRuns.parentRunId, runId), isNotNull(smithersRuns.forkedFromFrame)))
      .orderBy(asc(smithersRuns.createdAtMs), asc(smithersRuns.runId))
      .all(),
  );
}

/** The run's child runs (`<Subflow>`), their children, and so on, in no particular order (forks are not children). */
export function listDescendantRuns(db: SmithersDb, runId: string): Promise<RunRow[]> {
  return db.read("listDescendantRuns", (q) => readDescendantRuns(q, runId));
}

/** `listDescendantRuns` inside the caller's transaction. */
export async function readDescendantRuns(q: Sql, runId: string): Promise<RunRow[]> {
  const found: RunRow[] = [];
  let parents = [runId];
  for (let depth = 0; parents.length > 0 && depth < MAX_SUBFLOW_DEPTH; depth++) {
    const children: RunRow[] = await q.orm
      .select()
      .from(smithersRuns)
      .where(and(inArray(smithersRuns.parentRunId, parents), isNull(smithersRuns.forkedFromFrame)))
      .all();
    found.push(...children);
    parents = children.map((c) => c.runId);
  }
  return found;
}

/**
 * The run that carries on `runId`'s work: the run itself, or, when it ended `continued`, the last
 * run of its chain of continuations (followed through `next_run_id`). Undefined for an unknown run.
 */
export async function readChainEnd(q: Sql, runId: string): Promise<RunRow | undefined> {
  let run = await readRun(q, runId);
  for (let hops = 0; run?.status === "continued" && run.nextRunId && hops < MAX_CONTINUATIONS_FOLLOWED; hops++) {
    const next = await readRun(q, run.nextRunId);
    if (!next) break;
    run = next;
  }
  return run;
}

/** `readChainEnd` in a queue turn. */
export function getChainEnd(db: SmithersDb, runId: string): Promise<RunRow | undefined> {
  return db.read("getChainEnd", (q) => readChainEnd(q, runId));
}

/** How far readChainEnd follows next_run_id (a guard against a cycle written by hand). */
const MAX_CONTINUATIONS_FOLLOWED = 1_000_000;

/**
 * The run row inside the caller's transaction, kept from other writers until it commits: SQLite's
 * write lock does that already, PostgreSQL takes a row lock.
 */
export async function lockRun(q: Sql, runId: string): Promise<RunRow | undefined> {
  return q.get<RunRow>(LOCK_RUN[q.dialect], runId);
}

/** `getRun` inside the caller's transaction (under its write lock). */
export async function readRun(q: Sql, runId: string): Promise<RunRow | undefined> {
  return await q.orm.select().from(smithersRuns).where(eq(smithersRuns.runId, runId)).get();
}

export function updateRun(db: SmithersDb, runId: string, patch: Partial<Omit<NewRunRow, "runId">>): Promise<void> {
  return db.write("updateRun", async (q) => {
    await q.orm.update(smithersRuns).set(patch).where(eq(smithersRuns.runId, runId)).run();
  });
}

/** `updateRun` inside the caller's transaction. */
export async function setRunFields(q: Sql, runId: string, patch: Partial<Omit<NewRunRow, "runId">>): Promise<void> {
  const { names, values } = runFields(patch);
  if (names.length === 0) return;
  await q.run(`UPDATE ${R.$table} SET ${names.map((n) => `${n} = ?`).join(", ")} WHERE ${R.runId} = ?`, ...values, runId);
}

/**
 * Whether `ownerId` still owns the run. Inside a step's BEGIN IMMEDIATE transaction the answer
 * holds until the commit, so a process that lost the run writes nothing more to it.
 */
export async function ownsRun(q: Sql, runId: string, ownerId: string): Promise<boolean> {
  return (await q.get(OWNS_RUN[q.dialect], runId, ownerId)) !== undefined;
}

/**
 * Stamps the heartbeat (at `nowMs`, else the database's clock) while `ownerId` still owns the run;
 * false means another process took it over.
 */
export function heartbeatRun(db: SmithersDb, runId: string, ownerId: string, nowMs?: number): Promise<boolean> {
  return db.write("heartbeatRun", async (q) => (await q.run(HEARTBEAT[q.dialect], nowMs ?? null, runId, ownerId)) > 0);
}

const BEAT = perDialect((dialect) => `${HEARTBEAT[dialect]} RETURNING ${R.cancelRequestedAtMs} AS cancel`);

/** heartbeatRun that also tells whether someone asked the run to stop (`cancel_requested_at_ms`). */
export function heartbeat(db: SmithersDb, runId: string, ownerId: string, nowMs?: number): Promise<{ owned: boolean; cancelRequested: boolean }> {
  return db.write("heartbeatRun", async (q) => {
    const row = await q.get<{ cancel: number | null }>(BEAT[q.dialect], nowMs ?? null, runId, ownerId);
    return { owned: row !== undefined, cancelRequested: row?.cancel != null };
  });
}

/**
 * `running` with no heartbeat, or a heartbeat older than `staleAfterMs` before `nowMs`; with
 * `missedBeats`, also older than that many of the run's own beats (a worker with a 2 s lease does
 * not take over a live run whose owner beats every 5 s). Without it the threshold alone decides
 * (`supervise --stale-after-ms`: an operator who knows the owner is gone).
 */
function staleCondition(nowMs: number, staleAfterMs: number, missedBeats = 0): SQL | undefined {
  const { heartbeatAtMs, heartbeatMs } = smithersRuns;
  const old = lt(heartbeatAtMs, nowMs - staleAfterMs);
  const beats = missedBeats > 0 ? sql`${heartbeatAtMs} < ${nowMs} - ${missedBeats} * coalesce(${heartbeatMs}, ${DEFAULT_HEARTBEAT_MS})` : undefined;
  return and(eq(smithersRuns.status, "running"), or(isNull(heartbeatAtMs), and(old, beats)));
}

/**
 * Runs that claim to be running but whose owner stopped heartbeating, oldest heartbeat first.
 * A child run (a Subflow's, linked to its parent run) is left out: resuming its parent resumes it.
 */
export function listStaleRuns(
  db: SmithersDb,
  options: { nowMs: number; staleAfterMs?: number; missedBeats?: number; withWorkflowPathOnly?: boolean; limit?: number },
): Promise<RunRow[]> {
  return db.read("listStaleRuns", (q) =>
    q.orm
      .select()
      .from(smithersRuns)
      .where(
        and(
          staleCondition(options.nowMs, options.staleAfterMs ?? STALE_RUN_THRESHOLD_MS, options.missedBeats),
          notSubflowChild(),
          options.withWorkflowPathOnly ? isNotNull(smithersRuns.workflowPath) : undefined,
        ),
      )
      .orderBy(asc(smithersRuns.heartbeatAtMs), asc(smithersRuns.runId))
      .limit(options.limit ?? ALL_ROWS)
      .all(),
  );
}

/** A LIMIT that keeps every row. */
const ALL_ROWS = 2 ** 31 - 1;

export type ResumeClaim = {
  runId: string;
  /** The owner and heartbeat seen when the run was found stale. */
  expectedOwnerId: string | null;
  expectedHeartbeatAtMs: number | null;
  claimOwnerId: string;
  nowMs: number;
  staleAfterMs?: number;
  /** Also require this many of the run's own heartbeats missed (see staleCondition). */
  missedBeats?: number;
};

/**
 * Compare-and-swap: takes ownership of a stale run only if its owner and heartbeat are still
 * the ones observed and it is still stale, in one UPDATE. Of several supervisors racing for the
 * same run exactly one gets `true`; a row locked by another transaction gives `false` at once.
 * @example
 * if (await claimRunForResume(db, { runId, expectedOwnerId, expectedHeartbeatAtMs, claimOwnerId: me, nowMs })) resume(runId);
 */
export function claimRunForResume(db: SmithersDb, claim: ResumeClaim): Promise<boolean> {
  return db.write(
    "claimRunForResume",
    async (q) =>
      (
        await q.orm
          .update(smithersRuns)
          .set({ runtimeOwnerId: claim.claimOwnerId, heartbeatAtMs: claim.nowMs })
          .where(
            and(
              unlockedRow(q.dialect, smithersRuns.runId, claim.runId),
              isSame(q.dialect, smithersRuns.runtimeOwnerId, claim.expectedOwnerId),
              isSame(q.dialect, smithersRuns.heartbeatAtMs, claim.expectedHeartbeatAtMs),
              staleCondition(claim.nowMs, claim.staleAfterMs ?? STALE_RUN_THRESHOLD_MS, claim.missedBeats),
            ),
          )
          .returning({ runId: smithersRuns.runId })
          .all()
      ).length > 0,
  );
}

export type ResumeClaimRelease = {
  runId: string;
  claimOwnerId: string;
  restoreOwnerId: string | null;
  restoreHeartbeatAtMs: number | null;
};

/**
 * Gives a claim back (the supervisor decided not to resume): restores the previous owner and
 * heartbeat, but only while `claimOwnerId` still holds the run. Returns whether it did.
 */
export function releaseRunResumeClaim(db: SmithersDb, release: ResumeClaimRelease): Promise<boolean> {
  return db.write(
    "releaseRunResumeClaim",
    async (q) =>
      (
        await q.orm
          .update(smithersRuns)
          .set({ runtimeOwnerId: release.restoreOwnerId, heartbeatAtMs: release.restoreHeartbeatAtMs })
          .where(and(eq(smithersRuns.runId, release.runId), eq(smithersRuns.runtimeOwnerId, release.claimOwnerId)))
          .returning({ runId: smithersRuns.runId })
          .all()
      ).length > 0,
  );
}

/**
 * Takes a waiting run for resuming by compare-and-swap on its status, while it is still due at
 * `nowMs`: of several daemons exactly one wins. The status alone is not enough: a run another
 * daemon woke meanwhile may be waiting again in the same status, but not due.
 */
export function claimWaitingRun(db: SmithersDb, claim: { runId: string; fromStatus: string; claimOwnerId: string; nowMs: number }): Promise<boolean> {
  return db.write(
    "claimWaitingRun",
    async (q) =>
      (
        await q.orm
          .update(smithersRuns)
          .set({ status: "running", runtimeOwnerId: claim.claimOwnerId, heartbeatAtMs: claim.nowMs })
          .where(
            and(unlockedRow(q.dialect, smithersRuns.runId, claim.runId), eq(smithersRuns.status, claim.fromStatus), lte(smithersRuns.wakeAtMs, claim.nowMs)),
          )
          .returning({ runId: smithersRuns.runId })
          .all()
      ).length > 0,
  );
}

/** Hands a claimed waiting run back (its workflow could not be loaded): waiting again, for the next pass or a person. */
export function releaseWaitingClaim(
  db: SmithersDb,
  release: { runId: string; claimOwnerId: string; status: string; wakeAtMs: number | null },
): Promise<boolean> {
  // The wake time goes back too (a failed resume may have cleared it): the run stays due for the next pass.
  return db.write(
    "releaseWaitingClaim",
    async (q) =>
      (
        await q.orm
          .update(smithersRuns)
          .set({ status: release.status, wakeAtMs: release.wakeAtMs })
          .where(and(eq(smithersRuns.runId, release.runId), eq(smithersRuns.runtimeOwnerId, release.claimOwnerId), eq(smithersRuns.status, "running")))
          .returning({ runId: smithersRuns.runId })
          .all()
      ).length > 0,
  );
}

/**
 * Waiting runs that are due: a timer fired or a wait timed out, or a decision, answer or signal
 * they wait for arrived (markRunDue). Found by the (status, wake_at_ms) index, one range per
 * waiting status. Child runs are their parent's to resume.
 */
export function listDueRuns(db: SmithersDb, nowMs: number, limit = 500, withWorkflowPathOnly = false): Promise<RunRow[]> {
  return db.read("listDueRuns", (q) =>
    q.orm
      .select()
      .from(smithersRuns)
      .where(
        and(
          inArray(smithersRuns.status, [...WAITING_STATUSES]),
          lte(smithersRuns.wakeAtMs, nowMs),
          notSubflowChild(),
          withWorkflowPathOnly ? isNotNull(smithersRuns.workflowPath) : undefined,
        ),
      )
      .orderBy(asc(smithersRuns.wakeAtMs))
      .limit(limit)
      .all(),
  );
}

/**
 * Inside the transaction that stored what a waiting run waits for (a decision, an answer, a signal): makes the
 * run due now, so the daemon's next pass wakes it (idle workers on PostgreSQL hear of it at the commit). A run not waiting is left alone (a running one
 * reads it on its next step).
 */
export async function markRunDue(q: Sql, runId: string, nowMs: number): Promise<void> {
  // A waiting child run (a <Subflow>) is resumed by its parent: every waiting ancestor becomes due too.
  let id: string | null = runId;
  let due = false;
  for (let depth = 0; id !== null && depth < MAX_SUBFLOW_DEPTH; depth++) {
    const marked: { parentRunId: string | null; forkedFromFrame: number | null }[] = await q.orm
      .update(smithersRuns)
      .set({ wakeAtMs: sql.raw(smaller(q.dialect, `coalesce(${R.wakeAtMs}, ${Number(nowMs)})`, String(Number(nowMs)))) })
      .where(and(eq(smithersRuns.runId, id), inArray(smithersRuns.status, [...WAITING_STATUSES])))
      .returning({ parentRunId: smithersRuns.parentRunId, forkedFromFrame: smithersRuns.forkedFromFrame })
      .all();
    due ||= marked.length > 0;
    // A fork's parent is not waiting on it.
    id = marked[0]?.forkedFromFrame === null ? (marked[0]?.parentRunId ?? null) : null;
  }
  if (due) await notifyWorkers(q);
}

/** How far markRunDue follows parent_run_id (a guard against a cycle written by hand). */
const MAX_SUBFLOW_DEPTH = 64;

/**
 * Runs newest first (by creation time, then id), all of them or those in `status`; the
 * `_smithers_runs_created_idx` / `_smithers_runs_status_created_idx` indexes serve both orders;
 * a `workflow` filter is applied to what those indexes yield (the dashboard's filter, not a hot path).
 */
export function listRecentRuns(db: SmithersDb, options: { status?: string; workflow?: string; limit: number }): Promise<RunRow[]> {
  const where = [
    options.status === undefined ? undefined : eq(smithersRuns.status, options.status),
    options.workflow === undefined ? undefined : eq(smithersRuns.workflowName, options.workflow),
  ];
  return db.read("listRecentRuns", (q) =>
    q.orm
      .select()
      .from(smithersRuns)
      .where(and(...where))
      .orderBy(desc(smithersRuns.createdAtMs), desc(smithersRuns.runId))
      .limit(options.limit)
      .all(),
  );
}

/**
 * Concurrency slots and rate windows: rows claimed by compare-and-swap, like run leases. Every
 * claim, release and look at one key takes the key's lock first (PostgreSQL: a transaction-scoped
 * advisory lock; SQLite: BEGIN IMMEDIATE already is one), so a count and the insert it allows
 * happen as one step across every process sharing the database.
 */
import { smithersLimits, smithersRateUsage, smithersRuns, smithersSlots } from "../internal-schema.ts";
import type { LimitUse } from "../../contract/index.ts";
import type { Sql } from "../sql.ts";
import { lockRunSequence, sqlNames } from "./shared.ts";
import { markRunDue } from "./runs.ts";

const S = sqlNames(smithersSlots);
const U = sqlNames(smithersRateUsage);
const L = sqlNames(smithersLimits);
const R = sqlNames(smithersRuns);

/** The sliding window of per-minute limits. */
const WINDOW_MS = 60_000;

/** What one key allows (the engine checked it: whole numbers > 0). */
export type KeyLimit = { concurrency?: number; perMinute?: number; tokensPerMinute?: number };

export type SlotNode = { runId: string; nodeId: string; iteration: number };

export type ClaimRequest = SlotNode & { key: string; limit: KeyLimit; attempt: number; ownerId: string; nowMs: number };

/** `ok`: the task may start (its slot and request are recorded); else why not, and for a rate when it may. */
export type ClaimOutcome = { ok: true } | { ok: false; wait: "slot" } | { ok: false; wait: "rate"; untilMs: number };

/** Serialises every claim, release and look at `key` until the transaction ends. */
export const lockKey = (q: Sql, key: string) => lockRunSequence(q, "limits", key);

/**
 * Slots of `key` that count: held by a run that is `running` under the owner that claimed them.
 * A slot whose run was taken over (a dead owner) or ended no longer counts.
 */
const LIVE_HELD = `SELECT count(*) AS n FROM ${S.$table} s JOIN ${R.$table} r ON r.${R.runId} = s.${S.runId}
  WHERE s.${S.limitKey} = ? AND s.${S.state} = 'held' AND r.${R.status} = 'running' AND r.${R.runtimeOwnerId} = s.${S.ownerId}
  AND NOT (s.${S.runId} = ? AND s.${S.nodeId} = ? AND s.${S.iteration} = ?)`;

const UPSERT_SLOT = `INSERT INTO ${S.$table} (${S.runId}, ${S.nodeId}, ${S.iteration}, ${S.limitKey}, ${S.state}, ${S.ownerId}, ${S.sinceMs}) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (${S.runId}, ${S.nodeId}, ${S.iteration}) DO UPDATE SET ${S.limitKey} = excluded.${S.limitKey}, ${S.state} = excluded.${S.state},
  ${S.ownerId} = excluded.${S.ownerId}, ${S.sinceMs} = excluded.${S.sinceMs}`;

const UPSERT_USAGE = `INSERT INTO ${U.$table} (${U.runId}, ${U.nodeId}, ${U.iteration}, ${U.attempt}, ${U.kind}, ${U.limitKey}, ${U.atMs}, ${U.amount}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (${U.runId}, ${U.nodeId}, ${U.iteration}, ${U.attempt}, ${U.kind}) DO UPDATE SET ${U.atMs} = excluded.${U.atMs}, ${U.amount} = excluded.${U.amount}`;

/**
 * When `key`'s rate window lets one more start, or undefined when it does now: a 429's block,
 * then the request count, then the tokens of the last minute.
 */
async function rateWait(q: Sql, key: string, limit: KeyLimit, nowMs: number): Promise<number | undefined> {
  await q.run(`DELETE FROM ${U.$table} WHERE ${U.limitKey} = ? AND ${U.atMs} <= ?`, key, nowMs - WINDOW_MS);
  const blocked = await q.get<{ until: number | null }>(
    `SELECT max(${U.atMs}) AS until FROM ${U.$table} WHERE ${U.limitKey} = ? AND ${U.kind} = 'blocked'`,
    key,
  );
  if (blocked?.until != null && Number(blocked.until) > nowMs) return Number(blocked.until);
  if (limit.perMinute !== undefined) {
    const starts = await q.all<{ at: number }>(
      `SELECT ${U.atMs} AS at FROM ${U.$table} WHERE ${U.limitKey} = ? AND ${U.kind} = 'request' ORDER BY ${U.atMs} DESC LIMIT ?`,
      key,
      limit.perMinute,
    );
    // The oldest of the last perMinute starts leaves the window a minute after it.
    if (starts.length >= limit.perMinute) return Number(starts.at(-1)!.at) + WINDOW_MS;
  }
  if (limit.tokensPerMinute !== undefined) {
    const used = await q.all<{ at: number; amount: number }>(
      `SELECT ${U.atMs} AS at, ${U.amount} AS amount FROM ${U.$table} WHERE ${U.limitKey} = ? AND ${U.kind} = 'tokens' ORDER BY ${U.atMs}`,
      key,
    );
    let total = used.reduce((sum, row) => sum + Number(row.amount), 0);
    // Below the limit once enough of the oldest rows left the window.
    for (const row of used) {
      if (total < limit.tokensPerMinute) break;
      total -= Number(row.amount);
      if (total < limit.tokensPerMinute) return Number(row.at) + WINDOW_MS;
    }
  }
  return undefined;
}

/**
 * Inside a transaction: claims what `c.limit` asks of its key for one task start: a rate window
 * first, then a slot; nothing is recorded for a refusal. On success the slot is `held` and the
 * start counts in the key's window.
 */
export async function claim(q: Sql, c: ClaimRequest): Promise<ClaimOutcome> {
  await lockKey(q, c.key);
  const untilMs = await rateWait(q, c.key, c.limit, c.nowMs);
  if (untilMs !== undefined) return { ok: false, wait: "rate", untilMs };
  if (c.limit.concurrency !== undefined) {
    const held = await q.get<{ n: number }>(LIVE_HELD, c.key, c.runId, c.nodeId, c.iteration);
    if (Number(held?.n ?? 0) >= c.limit.concurrency) return { ok: false, wait: "slot" }; // its waiting row goes with the step that records the wait
    await q.run(UPSERT_SLOT, c.runId, c.nodeId, c.iteration, c.key, "held", c.ownerId, c.nowMs);
  }
  if (c.limit.perMinute !== undefined) await q.run(UPSERT_USAGE, c.runId, c.nodeId, c.iteration, c.attempt, "request", c.key, c.nowMs, 1);
  return { ok: true };
}

/** The node waits for a slot of `key`: a release makes its run due. */
export async function wait(q: Sql, node: SlotNode, key: string, ownerId: string, nowMs: number): Promise<void> {
  await q.run(UPSERT_SLOT, node.runId, node.nodeId, node.iteration, key, "waiting", ownerId, nowMs);
}

/**
 * Inside the transaction that settles a task's attempt: frees its slot and makes due the runs
 * waiting for one of `key`, as many as are free now (`concurrency` less the slots held).
 */
export async function release(q: Sql, node: SlotNode, key: string, concurrency: number, nowMs: number): Promise<void> {
  await lockKey(q, key);
  const freed = await q.run(
    `DELETE FROM ${S.$table} WHERE ${S.runId} = ? AND ${S.nodeId} = ? AND ${S.iteration} = ? AND ${S.state} = 'held'`,
    node.runId,
    node.nodeId,
    node.iteration,
  );
  if (freed > 0) await wakeWaiters(q, key, concurrency, nowMs);
}

/**
 * Makes due the runs waiting (`waiting-slot`) for a slot of `key`, one per free slot, the oldest
 * runs first; those already due count (they are about to look). A woken run that finds the slot
 * taken waits again; one that no longer needs it gives the wake on when it ends (clearRun). A run
 * whose row is locked is passed over (PostgreSQL): it is in the transaction that suspends it,
 * which looks for a free slot under this key's lock once this one commits, so waiting for its row
 * could only deadlock.
 */
async function wakeWaiters(q: Sql, key: string, concurrency: number, nowMs: number): Promise<void> {
  const held = await q.get<{ n: number }>(LIVE_HELD, key, "", "", -1);
  const free = concurrency - Number(held?.n ?? 0);
  if (free <= 0) return;
  const skipLocked = q.dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
  const waiting = await q.all<{ runId: string; wakeAtMs: number | null }>(
    `SELECT ${R.runId} AS "runId", ${R.wakeAtMs} AS "wakeAtMs" FROM ${R.$table} WHERE ${R.status} = 'waiting-slot'
     AND ${R.runId} IN (SELECT ${S.runId} FROM ${S.$table} WHERE ${S.limitKey} = ? AND ${S.state} = 'waiting')
     ORDER BY (${R.wakeAtMs} IS NULL), ${R.createdAtMs}, ${R.runId} LIMIT ?${skipLocked}`,
    key,
    free,
  );
  for (const w of waiting) if (w.wakeAtMs === null || Number(w.wakeAtMs) > nowMs) await markRunDue(q, w.runId, nowMs);
}

/** Records what an ended attempt's agent consumed under `key` (for `tokensPerMinute`). */
export async function recordTokens(q: Sql, node: SlotNode & { attempt: number }, key: string, tokens: number, atMs: number): Promise<void> {
  if (tokens > 0) await q.run(UPSERT_USAGE, node.runId, node.nodeId, node.iteration, node.attempt, "tokens", key, atMs, Math.round(tokens));
}

/** A provider's 429 asked to wait: no task of `key` starts before `untilMs`, in any process. */
export async function recordBlocked(q: Sql, node: SlotNode & { attempt: number }, key: string, untilMs: number): Promise<void> {
  await q.run(UPSERT_USAGE, node.runId, node.nodeId, node.iteration, node.attempt, "blocked", key, Math.round(untilMs), 0);
}

/** Inside a suspending run's last transaction: whether any of `keys` has a free slot now (then the run is due at once). */
export async function anyFree(q: Sql, keys: ReadonlyMap<string, number>): Promise<boolean> {
  for (const [key, concurrency] of keys) {
    await lockKey(q, key);
    const held = await q.get<{ n: number }>(LIVE_HELD, key, "", "", -1);
    if (Number(held?.n ?? 0) < concurrency) return true;
  }
  return false;
}

/**
 * A run's slot rows, once it ended (or only its held ones, when it stops to wait); for each key it
 * held or waited for, the runs waiting for it are woken as slots are free (`concurrencyOf` gives the
 * key's concurrency, undefined: none).
 */
export async function clearRun(
  q: Sql,
  runId: string,
  o: { keepWaiting: boolean; nowMs: number; concurrencyOf: (key: string) => number | undefined },
): Promise<void> {
  const which = o.keepWaiting ? ` AND ${S.state} = 'held'` : "";
  const keys = (await q.all<{ key: string }>(`SELECT DISTINCT ${S.limitKey} AS key FROM ${S.$table} WHERE ${S.runId} = ?${which}`, runId)).map((r) => r.key);
  if (keys.length === 0) return;
  keys.sort();
  for (const key of keys) await lockKey(q, key);
  await q.run(`DELETE FROM ${S.$table} WHERE ${S.runId} = ?${which}`, runId);
  for (const key of keys) {
    const concurrency = o.concurrencyOf(key);
    if (concurrency !== undefined) await wakeWaiters(q, key, concurrency, o.nowMs);
  }
}

/** Every row of a pruned run. */
export async function deleteRunRows(q: Sql, runId: string): Promise<void> {
  await q.run(`DELETE FROM ${S.$table} WHERE ${S.runId} = ?`, runId);
  await q.run(`DELETE FROM ${U.$table} WHERE ${U.runId} = ? AND ${U.kind} <> 'blocked'`, runId);
}

/** Stores the limits `key` is declared with (what `smithers limits` shows). */
export async function declare(q: Sql, key: string, limit: KeyLimit, nowMs: number): Promise<void> {
  await q.run(
    `INSERT INTO ${L.$table} (${L.limitKey}, ${L.concurrency}, ${L.perMinute}, ${L.tokensPerMinute}, ${L.updatedAtMs}) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (${L.limitKey}) DO UPDATE SET ${L.concurrency} = excluded.${L.concurrency}, ${L.perMinute} = excluded.${L.perMinute},
     ${L.tokensPerMinute} = excluded.${L.tokensPerMinute}, ${L.updatedAtMs} = excluded.${L.updatedAtMs}`,
    key,
    limit.concurrency ?? null,
    limit.perMinute ?? null,
    limit.tokensPerMinute ?? null,
    nowMs,
  );
}

/** Every key declared or in use, by key (`runId`: only the slots of that run). */
export async function readUse(q: Sql, nowMs: number, runId?: string): Promise<LimitUse[]> {
  const byRun = runId === undefined ? "" : ` AND s.${S.runId} = ?`;
  const slots = await q.all<{ key: string; state: string; n: number }>(
    `SELECT s.${S.limitKey} AS key, s.${S.state} AS state, count(*) AS n FROM ${S.$table} s JOIN ${R.$table} r ON r.${R.runId} = s.${S.runId}
     WHERE ((s.${S.state} = 'held' AND r.${R.status} = 'running' AND r.${R.runtimeOwnerId} = s.${S.ownerId})
       OR (s.${S.state} = 'waiting' AND r.${R.status} IN ('running', 'waiting-slot')))${byRun}
     GROUP BY s.${S.limitKey}, s.${S.state}`,
    ...(runId === undefined ? [] : [runId]),
  );
  const rates =
    runId === undefined
      ? await q.all<{ key: string; kind: string; total: number; until: number | null }>(
          `SELECT ${U.limitKey} AS key, ${U.kind} AS kind, sum(${U.amount}) AS total, max(${U.atMs}) AS until FROM ${U.$table}
           WHERE ${U.atMs} > ? GROUP BY ${U.limitKey}, ${U.kind}`,
          nowMs - WINDOW_MS,
        )
      : [];
  const declared =
    runId === undefined
      ? await q.all<{ key: string; c: number | null; pm: number | null; tpm: number | null }>(
          `SELECT ${L.limitKey} AS key, ${L.concurrency} AS c, ${L.perMinute} AS pm, ${L.tokensPerMinute} AS tpm FROM ${L.$table}`,
        )
      : [];
  const out = new Map<string, LimitUse>();
  const entry = (key: string) => {
    let e = out.get(key);
    if (!e)
      out.set(
        key,
        (e = {
          key,
          concurrency: null,
          perMinute: null,
          tokensPerMinute: null,
          held: 0,
          waiting: 0,
          requestsLastMinute: 0,
          tokensLastMinute: 0,
          blockedUntilMs: null,
        }),
      );
    return e;
  };
  for (const d of declared) Object.assign(entry(d.key), { concurrency: num(d.c), perMinute: num(d.pm), tokensPerMinute: num(d.tpm) });
  for (const s of slots) entry(s.key)[s.state === "held" ? "held" : "waiting"] = Number(s.n);
  for (const r of rates) {
    const e = entry(r.key);
    if (r.kind === "request") e.requestsLastMinute = Number(r.total);
    else if (r.kind === "tokens") e.tokensLastMinute = Number(r.total);
    else if (r.until !== null && Number(r.until) > nowMs) e.blockedUntilMs = Number(r.until);
  }
  return [...out.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

const num = (v: number | null) => (v === null ? null : Number(v));

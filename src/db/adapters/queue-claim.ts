/**
 * Which queued request a worker claims next: the highest priority first; within it, the tenant
 * whose request was claimed longest ago (`_smithers_queue_tenants`); within the tenant, the oldest
 * request. So one tenant's 10,000 queued runs delay another tenant's one run by at most one claim
 * per worker. A request whose not-before time (a debounced start) is still ahead is not claimable.
 *
 * The pick is three indexed reads (`_smithers_queue_claim_idx`: priority, tenant, enqueued_at_ms,
 * run_id), never a sort of the whole queue: the top priority, the tenants waiting at it (a loose
 * index scan, one probe per tenant), and that tenant's oldest claimable request.
 */
import { eq } from "drizzle-orm/sql";
import { smithersQueue, smithersQueueTenants } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import type { Sql } from "../sql.ts";
import { immediate, sqlNames } from "./shared.ts";
import type { QueueRow } from "./queue.ts";

const Q = sqlNames(smithersQueue);
const T = sqlNames(smithersQueueTenants);

/**
 * A request no worker holds (never claimed, its claim's lease ran out, or claimed by a version
 * before leases), or one the claiming worker holds itself: it is not executing it (those are in
 * `skip`), so an earlier try failed on the database, and the claim is taken up again at once
 * instead of sitting idle until its lease runs out. And its not-before time has come (written
 * with coalesce, not an OR: SQLite would otherwise plan the OR on the not-before index, every row
 * with no not-before time, and sort them all, instead of walking the claim index).
 */
const CLAIMABLE = `(${Q.startedAtMs} IS NULL OR ${Q.leaseExpiresAtMs} IS NULL OR ${Q.leaseExpiresAtMs} < ? OR ${Q.claimedBy} = ?) AND coalesce(${Q.notBeforeMs}, 0) <= ?`;

export type Claim = {
  workerId: string;
  nowMs: number;
  leaseMs: number;
  /** Only requests for these workflows (queue names); all when undefined. */
  workflows?: readonly string[];
  /** Requests this worker passes over: those it is executing, and those whose workflow it could not load a moment ago. */
  skip?: readonly string[];
};

/** The WHERE text and its parameters for the requests `c` may claim. */
function claimable(c: Claim): { where: string; params: unknown[] } {
  let where = CLAIMABLE;
  const params: unknown[] = [c.nowMs, c.workerId, c.nowMs];
  if (c.workflows !== undefined) {
    where += ` AND ${Q.workflowName} IN (${c.workflows.map(() => "?").join(", ")})`;
    params.push(...c.workflows);
  }
  if (c.skip !== undefined && c.skip.length > 0) {
    where += ` AND ${Q.runId} NOT IN (${c.skip.map(() => "?").join(", ")})`;
    params.push(...c.skip);
  }
  return { where, params };
}

/** The distinct tenants with a request at priority ?, one index probe each (a loose index scan; recursive CTEs on both dialects). */
const TENANTS_AT = `WITH RECURSIVE ts(tenant) AS (
    SELECT min(${Q.tenant}) FROM ${Q.$table} WHERE ${Q.priority} = ?
    UNION ALL
    SELECT (SELECT min(${Q.tenant}) FROM ${Q.$table} WHERE ${Q.priority} = ? AND ${Q.tenant} > ts.tenant) FROM ts WHERE ts.tenant IS NOT NULL
  )`;

/** The next tenant's oldest claimable request at the top priority (undefined: nothing claimable). */
async function pick(q: Sql, c: Claim): Promise<{ runId: string; tenant: string } | undefined> {
  const { where, params } = claimable(c);
  const lock = q.dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
  const top = await q.get<{ p: number | string }>(`SELECT ${Q.priority} AS p FROM ${Q.$table} WHERE ${where} ORDER BY ${Q.priority} DESC LIMIT 1`, ...params);
  if (!top) return undefined;
  const priority = Number(top.p);
  const next = await q.get<{ tenant: string }>(
    `${TENANTS_AT}
    SELECT ts.tenant AS tenant FROM ts LEFT JOIN ${T.$table} s ON s.${T.tenant} = ts.tenant
    WHERE ts.tenant IS NOT NULL AND EXISTS (SELECT 1 FROM ${Q.$table} WHERE ${Q.priority} = ? AND ${Q.tenant} = ts.tenant AND ${where})
    ORDER BY coalesce(s.${T.lastClaimSeq}, 0), ts.tenant LIMIT 1`,
    priority,
    priority,
    priority,
    ...params,
  );
  if (next) {
    const row = await q.get<{ runId: string }>(
      `SELECT ${Q.runId} AS "runId" FROM ${Q.$table} WHERE ${Q.priority} = ? AND ${Q.tenant} = ? AND ${where} ORDER BY ${Q.enqueuedAtMs}, ${Q.runId} LIMIT 1${lock}`,
      priority,
      next.tenant,
      ...params,
    );
    if (row) return { runId: row.runId, tenant: next.tenant };
  }
  // PostgreSQL: other workers locked that tenant's claimable requests since the reads above; take any other.
  const any = await q.get<{ runId: string; tenant: string }>(
    `SELECT ${Q.runId} AS "runId", ${Q.tenant} AS tenant FROM ${Q.$table} WHERE ${where} ORDER BY ${Q.priority} DESC, ${Q.enqueuedAtMs}, ${Q.runId} LIMIT 1${lock}`,
    ...params,
  );
  return any;
}

/**
 * Claims the next request (see the module's comment) with a lease until `nowMs + leaseMs`, and
 * returns it (undefined when none is claimable). On PostgreSQL the row is locked and rows other
 * workers are claiming are skipped (FOR UPDATE SKIP LOCKED), so concurrent claims never block each
 * other or take the same request; on SQLite the write lock serialises them.
 */
export function claimNext(db: SmithersDb, c: Claim): Promise<QueueRow | undefined> {
  return immediate(db, "claimQueuedRun", async (q) => {
    if (c.workflows !== undefined && c.workflows.length === 0) return undefined;
    const next = await pick(q, c);
    if (!next) return undefined;
    // The tenant goes to the back of the turn order: one more than the latest claim's number.
    await q.run(
      `INSERT INTO ${T.$table} (${T.tenant}, ${T.lastClaimSeq}) VALUES (?, (SELECT coalesce(max(${T.lastClaimSeq}), 0) + 1 FROM ${T.$table}))
       ON CONFLICT (${T.tenant}) DO UPDATE SET ${T.lastClaimSeq} = excluded.${T.lastClaimSeq}`,
      next.tenant,
    );
    return q.orm
      .update(smithersQueue)
      .set({ startedAtMs: c.nowMs, claimedBy: c.workerId, leaseExpiresAtMs: c.nowMs + c.leaseMs })
      .where(eq(smithersQueue.runId, next.runId))
      .returning()
      .get();
  });
}

/**
 * The earliest not-before time still ahead of `nowMs` among waiting requests (undefined: none),
 * so an idle worker wakes then instead of a poll interval later.
 */
export async function nextNotBefore(db: SmithersDb, nowMs: number): Promise<number | undefined> {
  const row = await db.read("nextQueuedNotBefore", (q) =>
    q.get<{ at: number | string | null }>(`SELECT min(${Q.notBeforeMs}) AS at FROM ${Q.$table} WHERE ${Q.notBeforeMs} > ? AND ${Q.startedAtMs} IS NULL`, nowMs),
  );
  return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
}

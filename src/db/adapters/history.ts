/**
 * The row work of fork and rewind (src/engine/history/time-travel.ts): copying a run's rows to a new run
 * and removing what came after a frame, by (node, iteration) keys, inside the caller's
 * transaction. Output tables are addressed by name (their columns read from the database), so
 * this needs no workflow.
 */
import { quoteIdentifier } from "../ddl.ts";
import {
  smithersApprovals,
  smithersFrames,
  smithersHumanRequests,
  smithersNodes,
  smithersRalph,
  smithersSignals,
  smithersToolCalls,
} from "../internal-schema.ts";
import { liveColumns } from "../schema-signature.ts";
import type { Sql } from "../sql.ts";
import { setLoopState } from "./ralph.ts";
import { insertRows, insertSql, sqlNames } from "./shared.ts";
import type { NodeRow } from "./nodes.ts";

export type NodeKey = { nodeId: string; iteration: number };

/** Pairs per statement: well under both databases' limits on parameters. */
const CHUNK = 400;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** `(node_id = ? AND iteration = ?) OR …` for the keys (node_id alone where the table has no iteration column). */
function keyFilter(keys: readonly NodeKey[], nodeCol: string, iterationCol: string | undefined): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const parts = keys.map((k) => {
    params.push(k.nodeId);
    if (iterationCol === undefined) return `${nodeCol} = ?`;
    params.push(k.iteration);
    return `(${nodeCol} = ? AND ${iterationCol} = ?)`;
  });
  return { text: parts.join(" OR "), params };
}

/** Node ids grouped by iteration (one group, iteration undefined, for a table without the column). */
function byIteration(keys: readonly NodeKey[], hasIteration: boolean): Map<number | undefined, string[]> {
  const groups = new Map<number | undefined, string[]>();
  for (const k of keys) {
    const at = hasIteration ? k.iteration : undefined;
    const list = groups.get(at) ?? [];
    list.push(k.nodeId);
    groups.set(at, list);
  }
  return groups;
}

/** An output table's columns as the database has them; empty when the table does not exist. */
async function tableShape(q: Sql, table: string) {
  const columns = await liveColumns(q, table);
  return { columns, exists: columns.length > 0, hasIteration: columns.some((c) => c.name === "iteration") };
}

/**
 * Copies the rows of `keys` in output table `table` from run `fromRunId` to `toRunId`. A custom
 * table's own single-column key (an autoincrement id) is left for the database to assign.
 * Returns the rows copied.
 */
export async function copyOutputRows(q: Sql, table: string, fromRunId: string, toRunId: string, keys: readonly NodeKey[]): Promise<number> {
  const shape = await tableShape(q, table);
  if (!shape.exists || keys.length === 0) return 0;
  const ownKey = shape.columns.filter((c) => c.primaryKey);
  const kept = shape.columns.filter((c) => c.name !== "run_id" && !(ownKey.length === 1 && c.primaryKey && c.name !== "node_id"));
  const names = kept.map((c) => quoteIdentifier(c.name)).join(", ");
  let copied = 0;
  // By iteration, node ids in an IN list: the table's (run_id, node_id, iteration) key serves each statement.
  for (const [iteration, ids] of byIteration(keys, shape.hasIteration)) {
    for (const part of chunks(ids)) {
      const iterationFilter = iteration === undefined ? "" : " AND iteration = ?";
      copied += await q.run(
        `INSERT INTO ${quoteIdentifier(table)} (run_id, ${names}) SELECT ?, ${names} FROM ${quoteIdentifier(table)}
          WHERE run_id = ?${iterationFilter} AND node_id IN (${part.map(() => "?").join(", ")})`,
        toRunId,
        fromRunId,
        ...(iteration === undefined ? [] : [iteration]),
        ...part,
      );
    }
  }
  return copied;
}

/** The run's rows in output table `table` (every column), for an audit record. */
export async function readOutputTableRows(q: Sql, table: string, runId: string): Promise<Record<string, unknown>[]> {
  const shape = await tableShape(q, table);
  if (!shape.exists) return [];
  return q.all(`SELECT * FROM ${quoteIdentifier(table)} WHERE run_id = ?`, runId);
}

/** Deletes the run's rows of `keys` in output table `table`; returns how many went. */
export async function deleteOutputRows(q: Sql, table: string, runId: string, keys: readonly NodeKey[]): Promise<number> {
  const shape = await tableShape(q, table);
  if (!shape.exists || keys.length === 0) return 0;
  let removed = 0;
  for (const part of chunks(keys)) {
    const where = keyFilter(part, "node_id", shape.hasIteration ? "iteration" : undefined);
    removed += await q.run(`DELETE FROM ${quoteIdentifier(table)} WHERE run_id = ? AND (${where.text})`, runId, ...where.params);
  }
  return removed;
}

const N = sqlNames(smithersNodes);
const NODE_FIELDS = ["runId", "nodeId", "iteration", "state", "lastAttempt", "updatedAtMs", "outputTable", "label", "defSig"] as const;
const INSERT_NODE = insertSql(smithersNodes, [...NODE_FIELDS]);

/** Inserts node rows (a new run's: no conflict expected), many per statement. */
export async function insertNodeRows(q: Sql, rows: readonly Omit<NodeRow, "wakeAtMs" | "waitJson" | "errorJson">[]): Promise<void> {
  await insertRows(
    q,
    INSERT_NODE,
    rows.map((r) => [r.runId, r.nodeId, r.iteration, r.state, r.lastAttempt, r.updatedAtMs, r.outputTable, r.label, r.defSig]),
  );
}

/**
 * Sets the run's node rows of `keys` back to `pending`, as if never started, but for their
 * attempt count: attempts are history, and the next one is numbered after them.
 */
export async function resetNodeRows(q: Sql, runId: string, keys: readonly NodeKey[], nowMs: number): Promise<void> {
  for (const part of chunks(keys)) {
    const where = keyFilter(part, N.nodeId, N.iteration);
    await q.run(
      `UPDATE ${N.$table} SET ${N.state} = 'pending', ${N.errorJson} = NULL, ${N.wakeAtMs} = NULL, ${N.waitJson} = NULL, ${N.updatedAtMs} = ?
        WHERE ${N.runId} = ? AND (${where.text})`,
      nowMs,
      runId,
      ...where.params,
    );
  }
}

const F = sqlNames(smithersFrames);

/** The run's frames after `frameNo` as stored, for an audit record. */
export function framesAfter(q: Sql, runId: string, frameNo: number): Promise<Record<string, unknown>[]> {
  return q.all(
    `SELECT ${F.frameNo} AS "frameNo", ${F.createdAtMs} AS "createdAtMs", ${F.encoding} AS "encoding", ${F.xmlJson} AS "body", ${F.xmlHash} AS "hash"
      FROM ${F.$table} WHERE ${F.runId} = ? AND ${F.frameNo} > ? ORDER BY ${F.frameNo}`,
    runId,
    frameNo,
  );
}

/** Deletes the run's frames after `frameNo`; returns how many went. */
export function deleteFramesAfter(q: Sql, runId: string, frameNo: number): Promise<number> {
  return q.run(`DELETE FROM ${F.$table} WHERE ${F.runId} = ? AND ${F.frameNo} > ?`, runId, frameNo);
}

const L = sqlNames(smithersRalph);

/** Replaces the run's loop states with `loops`. */
export async function replaceLoopStates(q: Sql, runId: string, loops: ReadonlyMap<string, { iteration: number; done: boolean }>, nowMs: number): Promise<void> {
  await q.run(`DELETE FROM ${L.$table} WHERE ${L.runId} = ?`, runId);
  for (const [ralphId, l] of loops) await setLoopState(q, { runId, ralphId, iteration: l.iteration, done: l.done, updatedAtMs: nowMs });
}

const A = sqlNames(smithersApprovals);
const H = sqlNames(smithersHumanRequests);
const S = sqlNames(smithersSignals);

/** Removes the approvals and human requests of `keys` (returned, for an audit record) and frees the signals they had taken. */
export async function clearWaitsOf(
  q: Sql,
  runId: string,
  keys: readonly NodeKey[],
): Promise<{ approvals: unknown[]; humanRequests: unknown[]; signalsReleased: number }> {
  const approvals: unknown[] = [];
  const humanRequests: unknown[] = [];
  let signalsReleased = 0;
  for (const part of chunks(keys)) {
    const a = keyFilter(part, A.nodeId, A.iteration);
    approvals.push(...(await q.all(`SELECT * FROM ${A.$table} WHERE ${A.runId} = ? AND (${a.text})`, runId, ...a.params)));
    await q.run(`DELETE FROM ${A.$table} WHERE ${A.runId} = ? AND (${a.text})`, runId, ...a.params);
    const h = keyFilter(part, H.nodeId, H.iteration);
    humanRequests.push(...(await q.all(`SELECT * FROM ${H.$table} WHERE ${H.runId} = ? AND (${h.text})`, runId, ...h.params)));
    await q.run(`DELETE FROM ${H.$table} WHERE ${H.runId} = ? AND (${h.text})`, runId, ...h.params);
    const s = keyFilter(part, S.consumedByNodeId, S.consumedByIteration);
    signalsReleased += await q.run(
      `UPDATE ${S.$table} SET ${S.consumedByNodeId} = NULL, ${S.consumedByIteration} = NULL, ${S.consumedAtMs} = NULL WHERE ${S.runId} = ? AND (${s.text})`,
      runId,
      ...s.params,
    );
  }
  return { approvals, humanRequests, signalsReleased };
}

const T = sqlNames(smithersToolCalls);

/** Marks one journaled call `reverted` (its revert ran), so no later call replays its result. */
export function markToolCallReverted(q: Sql, call: { runId: string; nodeId: string; iteration: number; attempt: number; seq: number }): Promise<number> {
  return q.run(
    `UPDATE ${T.$table} SET ${T.status} = 'reverted' WHERE ${T.runId} = ? AND ${T.nodeId} = ? AND ${T.iteration} = ? AND ${T.attempt} = ? AND ${T.seq} = ?`,
    call.runId,
    call.nodeId,
    call.iteration,
    call.attempt,
    call.seq,
  );
}

/** The run's side-effect calls whose effect stands or may stand (`succeeded`, or `started` with no outcome), in call order. */
export function standingSideEffects(q: Sql, runId: string) {
  return q.all<{
    nodeId: string;
    iteration: number;
    attempt: number;
    seq: number;
    toolName: string;
    status: string;
    inputJson: string | null;
    outputJson: string | null;
    idempotencyKey: string | null;
    startedAtMs: number;
  }>(
    `SELECT ${T.nodeId} AS "nodeId", ${T.iteration} AS "iteration", ${T.attempt} AS "attempt", ${T.seq} AS "seq", ${T.toolName} AS "toolName",
       ${T.status} AS "status", ${T.inputJson} AS "inputJson", ${T.outputJson} AS "outputJson", ${T.idempotencyKey} AS "idempotencyKey",
       ${T.startedAtMs} AS "startedAtMs"
     FROM ${T.$table} WHERE ${T.runId} = ? AND ${T.sideEffect} = ? AND ${T.status} IN ('succeeded', 'started')
     ORDER BY ${T.startedAtMs}, ${T.attempt}, ${T.seq}`,
    runId,
    q.dialect === "postgres" ? true : 1, // a boolean column on PostgreSQL, 0/1 on SQLite
  );
}

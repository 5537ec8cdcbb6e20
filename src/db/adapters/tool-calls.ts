/**
 * `_smithers_tool_calls`: one row per tool invocation. The row is written as `started` (the
 * intent) before the tool runs and finished exactly once, so after a crash a `started` row with
 * `side_effect` set means "outcome unknown" rather than "never happened".
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, desc, eq, sql, type SQL } from "drizzle-orm/sql";
import type { ToolCallStatus } from "../constants.ts";
import { smithersToolCalls } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { immediate, lockRunSequence } from "./shared.ts";

export type ToolCallRow = InferSelectModel<typeof smithersToolCalls>;

export type AttemptKey = { runId: string; nodeId: string; iteration?: number; attempt: number };
export type ToolCallKey = AttemptKey & { seq: number };

export type ToolCallStart = AttemptKey & {
  toolName: string;
  input?: unknown;
  startedAtMs: number;
  sideEffect?: boolean;
  idempotencyKey?: string | null;
};

export type ToolCallFinish = ToolCallKey & { finishedAtMs: number } & ({ output: unknown; error?: never } | { error: unknown; output?: never });

const attemptFilter = (key: AttemptKey) => [
  eq(smithersToolCalls.runId, key.runId),
  eq(smithersToolCalls.nodeId, key.nodeId),
  eq(smithersToolCalls.iteration, key.iteration ?? 0),
  eq(smithersToolCalls.attempt, key.attempt),
];

/**
 * Records the intent to call a tool and returns its seq within the attempt (0, 1, 2 …). A
 * side-effect intent commits with a full fsync in every durability mode: the record must
 * survive a power cut before the irreversible act it announces (so it cannot join an open
 * transaction: DB_NESTED_TRANSACTION).
 * @example
 * const seq = await startToolCall(db, { runId, nodeId, attempt: 1, toolName: "bash", input, startedAtMs: Date.now() });
 */
export function startToolCall(db: SmithersDb, call: ToolCallStart): Promise<number> {
  const record = (q: Sql) => insertCall(q, call, { status: "started" });
  return call.sideEffect ? db.durableTransaction("startToolCall", record) : immediate(db, "startToolCall", record);
}

export type ToolCallRecord = ToolCallStart & { finishedAtMs: number } & (
    | { status: "succeeded" | "replayed"; output: unknown; error?: never }
    | { status: "failed"; error: unknown; output?: never }
  );

/**
 * Records a call that is over when it is recorded, in one write, and returns its seq: a
 * `replayed` call (a side-effect call whose result an earlier attempt recorded: nothing ran) or
 * one refused before it could run (bad input). Nothing irreversible follows, so no fsync.
 * @example
 * await recordToolCall(db, { runId, nodeId, attempt: 2, toolName: "write", input, startedAtMs: t, finishedAtMs: t, status: "replayed", output: "ok" });
 */
export function recordToolCall(db: SmithersDb, call: ToolCallRecord): Promise<number> {
  const failed = call.status === "failed";
  return immediate(db, "recordToolCall", (q) =>
    insertCall(q, call, {
      status: call.status,
      finishedAtMs: call.finishedAtMs,
      outputJson: failed ? null : JSON.stringify(call.output ?? null),
      errorJson: failed ? JSON.stringify(call.error) : null,
    }),
  );
}

/** Inserts a call at the attempt's next seq (0, 1, 2 …), inside the caller's transaction. */
async function insertCall(
  q: Sql,
  call: ToolCallStart,
  outcome: Pick<ToolCallRow, "status"> & Partial<Pick<ToolCallRow, "finishedAtMs" | "outputJson" | "errorJson">>,
): Promise<number> {
  // Parallel calls of one attempt number themselves one at a time (see lockRunSequence). The key
  // is JSON, not NUL-separated: PostgreSQL text cannot hold a NUL byte.
  await lockRunSequence(q, "toolCalls", JSON.stringify([call.runId, call.nodeId, call.iteration ?? 0, call.attempt]));
  const next = await q.orm
    .select({ next: sql<number>`coalesce(max(${smithersToolCalls.seq}), -1) + 1` })
    .from(smithersToolCalls)
    .where(and(...attemptFilter(call)))
    .get();
  const seq = Number(next?.next ?? 0);
  await q.orm
    .insert(smithersToolCalls)
    .values({
      runId: call.runId,
      nodeId: call.nodeId,
      iteration: call.iteration ?? 0,
      attempt: call.attempt,
      seq,
      toolName: call.toolName,
      inputJson: call.input === undefined ? null : JSON.stringify(call.input),
      startedAtMs: call.startedAtMs,
      sideEffect: call.sideEffect ?? false,
      idempotencyKey: call.idempotencyKey ?? null,
      ...outcome,
    })
    .run();
  return seq;
}

/** Stores the result or error of a started call; returns false if it was already finished. */
export function finishToolCall(db: SmithersDb, finish: ToolCallFinish): Promise<boolean> {
  const failed = "error" in finish && finish.error !== undefined;
  const status: ToolCallStatus = failed ? "failed" : "succeeded";
  return db.write(
    "finishToolCall",
    async (q) =>
      (
        await q.orm
          .update(smithersToolCalls)
          .set({
            status,
            finishedAtMs: finish.finishedAtMs,
            outputJson: failed ? null : JSON.stringify(finish.output ?? null),
            errorJson: failed ? JSON.stringify(finish.error) : null,
          })
          .where(and(...attemptFilter(finish), eq(smithersToolCalls.seq, finish.seq), eq(smithersToolCalls.status, "started")))
          .returning({ seq: smithersToolCalls.seq })
          .all()
      ).length > 0,
  );
}

/** The most recent call made with this idempotency key, if any (its status tells the outcome). */
export function findToolCallByIdempotencyKey(db: SmithersDb, idempotencyKey: string): Promise<ToolCallRow | undefined> {
  return db.read("findToolCallByIdempotencyKey", (q) =>
    q.orm
      .select()
      .from(smithersToolCalls)
      .where(eq(smithersToolCalls.idempotencyKey, idempotencyKey))
      .orderBy(desc(smithersToolCalls.startedAtMs), desc(smithersToolCalls.attempt), desc(smithersToolCalls.seq))
      .limit(1)
      .get(),
  );
}

/** A run's tool calls (optionally of one node / iteration / attempt) in call order. */
export function listToolCalls(db: SmithersDb, filter: { runId: string; nodeId?: string; iteration?: number; attempt?: number }): Promise<ToolCallRow[]> {
  const conditions: SQL[] = [eq(smithersToolCalls.runId, filter.runId)];
  if (filter.nodeId !== undefined) conditions.push(eq(smithersToolCalls.nodeId, filter.nodeId));
  if (filter.iteration !== undefined) conditions.push(eq(smithersToolCalls.iteration, filter.iteration));
  if (filter.attempt !== undefined) conditions.push(eq(smithersToolCalls.attempt, filter.attempt));
  return db.read("listToolCalls", (q) =>
    q.orm
      .select()
      .from(smithersToolCalls)
      .where(and(...conditions))
      .orderBy(asc(smithersToolCalls.nodeId), asc(smithersToolCalls.iteration), asc(smithersToolCalls.attempt), asc(smithersToolCalls.seq))
      .all(),
  );
}

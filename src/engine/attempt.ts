/**
 * The actuator's core: one attempt of one task. Records the attempt before the work starts
 * (write before do), runs the work with timeout and cancellation, validates the result, and
 * commits the output row together with the node and attempt states in one transaction.
 */
import { z } from "zod";
import { generateStructured } from "../agents/index.ts";
import type { Drizzle, SmithersDb } from "../db/index.ts";
import { finishAttempt, insertAttempt } from "../db/adapters/attempts.ts";
import { upsertNode } from "../db/adapters/nodes.ts";
import { writeOutputRow, type OutputTableInfo } from "../db/output-tables.ts";
import { errorToJson, FatalError, RetryableError, SmithersError } from "../errors/index.ts";
import type { PlanTask, TaskRunContext } from "../jsx/index.ts";
import { createSideEffect, type SideEffectScope } from "./side-effect.ts";

export type AttemptOutcome =
  /** `row`: the output row as stored (generated tables), for the in-memory snapshot. */
  | { kind: "finished"; durationMs: number; row?: Record<string, unknown> }
  | { kind: "failed"; error: SmithersError; retryable: boolean; retryAfterMs?: number; durationMs: number }
  | { kind: "cancelled"; durationMs: number };

export type AttemptInput = {
  db: SmithersDb;
  runId: string;
  task: PlanTask;
  info: OutputTableInfo;
  attempt: number;
  input: unknown;
  /** Aborted when the run is cancelled. */
  runSignal: AbortSignal;
  now: () => number;
  /** Whether a failure leaves attempts in the retry budget (decides the node's state after failure). */
  canRetry: boolean;
  /** Runs inside the transaction that records the attempt (write before do): the caller's journal rides along. */
  inStartTransaction?: (d: Drizzle) => void;
  /** Runs inside the transaction that closes the attempt, with the outcome being committed. */
  inSettleTransaction?: (d: Drizzle, outcome: AttemptOutcome) => void;
  /** Told about side-effect calls the task records. */
  onToolCall?: SideEffectScope["onRecorded"];
};

const ANY_OBJECT = z.record(z.string(), z.unknown());

function validationSchema(task: PlanTask, info: OutputTableInfo): z.ZodType {
  return info.schema ?? task.outputSchema ?? ANY_OBJECT;
}

/** A payload-only table stores the whole output in `payload`. */
function shapeForTable(info: OutputTableInfo, raw: unknown): unknown {
  if (!info.payloadOnly) return raw;
  const isWrapped = typeof raw === "object" && raw !== null && !Array.isArray(raw) && Object.keys(raw).length === 1 && "payload" in raw;
  return isWrapped ? raw : { payload: raw };
}

function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
}

async function produce(a: AttemptInput, signal: AbortSignal): Promise<{ raw: unknown; responseText?: string }> {
  const { task } = a;
  if (task.mode === "static") return { raw: task.staticValue };
  if (task.mode === "compute") {
    const idempotencyKey = `${a.runId}:${task.nodeId}:${task.iteration}`;
    const ids = { runId: a.runId, nodeId: task.nodeId, iteration: task.iteration, attempt: a.attempt };
    const ctx: TaskRunContext = {
      ...ids,
      idempotencyKey,
      signal,
      input: a.input,
      sideEffect: createSideEffect({ db: a.db, ...ids, idempotencyKey, now: a.now, onRecorded: a.onToolCall }),
    };
    return { raw: await task.compute!(ctx) };
  }
  const result = await generateStructured({
    agent: task.agent!,
    prompt: task.prompt!,
    schema: validationSchema(task, a.info),
    signal,
  });
  return { raw: result.value, responseText: result.text };
}

/** Runs `work` under the task's timeout and the run's cancellation. */
function guarded<T>(a: AttemptInput, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  const stopped = new Promise<never>((_, reject) => {
    const onRunAbort = () => {
      const reason = new SmithersError("TASK_CANCELLED", `Task "${a.task.nodeId}" was cancelled`, { nodeId: a.task.nodeId });
      controller.abort(reason);
      reject(reason);
    };
    if (a.runSignal.aborted) onRunAbort();
    a.runSignal.addEventListener("abort", onRunAbort, { once: true });
    cleanups.push(() => a.runSignal.removeEventListener("abort", onRunAbort));
    if (a.task.timeoutMs !== undefined) {
      const timer = setTimeout(() => {
        const reason = new SmithersError("TASK_TIMEOUT", `Task "${a.task.nodeId}" exceeded its timeout of ${a.task.timeoutMs} ms`, {
          nodeId: a.task.nodeId,
          timeoutMs: a.task.timeoutMs,
        });
        controller.abort(reason);
        reject(reason);
      }, a.task.timeoutMs);
      cleanups.push(() => clearTimeout(timer));
    }
  });
  stopped.catch(() => undefined);
  return Promise.race([work(controller.signal), stopped]).finally(() => cleanups.forEach((c) => c()));
}

function asTaskError(a: AttemptInput, error: unknown): SmithersError {
  const details = { nodeId: a.task.nodeId, iteration: a.task.iteration, attempt: a.attempt };
  if (error instanceof SmithersError) {
    return new SmithersError(error.code, error.message, { ...error.details, ...details, cause: error.details.cause });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SmithersError("TASK_FAILED", `Task "${a.task.nodeId}" failed: ${message}`, { ...details, cause: error });
}

/**
 * Closes the attempt only while it is still `running`: if another process resumed the run and
 * abandoned this attempt meanwhile, the transaction rolls back so no stale output lands.
 */
function closeAttempt(d: Parameters<typeof finishAttempt>[0], key: Parameters<typeof finishAttempt>[1], patch: Parameters<typeof finishAttempt>[2]): void {
  if (finishAttempt(d, key, patch) === 0) {
    throw new SmithersError("RUN_OWNED", `Attempt ${key.attempt} of "${key.nodeId}" was taken over by another process`, { nodeId: key.nodeId, attempt: key.attempt });
  }
}

export async function runAttempt(a: AttemptInput): Promise<AttemptOutcome> {
  const { db, runId, task, info } = a;
  const key = { runId, nodeId: task.nodeId, iteration: task.iteration, attempt: a.attempt };
  const startedAtMs = a.now();
  await db.withTransaction("startAttempt", (d) => {
    upsertNode(d, { runId, nodeId: task.nodeId, iteration: task.iteration, state: "running", lastAttempt: a.attempt, updatedAtMs: startedAtMs, outputTable: info.tableName, label: task.label ?? null });
    insertAttempt(d, { ...key, state: "running", startedAtMs, metaJson: task.meta ? JSON.stringify(task.meta) : null });
    a.inStartTransaction?.(d);
  });
  try {
    const { raw, responseText } = await guarded(a, (signal) => produce(a, signal));
    const parsed = validationSchema(task, info).safeParse(shapeForTable(info, raw));
    if (!parsed.success) {
      throw new SmithersError("INVALID_OUTPUT", `Task "${task.nodeId}" produced output that does not match its schema: ${formatIssues(parsed.error)}`, {
        issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
      });
    }
    const finishedAtMs = a.now();
    const outcome: AttemptOutcome = { kind: "finished", durationMs: finishedAtMs - startedAtMs };
    await db.withTransaction("finishAttempt", (d) => {
      closeAttempt(d, key, { state: "finished", finishedAtMs, responseText: responseText ?? null });
      const row = writeOutputRow(d, info, key, parsed.data as Record<string, unknown>);
      if (!info.custom) outcome.row = row;
      upsertNode(d, { runId, nodeId: task.nodeId, iteration: task.iteration, state: "finished", lastAttempt: a.attempt, updatedAtMs: finishedAtMs, outputTable: info.tableName, label: task.label ?? null });
      a.inSettleTransaction?.(d, outcome);
    });
    return outcome;
  } catch (thrown) {
    const finishedAtMs = a.now();
    const durationMs = finishedAtMs - startedAtMs;
    const error = asTaskError(a, thrown);
    const cancelled = error.code === "TASK_CANCELLED";
    const retryable = !cancelled && !(thrown instanceof FatalError) && a.canRetry;
    const nodeState = cancelled ? "cancelled" : retryable ? "pending" : "failed";
    const retryAfterMs = thrown instanceof RetryableError ? thrown.retryAfterMs : undefined;
    const outcome: AttemptOutcome = cancelled ? { kind: "cancelled", durationMs } : { kind: "failed", error, retryable, retryAfterMs, durationMs };
    await db.withTransaction("failAttempt", (d) => {
      closeAttempt(d, key, { state: cancelled ? "cancelled" : "failed", finishedAtMs, errorJson: JSON.stringify(errorToJson(error)) });
      upsertNode(d, { runId, nodeId: task.nodeId, iteration: task.iteration, state: nodeState, lastAttempt: a.attempt, updatedAtMs: finishedAtMs, outputTable: info.tableName, label: task.label ?? null });
      a.inSettleTransaction?.(d, outcome);
    });
    return outcome;
  }
}

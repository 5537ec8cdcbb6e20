/**
 * What every kind of wait shares (see Waits): the run it belongs to, the keys of the nodes
 * waiting for an answer from outside, and how a node starts and stops waiting.
 */
import { nodes, outputRowFor, writeOutputRow, type Sql, type OutputTableInfo, type SmithersDb } from "../../db/index.ts";
import { errorSummaryJson, type SmithersError } from "../../errors/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import { formatZodIssues } from "../../schema/index.ts";
import type { z } from "zod";
import type { EventBody } from "../core/index.ts";
import type { TrackedNode } from "../schedule/index.ts";

export type Event = EventBody;
export type Writes = ((q: Sql) => void | Promise<void>)[];

/** What the wait handling needs of its run. */
export type WaitHost = {
  readonly runId: string;
  readonly db: SmithersDb;
  now(): number;
  tracked(task: PlanTask): TrackedNode;
  resolve(task: PlanTask): OutputTableInfo;
  /** The node's state changed: the next frame shows it. */
  markDirty(key: string): void;
  /** A row this step writes becomes readable by ctx. */
  remember(info: OutputTableInfo, row: Record<string, unknown>): void;
  emitInTransaction(event: Event): void;
  /** The node failed with this error (what the run fails with, unless continueOnFail). */
  failed(key: string, error: SmithersError): void;
  /** The node finished or was skipped (what a dependsOn on an unmounted id asks). */
  done(nodeId: string): void;
};

export class WaitCore {
  /** Keys of the nodes waiting for a decision, an answer, a signal or a child run (see resolveWaits). */
  readonly waiting = new Set<string>();

  constructor(protected readonly host: WaitHost) {}

  /** The row a waiting node ends with, checked against its output schema (and a narrower payload schema first). */
  protected checkRow(task: PlanTask, value: unknown, payloadSchema?: z.ZodType): { ok: true; data: Record<string, unknown> } | { ok: false; issues: string } {
    const info = this.host.resolve(task);
    for (const schema of [payloadSchema, info.schema ?? task.outputSchema]) {
      if (!schema) continue;
      const parsed = schema.safeParse(value);
      if (!parsed.success) return { ok: false, issues: formatZodIssues(parsed.error.issues, "; ") };
      value = parsed.data;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, issues: "(root): expected an object" };
    return { ok: true, data: value as Record<string, unknown> };
  }

  /**
   * Ends a node that waited for the world: finished with its row, skipped, or failed. `before`
   * are events that go first (what ended the wait); `also` joins the same transaction.
   */
  protected endWait(
    task: PlanTask,
    end: { state: "finished"; data: Record<string, unknown>; sinceMs: number } | { state: "skipped" } | { state: "failed"; error: SmithersError },
    nowMs: number,
    writes: Writes,
    before: Event[],
    also?: (q: Sql) => void | Promise<void>,
  ): void {
    const t = this.host.tracked(task);
    const info = this.host.resolve(task);
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const events = [...before];
    this.waiting.delete(task.key);
    this.host.markDirty(task.key);
    t.state = end.state;
    t.wakeAtMs = undefined;
    if (end.state === "finished") {
      const stored = outputRowFor(info, key, end.data);
      for (const field of Object.keys(stored)) stored[field] ??= null;
      this.host.remember(info, stored);
      events.push({ type: "NodeFinished", ...ids, attempt: t.lastAttempt, durationMs: Math.max(0, nowMs - end.sinceMs) });
    } else if (end.state === "skipped") {
      events.push({ type: "NodeSkipped", ...ids });
    } else {
      this.host.failed(task.key, end.error);
      events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(end.error) });
    }
    if (end.state !== "failed") this.host.done(task.nodeId);
    writes.push(async (q) => {
      await also?.(q);
      if (end.state === "finished") await writeOutputRow(q, info, key, end.data);
      await nodes.upsertNode(q, {
        ...key,
        state: end.state,
        wakeAtMs: null,
        errorJson: end.state === "failed" ? JSON.stringify(errorSummaryJson(end.error)) : null,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      for (const event of events) this.host.emitInTransaction(event);
    });
  }

  /** Puts a node in a waiting state with its deadline (and what a sender checks against), stored with the step. */
  protected beginWait(
    task: PlanTask,
    state: "waiting-approval" | "waiting-event",
    deadlineMs: number | undefined,
    nowMs: number,
    writes: Writes,
    also: (q: Sql) => void | Promise<void>,
    waitJson?: string,
  ): void {
    const t = this.host.tracked(task);
    const info = this.host.resolve(task);
    t.state = state;
    t.wakeAtMs = deadlineMs;
    this.waiting.add(task.key);
    this.host.markDirty(task.key);
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    writes.push(async (q) => {
      await nodes.upsertNode(q, {
        ...key,
        state,
        wakeAtMs: deadlineMs ?? null,
        waitJson: waitJson ?? null,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      await also(q);
    });
  }
}

/**
 * Waiting for a concurrency slot or a rate window (`waiting-slot`, `waiting-rate`), for one run.
 * The scheduler decides on what this room knows of each key (`view`); the starts it decides for
 * tasks under a key are claimed in one transaction before the step commits them (`admit`): a
 * claim that fails turns the start into a wait. A slot is given back in the transaction that
 * settles its attempt, which makes the runs waiting for the key due; the run's last transaction
 * clears what is left. A run without a `concurrencyKey` never comes here.
 */
import { limits as limitRows, nodes, type Sql, type SmithersDb } from "../../db/index.ts";
import type { AgentUsage } from "../../agents/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { Plan, PlanTask } from "../../jsx/index.ts";
import { limitFor, WAIT_POLL_MS, type Limits, type LimitSpec } from "../core/index.ts";
import type { Action, TrackedNode } from "../schedule/index.ts";
import type { Writes } from "./wait-core.ts";

export type LimitHost = {
  readonly runId: string;
  readonly ownerId: string;
  readonly db: SmithersDb;
  now(): number;
  tracked(task: PlanTask): TrackedNode;
  markDirty(key: string): void;
  /** The task's output table name, for its node row. */
  tableNameOf(task: PlanTask): string;
};

/** What an attempt that ended tells its key: its usage, and a provider's retry-after. */
export type LimitSettle = { attempt: number; usage: AgentUsage | undefined; errorCode: string | undefined; retryAfterMs: number | undefined };

export class LimitWaits {
  /** Keys that admit no start before a time (Infinity: until a slot frees), and when each was learned. */
  private readonly blocked = new Map<string, { untilMs: number; sinceMs: number }>();
  /** Keys whose declared limits this execution stored. */
  private readonly declared = new Set<string>();
  /** The last plan had a task under a key: the run's last transaction clears its slots. */
  used = false;
  /**
   * Releases (and tokens, and 429s) of attempts settled since the last claim: stored before the
   * next claims, in their transaction, so a slot this run frees is free for its own next task.
   */
  private readonly pending: Writes = [];
  /** Tasks the last admit claimed for: each either starts this step or gives its slot back (see keepClaims). */
  private claimed: PlanTask[] = [];

  constructor(
    private readonly host: LimitHost,
    readonly limits: Limits,
  ) {}

  /**
   * At each render: every key a task names must have a limit (LIMIT_UNDECLARED otherwise: never
   * silently unlimited).
   */
  check(plan: Plan): void {
    for (const task of plan.tasks) {
      const key = task.concurrencyKey;
      if (key === undefined) continue;
      this.used = true;
      if (limitFor(this.limits, key)) continue;
      throw new SmithersError(
        "LIMIT_UNDECLARED",
        `<Task id="${task.nodeId}"> has concurrencyKey "${key}" but no limit is declared for it; add limits: { "${key}": { concurrency: N } } to createSmithers (or --limit ${key}=N)`,
        { nodeId: task.nodeId, key },
      );
    }
  }

  /** What the scheduler is told of the keys now. A full key is looked at again after WAIT_POLL_MS (a slot may have freed elsewhere). */
  view(nowMs: number): ReadonlyMap<string, number> | undefined {
    if (this.blocked.size === 0) return undefined;
    const out = new Map<string, number>();
    for (const [key, b] of this.blocked) {
      if (b.untilMs <= nowMs || (b.untilMs === Infinity && nowMs - b.sinceMs >= WAIT_POLL_MS)) this.blocked.delete(key);
      else out.set(key, b.untilMs);
    }
    return out.size > 0 ? out : undefined;
  }

  /** Whether a node waits for a slot: while other work runs the run looks again at least every WAIT_POLL_MS. */
  get waitingForSlot(): boolean {
    for (const b of this.blocked.values()) if (b.untilMs === Infinity) return true;
    return false;
  }

  /**
   * Claims the slots and rate windows the starts among `actions` need, in one transaction; a start
   * its key refuses becomes a wait-slot or wait-rate. Other actions pass as they are.
   */
  async admit(actions: Action[], nowMs: number): Promise<Action[]> {
    const keyed = actions.filter(
      (a): a is Extract<Action, { type: "start" | "retry" }> => (a.type === "start" || a.type === "retry") && a.task.concurrencyKey !== undefined,
    );
    if (keyed.length === 0) {
      if (this.pending.length > 0) await this.host.db.withTransaction("releaseLimits", (q) => this.flush(q));
      return actions;
    }
    // One key order for every process, so two claims never wait on each other's key locks.
    const ordered = [...keyed].sort((a, b) => (a.task.concurrencyKey! < b.task.concurrencyKey! ? -1 : a.task.concurrencyKey! > b.task.concurrencyKey! ? 1 : 0));
    const { runId, ownerId } = this.host;
    const outcomes = await this.host.db.withTransaction("claimLimits", async (q) => {
      await this.flush(q);
      const found = new Map<Action, limitRows.ClaimOutcome>();
      const refused = new Map<string, limitRows.ClaimOutcome>();
      for (const action of ordered) {
        const { task } = action;
        const key = task.concurrencyKey!;
        const known = refused.get(key);
        if (known) {
          found.set(action, known); // what refused one start of the key refuses the next
          continue;
        }
        const limit = this.limitOf(task);
        if (!this.declared.has(key)) await limitRows.declare(q, key, limit, nowMs);
        const attempt = this.host.tracked(task).lastAttempt + 1;
        const outcome = await limitRows.claim(q, { runId, nodeId: task.nodeId, iteration: task.iteration, key, limit, attempt, ownerId, nowMs });
        found.set(action, outcome);
        if (!outcome.ok) refused.set(key, outcome);
      }
      return found;
    });
    for (const action of keyed) this.declared.add(action.task.concurrencyKey!);
    this.claimed = keyed.filter((action) => outcomes.get(action)?.ok).map((action) => action.task);
    return actions.flatMap((action): Action[] => {
      const outcome = outcomes.get(action);
      if (!outcome || outcome.ok || (action.type !== "start" && action.type !== "retry")) return [action];
      const key = action.task.concurrencyKey!;
      const untilMs = outcome.wait === "slot" ? Infinity : outcome.untilMs;
      this.blocked.set(key, { untilMs, sinceMs: nowMs });
      // A node already waiting so stays as it is: nothing to write (a wide fan-out under one key
      // would otherwise rewrite every waiting node each time a slot frees).
      const t = this.host.tracked(action.task);
      if (outcome.wait === "slot") return t.state === "waiting-slot" ? [] : [{ type: "wait-slot", task: action.task }];
      return t.state === "waiting-rate" && t.wakeAtMs === untilMs ? [] : [{ type: "wait-rate", task: action.task, untilMs }];
    });
  }

  /**
   * After the step applied its actions: a claimed task that did not start after all (it asks for
   * its approval first, it is held by the run's budget, it failed its crash loop) gives its slot back.
   */
  keepClaims(started: ReadonlySet<PlanTask>, nowMs: number): void {
    for (const task of this.claimed) {
      const { concurrency } = this.limitOf(task);
      if (started.has(task) || concurrency === undefined) continue;
      const node = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
      this.pending.push((q) => limitRows.release(q, node, task.concurrencyKey!, concurrency, nowMs));
      this.blocked.delete(task.concurrencyKey!); // a task it refused this step may have the slot next step
    }
    this.claimed = [];
  }

  /** The node waits for a slot or a rate window: its state and row (the slot's waiting row), with the step. */
  beginWait(task: PlanTask, action: { type: "wait-slot" } | { type: "wait-rate"; untilMs: number }, nowMs: number, writes: Writes): void {
    const t = this.host.tracked(task);
    const state = action.type === "wait-slot" ? "waiting-slot" : "waiting-rate";
    const wakeAtMs = action.type === "wait-rate" ? action.untilMs : undefined;
    t.state = state;
    t.wakeAtMs = wakeAtMs;
    this.host.markDirty(task.key);
    const key = task.concurrencyKey!;
    const node = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    const tableName = this.host.tableNameOf(task);
    writes.push(async (q) => {
      await nodes.upsertNode(q, {
        ...node,
        state,
        wakeAtMs: wakeAtMs ?? null,
        waitJson: JSON.stringify({ concurrencyKey: key }),
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: tableName,
        label: task.label ?? null,
      });
      if (state === "waiting-slot") await limitRows.wait(q, node, key, this.host.ownerId, nowMs);
    });
  }

  /**
   * An attempt of a task under a key ended: its slot goes back, its tokens and a provider's
   * retry-after count against the key; stored with the run's next claims (or its last transaction).
   */
  settle(task: PlanTask, s: LimitSettle, nowMs: number): void {
    const key = task.concurrencyKey!;
    const limit = this.limitOf(task);
    this.blocked.delete(key); // a slot of it is free now (or the rate wait is read again)
    const node = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration, attempt: s.attempt };
    const tokens = s.usage ? (s.usage.inputTokens ?? 0) + (s.usage.outputTokens ?? 0) : 0;
    this.pending.push(async (q) => {
      if (limit.tokensPerMinute !== undefined) await limitRows.recordTokens(q, node, key, tokens, nowMs);
      if (s.errorCode === "AGENT_RATE_LIMITED" && s.retryAfterMs !== undefined) await limitRows.recordBlocked(q, node, key, nowMs + s.retryAfterMs);
      if (limit.concurrency !== undefined) await limitRows.release(q, node, key, limit.concurrency, nowMs);
    });
  }

  /**
   * In the run's last transaction: its slots are cleared (its waiting rows kept when it stops to
   * wait for one), and whether a slot it waits for is free already (then it is due at once).
   */
  async atEnd(q: Sql, status: string, plan: Plan | undefined): Promise<boolean> {
    await this.flush(q);
    if (!this.used) return false;
    const waiting = status === "waiting-slot";
    await limitRows.clearRun(q, this.host.runId, {
      keepWaiting: waiting,
      nowMs: this.host.now(),
      concurrencyOf: (key) => limitFor(this.limits, key)?.concurrency,
    });
    if (!waiting) return false;
    const keys = new Map<string, number>();
    for (const task of plan?.tasks ?? []) {
      if (task.concurrencyKey === undefined || this.host.tracked(task).state !== "waiting-slot") continue;
      const concurrency = this.limitOf(task).concurrency;
      if (concurrency !== undefined) keys.set(task.concurrencyKey, concurrency);
    }
    return await limitRows.anyFree(q, new Map([...keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
  }

  /** Runs the pending writes inside `q`'s transaction; they are dropped only once it commits (a retried transaction runs them again). */
  private async flush(q: Sql): Promise<void> {
    if (this.pending.length === 0) return;
    const count = this.pending.length;
    for (const write of this.pending.slice(0, count)) await write(q);
    this.host.db.afterTransaction(() => void this.pending.splice(0, count));
  }

  private limitOf(task: PlanTask): LimitSpec {
    return limitFor(this.limits, task.concurrencyKey!) ?? {};
  }
}

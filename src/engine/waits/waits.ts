/**
 * Nodes that wait for the world, for one run: timers, approvals (`<Approval>`, `<Task
 * needsApproval>`), human tasks, signals, and `<Subflow>` nodes whose child run waits. Each
 * method changes memory through its host (the run) and pushes the writes that record it for the
 * step's transaction, as the rest of the engine step does; `waiting` holds the keys of the nodes
 * whose answer may arrive from outside (see resolveWaits).
 */
import { approvals, humanRequests, nodes, outputRowFor, runs, signals, writeOutputRow, type Sql } from "../../db/index.ts";
import { errorSummaryJson, SmithersError } from "../../errors/index.ts";
import { nodeKey, type Plan, type PlanTask } from "../../jsx/plan.ts";
import { formatZodIssues, jsonSchemaOf } from "../../schema/index.ts";
import { byAsk, humanRequestId } from "./human.ts";
import { DECISION_SCHEMA_NAME, decisionRow, storedRequest } from "./approvals.ts";
import type { TrackedNode } from "../schedule/index.ts";
import { isWaiting } from "../core/index.ts";
import { cancelWaitingChildIn } from "./cancel.ts";
import { subflowRunId } from "./subflow.ts";
import { WaitCore, type Event, type Writes } from "./wait-core.ts";

/** What a waiting node waits for: a `<Task needsApproval>` waits for an approval like an `<Approval>`. */
export const waitKind = (t: PlanTask): PlanTask["mode"] => (t.approval ? "approval" : t.mode);

export class Waits extends WaitCore {
  /** Carries out what the scheduler decided about a waiting node: its timer fires, its timeout passed, or its scope failed. */
  settle(action: { type: "fire-timer" | "expire-wait" | "cancel-wait"; task: PlanTask }, nowMs: number, writes: Writes): void {
    if (action.type === "fire-timer") this.fireTimer(action.task, nowMs, writes);
    else if (action.type === "expire-wait") this.expireWait(action.task, nowMs, writes);
    else this.cancelWait(action.task, nowMs, writes);
  }

  /** Starts a `<Timer>`: its fire time is fixed now and stored with the step, so a restart never moves it. */
  startTimer(task: PlanTask, t: TrackedNode, nowMs: number, writes: Writes): void {
    const spec = task.timer!;
    const fireAtMs = spec.untilMs ?? nowMs + spec.durationMs!;
    t.state = "waiting-timer";
    t.wakeAtMs = fireAtMs;
    this.writeTimerNode(task, t, fireAtMs, nowMs, writes, { type: "TimerScheduled", nodeId: task.nodeId, iteration: task.iteration, fireAtMs });
  }

  /** A timer whose time has come: its node finishes (no row). */
  fireTimer(task: PlanTask, nowMs: number, writes: Writes): void {
    const t = this.host.tracked(task);
    const firedLateMs = Math.max(0, nowMs - (t.wakeAtMs ?? nowMs));
    t.state = "finished";
    t.wakeAtMs = undefined;
    this.host.done(task.nodeId);
    this.writeTimerNode(task, t, null, nowMs, writes, { type: "TimerFired", nodeId: task.nodeId, iteration: task.iteration, firedLateMs });
  }

  /** A timer's node row as its state now is (it writes no output row), with the event that says so. */
  private writeTimerNode(task: PlanTask, t: TrackedNode, wakeAtMs: number | null, nowMs: number, writes: Writes, event: Event): void {
    this.host.markDirty(task.key);
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    const state = t.state;
    writes.push(async (q) => {
      await nodes.upsertNode(q, { ...key, state, wakeAtMs, lastAttempt: t.lastAttempt, updatedAtMs: nowMs, outputTable: "", label: task.label ?? null });
      this.host.emitInTransaction(event);
    });
  }

  /** Opens an `<Approval>` gate: the node waits (`waiting-approval`) and the request is stored with the step. */
  requestApproval(task: PlanTask, nowMs: number, writes: Writes): void {
    const spec = task.approval!;
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    this.beginWait(task, "waiting-approval", undefined, nowMs, writes, async (q) => {
      // A gate is asked once: one decided before (a resumed run) is taken on the next step, not asked again.
      if (await approvals.requestApprovalIn(q, { ...key, requestedAtMs: nowMs, request: storedRequest(spec) })) {
        this.host.emitInTransaction({ type: "ApprovalRequested", nodeId: task.nodeId, iteration: task.iteration, title: spec.request.title });
      }
    });
  }

  /**
   * Nodes of the plan that wait for the world and whose answer arrived: decided gates, answered
   * (or cancelled) human requests, matching signals. Each kind is read only while a node waits for it.
   */
  async resolveWaits(plan: Plan, nowMs: number, writes: Writes): Promise<void> {
    const waiting = plan.tasks.filter((t) => this.waiting.has(t.key));
    for (const t of waiting) if (t.mode === "timer") this.waiting.delete(t.key); // the scheduler fires timers
    const kinds = new Set(waiting.map(waitKind));
    const runId = this.host.runId;
    const found = await this.host.db.read("readWaits", async (q) => ({
      approvals: kinds.has("approval") ? await approvals.readApprovals(q, runId) : [],
      human: kinds.has("human") ? await humanRequests.readHumanRequests(q, runId) : [],
      signals: kinds.has("event") ? await signals.readOpenSignals(q, runId) : [],
      children: kinds.has("subflow") ? await this.dueChildren(q, waiting, nowMs) : new Set<string>(),
    }));
    const decided = new Map(found.approvals.filter(approvals.isDecided).map((r) => [nodeKey(r.nodeId, r.iteration), r]));
    for (const task of waiting) {
      if (waitKind(task) === "approval") {
        const row = decided.get(task.key);
        if (!row) continue;
        this.waiting.delete(task.key);
        this.settleApproval(task, row, nowMs, writes);
      } else if (task.mode === "human") {
        this.resolveHuman(task, found.human, nowMs, writes);
      } else if (task.mode === "event") {
        this.offerSignals(task, found.signals, nowMs, writes);
      } else if (task.mode === "subflow" && found.children.has(task.key)) {
        // Its child is due: the scheduler starts the node again, which resumes the child.
        this.waiting.delete(task.key);
        this.host.tracked(task).wakeAtMs = nowMs;
      }
    }
  }

  /** Keys of the waiting `<Subflow>` nodes whose child run is due (or no longer waits). */
  async dueChildren(q: Sql, waiting: PlanTask[], nowMs: number): Promise<Set<string>> {
    const due = new Set<string>();
    for (const task of waiting) {
      if (task.mode !== "subflow") continue;
      // A child that continued as new waits (or not) in the last run of its chain.
      const child = await runs.readChainEnd(q, subflowRunId(this.host.runId, task.nodeId, task.iteration));
      if (!child || !isWaiting(child.status) || (child.wakeAtMs !== null && child.wakeAtMs <= nowMs)) due.add(task.key);
    }
    return due;
  }

  /**
   * Inside the transaction that suspends the run: whether a waiting node's decision, answer or
   * signal is already stored. Senders mark only runs already waiting (runs.markRunDue), so one
   * that arrived between this run's last look and its suspension is caught here instead.
   */
  async arrivedMeanwhile(q: Sql, plan: Plan | undefined): Promise<boolean> {
    const waiting = (plan?.tasks ?? []).filter((t) => this.waiting.has(t.key));
    if (waiting.length === 0) return false;
    const runId = this.host.runId;
    const kinds = new Set(waiting.map(waitKind));
    if (kinds.has("approval")) {
      const decided = new Set((await approvals.readApprovals(q, runId)).filter(approvals.isDecided).map((r) => nodeKey(r.nodeId, r.iteration)));
      if (waiting.some((t) => waitKind(t) === "approval" && decided.has(t.key))) return true;
    }
    if (kinds.has("human")) {
      const latest = new Map(byAsk(await humanRequests.readHumanRequests(q, runId)).map((r) => [nodeKey(r.nodeId, r.iteration), r.status]));
      const answered = (status: string | undefined) => status !== undefined && status !== "pending" && status !== "withdrawn";
      if (waiting.some((t) => t.mode === "human" && answered(latest.get(t.key)))) return true;
    }
    if (kinds.has("subflow") && (await this.dueChildren(q, waiting, this.host.now())).size > 0) return true;
    if (kinds.has("event")) {
      const open = await signals.readOpenSignals(q, runId);
      const matches = (t: PlanTask) =>
        open.some((sg) => sg.signalName === t.event!.event && (t.event!.correlationId === undefined || sg.correlationId === t.event!.correlationId));
      if (waiting.some((t) => t.mode === "event" && matches(t))) return true;
    }
    return false;
  }

  /** Starts a `<WaitForEvent>` / `<Signal>`: waits for a matching signal (one sent earlier is taken on the next step). */
  startEventWait(task: PlanTask, nowMs: number, writes: Writes): void {
    const spec = task.event!;
    const info = this.host.resolve(task);
    const payloadSchema = spec.tagged ? spec.payloadSchema : (spec.payloadSchema ?? info.schema ?? task.outputSchema);
    const waitJson = JSON.stringify({
      event: spec.event,
      correlationId: spec.correlationId ?? null,
      schema: payloadSchema ? (jsonSchemaOf(payloadSchema) ?? null) : null,
    });
    const deadline = spec.timeoutMs === undefined ? undefined : nowMs + spec.timeoutMs;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    this.beginWait(
      task,
      "waiting-event",
      deadline,
      nowMs,
      writes,
      () => this.host.emitInTransaction({ type: "SignalWaiting", ...ids, signalName: spec.event, correlationId: spec.correlationId ?? null }),
      waitJson,
    );
  }

  /** Offers a waiting signal node the open signals in seq order: it takes the first that matches and passes its schema. */
  offerSignals(task: PlanTask, open: signals.SignalRow[], nowMs: number, writes: Writes): void {
    const spec = task.event!;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const runId = this.host.runId;
    for (let i = 0; i < open.length; i++) {
      const signal = open[i]!;
      if (signal.signalName !== spec.event || (spec.correlationId !== undefined && signal.correlationId !== spec.correlationId)) continue;
      open.splice(i--, 1); // offered once: taken or refused, no other node sees it this step
      let payload: unknown;
      try {
        payload = JSON.parse(signal.payloadJson);
      } catch {
        payload = undefined;
      }
      const checked = spec.tagged
        ? (() => {
            const inner = spec.payloadSchema ? spec.payloadSchema.safeParse(payload) : { success: true as const, data: payload };
            return inner.success
              ? this.checkRow(task, { kind: "signal", payload: inner.data })
              : { ok: false as const, issues: formatZodIssues(inner.error.issues, "; ") };
          })()
        : this.checkRow(task, payload, spec.payloadSchema);
      const seq = signal.seq;
      if (!checked.ok) {
        const error = new SmithersError(
          "SIGNAL_INVALID",
          `Signal "${spec.event}" (seq ${seq}) does not match the schema of "${task.nodeId}": ${checked.issues}`,
          { ...ids, seq },
        );
        const errorJson = JSON.stringify(errorSummaryJson(error));
        writes.push(async (q) => {
          await signals.rejectSignal(q, { runId, seq, errorJson });
          this.host.emitInTransaction({ type: "SignalRejected", ...ids, signalName: spec.event, seq, error: errorSummaryJson(error) });
        });
        continue;
      }
      const received: Event = { type: "SignalReceived", ...ids, signalName: spec.event, seq, correlationId: signal.correlationId ?? null };
      // durationMs 0: the node did no work of its own; how long it waited is in its events.
      this.endWait(
        task,
        { state: "finished", data: checked.data, sinceMs: nowMs },
        nowMs,
        writes,
        [received],
        async (q) => await signals.consumeSignal(q, { runId, seq, ...ids, atMs: nowMs }),
      );
      return;
    }
  }

  /** Opens ask number `ask` of a `<HumanTask>`: a pending request in `_smithers_human_requests`, and the node waits. */
  askHuman(task: PlanTask, nowMs: number, ask: number, writes: Writes, note?: string): void {
    const spec = task.human!;
    const info = this.host.resolve(task);
    const schema = info.schema ?? task.outputSchema;
    const requestId = humanRequestId(this.host.runId, task.nodeId, task.iteration, ask);
    const deadline = spec.timeoutMs === undefined ? undefined : nowMs + spec.timeoutMs;
    const prompt = note ? `${spec.prompt}\n\n(asked again: ${note})` : spec.prompt;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    this.beginWait(task, "waiting-approval", deadline, nowMs, writes, async (q) => {
      await humanRequests.createHumanRequestIn(q, {
        requestId,
        runId: this.host.runId,
        ...ids,
        kind: "json",
        prompt,
        schemaJson: schema ? JSON.stringify(jsonSchemaOf(schema) ?? null) : null,
        requestedAtMs: nowMs,
        timeoutAtMs: deadline ?? null,
      });
      this.host.emitInTransaction({ type: "HumanRequested", ...ids, requestId, prompt: spec.prompt });
    });
  }

  /** A waiting human task whose latest request was answered, cancelled or expired. */
  resolveHuman(task: PlanTask, rows: humanRequests.HumanRequestRow[], nowMs: number, writes: Writes): void {
    const asks = byAsk(rows.filter((r) => r.nodeId === task.nodeId && r.iteration === task.iteration));
    const latest = asks.at(-1);
    // withdrawn: closed by the engine and reopened when the node asks again, never an answer.
    if (!latest || latest.status === "pending" || latest.status === "withdrawn") return;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const requestId = latest.requestId;
    if (latest.status === "cancelled" || latest.status === "expired") {
      const code = latest.status === "cancelled" ? "HUMAN_TASK_CANCELLED" : "HUMAN_TASK_TIMEOUT";
      const error = new SmithersError(code, `Human task "${task.nodeId}": request ${requestId} was ${latest.status}`, { ...ids, requestId });
      this.endWait(task, { state: "failed", error }, nowMs, writes, []);
      return;
    }
    let answer: unknown;
    try {
      answer = JSON.parse(latest.responseJson ?? "null");
    } catch {
      answer = undefined;
    }
    const checked = this.checkRow(task, answer);
    const answered = { type: "HumanAnswered" as const, ...ids, requestId, accepted: checked.ok, answeredBy: latest.answeredBy ?? null };
    if (checked.ok) {
      this.endWait(task, { state: "finished", data: checked.data, sinceMs: latest.requestedAtMs }, nowMs, writes, [answered]);
      return;
    }
    writes.push(() => this.host.emitInTransaction(answered));
    if (asks.length < task.human!.maxAttempts) {
      this.askHuman(task, nowMs, asks.length + 1, writes, checked.issues);
      return;
    }
    const error = new SmithersError(
      "HUMAN_ANSWER_INVALID",
      `Human task "${task.nodeId}": ${asks.length} answers did not match the output schema (maxAttempts ${task.human!.maxAttempts}); the last: ${checked.issues}`,
      { ...ids, requestId },
    );
    this.endWait(task, { state: "failed", error }, nowMs, writes, []);
  }

  /** A signal wait or human task whose timeout passed: ends as its onTimeout says (a human task fails). */
  expireWait(task: PlanTask, nowMs: number, writes: Writes): void {
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    if (task.mode === "human") {
      const error = new SmithersError("HUMAN_TASK_TIMEOUT", `Human task "${task.nodeId}" was not answered within ${task.human!.timeoutMs} ms`, ids);
      this.endWait(
        task,
        { state: "failed", error },
        nowMs,
        writes,
        [{ type: "WaitTimedOut", ...ids, outcome: "fail" }],
        async (q) => await humanRequests.expireNodeRequestsIn(q, { runId: this.host.runId, ...ids }),
      );
      return;
    }
    const spec = task.event!;
    const timedOut: Event = { type: "WaitTimedOut", ...ids, outcome: spec.onTimeout };
    const checked = spec.onTimeout === "continue" ? this.checkRow(task, { kind: "timeout" }) : undefined;
    if (spec.onTimeout === "skip") {
      this.endWait(task, { state: "skipped" }, nowMs, writes, [timedOut]);
    } else if (checked?.ok) {
      this.endWait(task, { state: "finished", data: checked.data, sinceMs: nowMs }, nowMs, writes, [timedOut]);
    } else {
      const why = checked ? ` (its output schema refuses the timeout row { kind: "timeout" }: ${checked.issues})` : "";
      const error = new SmithersError("SIGNAL_TIMEOUT", `No signal "${spec.event}" reached "${task.nodeId}" within ${spec.timeoutMs} ms${why}`, {
        ...ids,
        signalName: spec.event,
      });
      this.endWait(task, { state: "failed", error }, nowMs, writes, [timedOut]);
    }
  }

  /**
   * A waiting node whose failure scope failed (the scheduler's `cancel-wait`): it ends `cancelled`
   * and, in the same step, what it asked for is closed: its gate and its human request leave the
   * inbox (`withdrawn`: asked again if a resume runs the node again), its `<Subflow>` child run is
   * cancelled. A signal wait or a timer asked for nothing stored; a signal sent later finds the
   * node no longer waiting.
   */
  cancelWait(task: PlanTask, nowMs: number, writes: Writes): void {
    const t = this.host.tracked(task);
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    const kind = waitKind(task);
    const outputTable = task.mode === "timer" ? "" : this.host.resolve(task).tableName;
    this.waiting.delete(task.key);
    this.host.markDirty(task.key);
    t.state = "cancelled";
    t.wakeAtMs = undefined;
    writes.push(async (q) => {
      if (kind === "approval") await approvals.withdrawApprovalsIn(q, key);
      else if (kind === "human") await humanRequests.withdrawRequestsIn(q, key);
      else if (kind === "subflow") await cancelWaitingChildIn(q, subflowRunId(key.runId, key.nodeId, key.iteration), nowMs);
      await nodes.upsertNode(q, { ...key, state: "cancelled", lastAttempt: t.lastAttempt, updatedAtMs: nowMs, outputTable, label: task.label ?? null });
      // durationMs 0: the node did no work of its own; how long it waited is in its events.
      this.host.emitInTransaction({ type: "NodeCancelled", nodeId: task.nodeId, iteration: task.iteration, attempt: t.lastAttempt, durationMs: 0 });
    });
  }

  /**
   * A decided approval. An `<Approval>` ends with its decision row (approve: the decision; select:
   * the chosen key; rank: the keys in order), or as its onDeny says; a `<Task needsApproval>` that
   * was approved becomes startable (nothing written to its table), and fails when denied.
   */
  settleApproval(task: PlanTask, row: approvals.ApprovalRow, nowMs: number, writes: Writes): void {
    const t = this.host.tracked(task);
    const info = this.host.resolve(task);
    const key = { runId: this.host.runId, nodeId: task.nodeId, iteration: task.iteration };
    const approved = row.status === "approved";
    const node = { ...key, lastAttempt: t.lastAttempt, updatedAtMs: nowMs, outputTable: info.tableName, label: task.label ?? null };
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const events: Event[] = [{ type: "ApprovalDecided", ...ids, approved, decidedBy: row.decidedBy ?? null }];
    this.host.markDirty(task.key);
    const spec = task.approval!;
    let state: "finished" | "skipped" | "failed" | "pending";
    let data: Record<string, unknown> | undefined;
    let failure: SmithersError | undefined;
    if (approved && spec.mode === "gate") {
      t.gatePassed = true;
      state = "pending";
    } else if (approved || spec.onDeny === "continue") {
      const decision = decisionRow(spec, row, approved);
      const parsed = (info.schema ?? task.outputSchema)?.safeParse(decision);
      if (parsed && !parsed.success) {
        const error = new SmithersError(
          "INVALID_OUTPUT",
          `Approval "${task.nodeId}": its output schema does not accept the decision row (use ${DECISION_SCHEMA_NAME[spec.mode]}): ${formatZodIssues(parsed.error.issues)}`,
          ids,
        );
        this.host.failed(task.key, error);
        events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(error) });
        state = "failed";
        failure = error;
      } else {
        data = (parsed?.data ?? decision) as Record<string, unknown>;
        const stored = outputRowFor(info, key, data);
        for (const field of Object.keys(stored)) stored[field] ??= null;
        this.host.remember(info, stored);
        events.push({
          type: "NodeFinished",
          ...ids,
          attempt: t.lastAttempt,
          durationMs: Math.max(0, (row.decidedAtMs ?? nowMs) - (row.requestedAtMs ?? nowMs)),
        });
        state = "finished";
      }
    } else if (spec.onDeny === "skip") {
      events.push({ type: "NodeSkipped", ...ids });
      state = "skipped";
    } else {
      const by = row.decidedBy ? ` by ${row.decidedBy}` : "";
      const error = new SmithersError("APPROVAL_DENIED", `Approval "${task.nodeId}" was denied${by}${row.note ? `: ${row.note}` : ""}`, {
        ...ids,
        decidedBy: row.decidedBy,
        note: row.note,
      });
      this.host.failed(task.key, error);
      events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(error) });
      state = "failed";
      failure = error;
    }
    t.state = state;
    if (state === "finished" || state === "skipped") this.host.done(task.nodeId);
    writes.push(async (q) => {
      if (data) await writeOutputRow(q, info, key, data);
      await nodes.upsertNode(q, { ...node, state, errorJson: failure ? JSON.stringify(errorSummaryJson(failure)) : null });
      for (const event of events) this.host.emitInTransaction(event);
    });
  }
}

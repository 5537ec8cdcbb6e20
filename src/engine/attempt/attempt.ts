/**
 * The actuator's core, in three parts so the engine can commit a whole step at once:
 * `recordStart` writes the node as running and the attempt row (inside the step's transaction,
 * before any work: write before do); `performAttempt` does the work with timeout and
 * cancellation and validates it, touching no database; `recordSettle` writes the outcome (output
 * row, attempt, node state) inside a later step's transaction.
 */
import { resolve } from "node:path";
import { z } from "zod";
import { tracedAttempt } from "../telemetry/index.ts";
import {
  generateStructured,
  refuseUnsandboxable,
  type Agent,
  type AgentEvent,
  type AgentFallback,
  type AgentUsage,
  type ModelPricing,
} from "../../agents/index.ts";
import { formatZodIssues, safeParseWarming } from "../../schema/index.ts";
import { attempts, nodes, scorers, writeOutputRow, type Sql, type OutputTableInfo, type SmithersDb, type Usage } from "../../db/index.ts";
import { describeThrown, errorJsonText, errorSummaryJson, safeStringify, SmithersError } from "../../errors/index.ts";
import type { PlanTask, TaskRunContext } from "../../jsx/index.ts";
import { MAX_TIMER_MS, SYSTEM_CLOCK, type Clock } from "../core/index.ts";
import { createSideEffect, type SideEffectScope } from "./side-effect.ts";
import { runWithToolContext, type ToolContext } from "../../tools/index.ts";
import { childSpend, SpendMeter, usageColumns } from "./spend.ts";
import type { Budget } from "../core/index.ts";
import { runSubflow, type StartChildRun } from "../waits/index.ts";
import { ensureWorktree } from "./worktree.ts";
import { runSandboxed } from "./sandbox.ts";
import { openAgentSandbox, settleSession } from "./agent-sandbox.ts";
import { promptWithMemory, retainDigest, toolMemory, writeDigest, type AttemptMemory, type RetainedDigest } from "./memory.ts";
import { storeCacheEntry, throughCache, type AttemptCache, type CacheOutcome } from "./task-cache.ts";
import { definitionSignature } from "../workflow/index.ts";
import type { AttemptOutcome } from "./outcome.ts";
import { pendingScoreRows } from "./pending-scores.ts";

export type AttemptInput = {
  db: SmithersDb;
  runId: string;
  task: PlanTask;
  info: OutputTableInfo;
  attempt: number;
  input: unknown;
  /** Aborted when the run is cancelled or fails. */
  runSignal: AbortSignal;
  now: () => number;
  /** Sets the task's timeout timer (RunOptions.clock); default the system's. */
  clock?: Clock;
  startedAtMs: number;
  /** Told about side-effect calls the task records. */
  onToolCall?: SideEffectScope["onRecorded"];
  /** The run's waitInPlaceMs, passed on to a `<Subflow>`'s child run. */
  waitInPlaceMs?: number;
  /** The run's root directory (RunOptions.rootDir; default process.cwd()): a task's cwd outside a `<Worktree>`. */
  rootDir?: string;
  /** Set for a task with a cache policy (`task.cache`): what its key needs beyond the task. */
  cache?: AttemptCache;
  /** Prices for agents that report tokens but no cost (RunOptions.pricing). */
  pricing?: ModelPricing;
  /** What the task's agent reports while it works (text, tool calls, its subprocess). */
  onAgentEvent?: (event: AgentEvent) => void;
  /** Told when the attempt moves to the next agent of the task's list. */
  onAgentFallback?: (fallback: AgentFallback) => void;
  /** A `<Subflow>`'s: the run's limits and spend so far, for the child run (see SubflowWork.spend). */
  budget?: { budget: Budget; spent: Usage; pricing?: ModelPricing };
  /** A `<Subflow>`'s: how its child run is started (runWorkflow, see RunSettings.startChildRun). */
  startChildRun?: StartChildRun;
  /**
   * Set for a pure attempt done in the step that started it (see canDefer in run/run-step.ts): its start and its
   * outcome commit in one transaction, so recordStart writes nothing and recordSettle writes the
   * node and attempt rows once, as they ended.
   */
  startInSettle?: boolean;
  /** The workflow's embedding model (createSmithers' `memory`), for a task with memory. */
  memory?: AttemptMemory;
};

/**
 * What the work produced: validated output, or the error it failed with. `stopped`: the attempt
 * was ended from outside (timeout, cancel, run failure) while its body still ran; `abandoned`:
 * that body then did not settle within the grace period and may still be running.
 */
export type AttemptResult = (
  | { ok: true; data: Record<string, unknown>; responseText?: string; finishedAtMs: number; cache?: CacheOutcome; retained?: RetainedDigest }
  | { ok: false; thrown: unknown; error: SmithersError; finishedAtMs: number; stopped?: boolean; abandoned?: boolean }
) & {
  /** What the attempt's agent calls consumed, when they reported it (a failed or stopped attempt's too). */
  usage?: AgentUsage;
  /** A model one of its calls reported tokens for with no cost and no price. */
  unpricedModel?: string;
};

/** An attempt in flight: its result, and when the task's own body settled (later, if it ignored a stop). */
export type AttemptWork = { result: Promise<AttemptResult>; bodySettled: Promise<void> };

/** What an output without a schema is checked against (any object), built on first use, not at import. */
let anyObject: z.ZodType | undefined;

function validationSchema(task: PlanTask, info: OutputTableInfo): z.ZodType {
  return info.schema ?? task.outputSchema ?? (anyObject ??= z.record(z.string(), z.unknown()));
}

/** A payload-only table stores the whole output in `payload`. */
function shapeForTable(info: OutputTableInfo, raw: unknown): unknown {
  if (!info.payloadOnly) return raw;
  const isWrapped = typeof raw === "object" && raw !== null && !Array.isArray(raw) && Object.keys(raw).length === 1 && "payload" in raw;
  return isWrapped ? raw : { payload: raw };
}

type Produced = { raw: unknown; responseText?: string; cache?: CacheOutcome };

async function produce(a: AttemptInput, signal: AbortSignal, onAgentCall: (call: Promise<unknown>) => void, spent: SpendMeter): Promise<Produced> {
  const { task } = a;
  // Entering a <Worktree> creates it (a static task too, so a bad worktree fails where it is first used).
  const root = resolve(a.rootDir ?? process.cwd());
  const cwd = task.worktree ? await ensureWorktree(root, task.worktree) : root;
  if (task.mode === "static") return { raw: task.staticValue };
  if (task.sandbox && task.mode !== "compute" && task.mode !== "agent")
    throw new SmithersError(
      "SANDBOX_POLICY_UNSUPPORTED",
      `Task "${task.nodeId}" has a sandbox, but only a compute task's body or a CLI agent runs sandboxed (not a subflow)`,
      {
        nodeId: task.nodeId,
        mode: task.mode,
      },
    );
  if (task.mode === "subflow") {
    const spend = a.budget ? { ...a.budget, onUsage: (usage: Usage) => spent.callEnded(childSpend(usage)) } : undefined;
    if (!a.startChildRun)
      throw new SmithersError("ENGINE_ERROR", `Subflow "${task.nodeId}" was started without a way to start its child run`, { nodeId: task.nodeId });
    const { startChildRun } = a;
    return {
      raw: await runSubflow({
        db: a.db,
        startChildRun,
        parentRunId: a.runId,
        task,
        signal,
        waitInPlaceMs: a.waitInPlaceMs,
        rootDir: cwd,
        ...(spend ? { spend } : {}),
      }),
    };
  }
  if (task.mode === "compute") {
    const idempotencyKey = `${a.runId}:${task.nodeId}:${task.iteration}`;
    const ids = { runId: a.runId, nodeId: task.nodeId, iteration: task.iteration, attempt: a.attempt };
    const ctx: TaskRunContext = {
      ...ids,
      idempotencyKey,
      signal,
      input: a.input,
      cwd,
      sideEffect: createSideEffect({ db: a.db, ...ids, idempotencyKey, now: a.now, onRecorded: a.onToolCall, signal }),
    };
    if (task.sandbox) return { raw: await runSandboxed({ db: a.db, policy: task.sandbox, body: task.compute!, ctx, now: a.now }) };
    return { raw: await task.compute!(ctx) };
  }
  // Tools the agent runs (defineTool, the built-ins) find the attempt here: journaled under its ids, confined to its cwd.
  const toolContext: ToolContext = {
    db: a.db,
    runId: a.runId,
    nodeId: task.nodeId,
    iteration: task.iteration,
    attempt: a.attempt,
    rootDir: cwd,
    signal,
    now: a.now,
    ...(a.onToolCall ? { onRecorded: a.onToolCall } : {}),
    ...(task.memory?.tools ? { memory: toolMemory(a) } : {}),
  };
  const prompt = task.memory ? await promptWithMemory(a, task.prompt!, signal, a.onToolCall) : task.prompt!;
  // Undefined unless a tracer is registered and this attempt's span is open.
  const traced = tracedAttempt(a.runId, task.nodeId, task.iteration);
  const requestModel = (task.agent as { options?: { model?: unknown } }).options?.model;
  let callStartMs = 0;
  // Refused before anything starts when an agent cannot be held (an AI SDK agent runs in this process).
  if (task.sandbox) refuseUnsandboxable(Array.isArray(task.agent) ? task.agent : [task.agent as Agent], `Task "${task.nodeId}"`);
  const session = task.sandbox
    ? await openAgentSandbox({
        db: a.db,
        policy: task.sandbox,
        ids: { runId: a.runId, nodeId: task.nodeId, iteration: task.iteration, attempt: a.attempt },
        writableRoot: cwd,
        now: a.now,
      })
    : undefined;
  const generated = runWithToolContext(toolContext, () =>
    generateStructured({
      ...(traced === undefined ? {} : { traceparent: traced.traceparent }),
      agent: task.agent!,
      prompt,
      schema: validationSchema(task, a.info),
      signal,
      cwd,
      onCall: (call) => {
        if (traced) callStartMs = a.now();
        spent.callStarted();
        onAgentCall(call);
      },
      onAttempt: (call) => {
        spent.callEnded(call.usage);
        traced?.agentCall({
          startMs: callStartMs,
          endMs: a.now(),
          ...(call.agentId === undefined ? {} : { agentId: call.agentId }),
          ...(typeof requestModel === "string" ? { requestModel } : {}),
          ...(call.usage ? { usage: call.usage } : {}),
          ...(call.error === undefined ? {} : { error: call.error }),
        });
      },
      onEvent: (event) => {
        spent.event(event);
        a.onAgentEvent?.(event);
      },
      ...(a.onAgentFallback ? { onFallback: a.onAgentFallback } : {}),
      ...(a.pricing ? { pricing: a.pricing } : {}),
      ...(task.maxSchemaRetries === undefined ? {} : { maxSchemaRetries: task.maxSchemaRetries }),
      ...(session ? { sandbox: session.sandbox } : {}),
    }),
  );
  const result = session ? await settleSession(session, generated) : await generated;
  return { raw: result.value, responseText: result.text };
}

type Guarded<T> = {
  /** Settles with the work, or rejects with the stop reason as soon as the attempt is stopped. */
  result: Promise<T>;
  /** The work itself, which may run on after a stop if it ignores its signal. */
  body: Promise<T>;
  /** Whether `thrown` is the reason this guard stopped the attempt with. */
  isStop(thrown: unknown): boolean;
};

/** Runs `work` under the task's timeout and the run's cancellation. */
function guarded<T>(a: AttemptInput, work: (signal: AbortSignal) => Promise<T>): Guarded<T> {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  let stopReason: SmithersError | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const stop = (reason: SmithersError) => {
      stopReason ??= reason;
      controller.abort(reason);
      reject(reason);
    };
    const onRunAbort = () => stop(new SmithersError("TASK_CANCELLED", `Task "${a.task.nodeId}" was cancelled`, { nodeId: a.task.nodeId }));
    if (a.runSignal.aborted) onRunAbort();
    a.runSignal.addEventListener("abort", onRunAbort, { once: true });
    cleanups.push(() => a.runSignal.removeEventListener("abort", onRunAbort));
    // timeoutMs={Infinity} sets no timer; one past MAX_TIMER_MS is clamped (a longer delay would fire at once).
    if (a.task.timeoutMs !== undefined && Number.isFinite(a.task.timeoutMs)) {
      const clock = a.clock ?? SYSTEM_CLOCK;
      const timer = clock.setTimeout(
        () =>
          stop(
            new SmithersError("TASK_TIMEOUT", `Task "${a.task.nodeId}" exceeded its timeout of ${a.task.timeoutMs} ms`, {
              nodeId: a.task.nodeId,
              timeoutMs: a.task.timeoutMs,
            }),
          ),
        Math.min(a.task.timeoutMs, MAX_TIMER_MS),
      );
      cleanups.push(() => clock.clearTimeout(timer));
    }
  });
  stopped.catch(() => undefined);
  // A body that throws synchronously is a rejected body, not a throw out of the engine; an
  // attempt stopped before its body began never begins it.
  const body = Promise.resolve().then(() => {
    if (controller.signal.aborted) throw controller.signal.reason;
    return work(controller.signal);
  });
  const result = Promise.race([body, stopped]).finally(() => cleanups.forEach((c) => c()));
  return { result, body, isStop: (thrown) => thrown !== undefined && thrown === stopReason };
}

function asTaskError(a: AttemptInput, error: unknown): SmithersError {
  const details = { nodeId: a.task.nodeId, iteration: a.task.iteration, attempt: a.attempt };
  try {
    if (SmithersError.is(error)) {
      const copy = new SmithersError(error.code, error.message, { ...error.details, ...details, cause: error.details.cause });
      copy.stack = error.stack; // where it was thrown (the author's call, if theirs), not this copy
      return copy;
    }
    return new SmithersError("TASK_FAILED", `Task "${a.task.nodeId}" failed: ${describeThrown(error)}`, { ...details, cause: error });
  } catch {
    // A thrown value whose every property access throws (a hostile Proxy) still fails the task.
    return new SmithersError("TASK_FAILED", `Task "${a.task.nodeId}" failed with a value that cannot be read`, details);
  }
}

/**
 * Closes the attempt only while it is still `running`: if another process resumed the run and
 * abandoned this attempt meanwhile, the transaction rolls back so no stale output lands.
 */
async function closeAttempt(
  q: Parameters<typeof attempts.finishAttempt>[0],
  key: Parameters<typeof attempts.finishAttempt>[1],
  patch: Parameters<typeof attempts.finishAttempt>[2],
): Promise<void> {
  if ((await attempts.finishAttempt(q, key, patch)) === 0) {
    throw new SmithersError("RUN_OWNED", `Attempt ${key.attempt} of "${key.nodeId}" was taken over by another process`, {
      nodeId: key.nodeId,
      attempt: key.attempt,
    });
  }
}

/** Inside the step's transaction, before the work starts: the node is running, the attempt exists. */
export async function recordStart(q: Sql, a: AttemptInput): Promise<void> {
  const { task } = a;
  await nodes.upsertNode(q, {
    runId: a.runId,
    nodeId: task.nodeId,
    iteration: task.iteration,
    state: "running",
    lastAttempt: a.attempt,
    updatedAtMs: a.startedAtMs,
    outputTable: a.info.tableName,
    label: task.label ?? null,
    defSig: definitionSignature(task, a.info.tableName),
  });
  await attempts.insertAttempt(q, {
    runId: a.runId,
    nodeId: task.nodeId,
    iteration: task.iteration,
    attempt: a.attempt,
    state: "running",
    startedAtMs: a.startedAtMs,
    metaJson: task.meta ? safeStringify(task.meta) : null,
  });
}

/** Starts the work (after recordStart committed); its result is validated and never throws; nothing is written. */
export function performAttempt(a: AttemptInput): AttemptWork {
  // An agent call that ignores its signal outlives generateStructured's own abort: it is part of the body.
  const agentCalls: Promise<unknown>[] = [];
  const spent = new SpendMeter(a.pricing);
  const guard = guarded(a, (signal) => {
    const body = () => produce(a, signal, (call) => agentCalls.push(call), spent);
    if (!a.task.cache) return body();
    return throughCache(a, signal, (raw) => validationSchema(a.task, a.info).safeParse(shapeForTable(a.info, raw)).success, body);
  });
  const bodySettled = guard.body
    .then(
      () => undefined,
      () => undefined,
    )
    .then(() => Promise.allSettled(agentCalls))
    .then(() => undefined);
  const withSpend = (result: AttemptResult): AttemptResult => {
    spent.finish();
    return spent.usage ? { ...result, usage: spent.usage, ...(spent.unpricedModel ? { unpricedModel: spent.unpricedModel } : {}) } : result;
  };
  return { result: validated(a, guard).then(withSpend), bodySettled };
}

async function validated(a: AttemptInput, guard: Guarded<Produced>): Promise<AttemptResult> {
  try {
    const { raw, responseText, cache } = await guard.result;
    const data = checkedOutput(a, raw);
    const retained = a.task.memory?.retain ? await retainDigest(a, data, a.onToolCall) : undefined;
    return { ok: true, data, responseText, finishedAtMs: a.now(), ...(cache ? { cache } : {}), ...(retained ? { retained } : {}) };
  } catch (thrown) {
    return { ok: false, thrown, error: asTaskError(a, thrown), finishedAtMs: a.now(), ...(guard.isStop(thrown) ? { stopped: true } : {}) };
  }
}

/** The output as its schema parses it; INVALID_OUTPUT when it does not match or cannot be stored. */
function checkedOutput(a: AttemptInput, raw: unknown): Record<string, unknown> {
  const { task, info } = a;
  const parsed = safeParseWarming(validationSchema(task, info), shapeForTable(info, raw));
  if (!parsed.success) {
    throw new SmithersError(
      "INVALID_OUTPUT",
      `Task "${task.nodeId}" produced output that does not match its schema: ${formatZodIssues(parsed.error.issues, "; ")}`,
      {
        issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
      },
    );
  }
  assertStorable(task.nodeId, parsed.data);
  return parsed.data as Record<string, unknown>;
}

/**
 * An attempt whose work touches nothing outside the engine: a static value, into a table the
 * engine writes whole (not a custom table read back after its commit), with no cache entry to
 * look up and no worktree to create. Running it again after a crash is not observable, so its
 * start and outcome may commit together, with the steps around it (see Run.stepInner).
 */
export function isPureAttempt(a: AttemptInput): boolean {
  const { task } = a;
  return task.mode === "static" && !task.cache && !task.worktree && !a.info.custom;
}

/** performAttempt for a pure attempt (isPureAttempt), done at once: its value checked against the schema. */
export function performPureAttempt(a: AttemptInput): AttemptResult {
  try {
    if (a.runSignal.aborted) throw new SmithersError("TASK_CANCELLED", `Task "${a.task.nodeId}" was cancelled`, { nodeId: a.task.nodeId });
    return { ok: true, data: checkedOutput(a, a.task.staticValue), finishedAtMs: a.now() };
  } catch (thrown) {
    return { ok: false, thrown, error: asTaskError(a, thrown), finishedAtMs: a.now() };
  }
}

/** Output the schema accepts but SQLite cannot hold (a BigInt or a cycle in a JSON field) fails the attempt, not the step that stores it. */
function assertStorable(nodeId: string, data: unknown): void {
  try {
    JSON.stringify(data);
  } catch (cause) {
    throw new SmithersError("INVALID_OUTPUT", `Task "${nodeId}" produced output that cannot be stored: ${describeThrown(cause)}`, { cause });
  }
}

type AttemptKey = { runId: string; nodeId: string; iteration: number; attempt: number };

/** The attempt row, closed; or written once, as it ended, when its start wrote none (startInSettle). */
function endAttempt(q: Sql, a: AttemptInput, key: AttemptKey, patch: Parameters<typeof attempts.finishAttempt>[2]): Promise<unknown> {
  if (!a.startInSettle) return closeAttempt(q, key, patch);
  return attempts.insertEndedAttempt(q, { ...key, startedAtMs: a.startedAtMs, metaJson: a.task.meta ? safeStringify(a.task.meta) : null, ...patch });
}

/**
 * Inside a step's transaction: closes the attempt (only while it is still `running`: if another
 * process took the run over, RUN_OWNED rolls the step back) and writes the output or the error.
 */
export async function recordSettle(q: Sql, a: AttemptInput, result: AttemptResult, outcome: AttemptOutcome): Promise<void> {
  const { task, info } = a;
  const key = { runId: a.runId, nodeId: task.nodeId, iteration: task.iteration, attempt: a.attempt };
  const node: nodes.NodeUpsert = {
    runId: a.runId,
    nodeId: task.nodeId,
    iteration: task.iteration,
    state: "",
    lastAttempt: a.attempt,
    updatedAtMs: result.finishedAtMs,
    outputTable: info.tableName,
    label: task.label ?? null,
  };
  // Started in this transaction (startInSettle): recordStart wrote no row, so this one carries what it would have.
  if (a.startInSettle) node.defSig = definitionSignature(task, info.tableName);
  const usage = usageColumns(result.usage);
  if (result.ok) {
    const { cache } = result;
    await endAttempt(q, a, key, {
      state: "finished",
      finishedAtMs: result.finishedAtMs,
      responseText: result.responseText ?? null,
      cached: cache?.hit === true,
      ...usage,
    });
    await writeOutputRow(q, info, key, result.data);
    if (result.retained) await writeDigest(q, result.retained);
    if (cache && !cache.hit) await storeCacheEntry(q, a, cache, result.data, result.finishedAtMs);
    node.state = "finished";
    await nodes.upsertNode(q, node);
    if (task.scorers) await scorers.insertPendingScores(q, pendingScoreRows(task, key, result.finishedAtMs - a.startedAtMs, result.finishedAtMs));
    return;
  }
  if (outcome.kind === "suspended") {
    await endAttempt(q, a, key, { state: "waiting", finishedAtMs: result.finishedAtMs, ...usage });
    await nodes.upsertNode(q, { ...node, state: outcome.status, wakeAtMs: outcome.wakeAtMs ?? null });
    return;
  }
  const rateWait = outcome.kind === "failed" && outcome.rateLimited ? outcome.waitUntilMs : undefined;
  const state =
    outcome.kind === "cancelled"
      ? "cancelled"
      : rateWait !== undefined
        ? "waiting-rate"
        : outcome.kind === "failed" && outcome.retryable
          ? "pending"
          : "failed";
  const attemptState = result.abandoned ? "abandoned" : outcome.kind === "cancelled" ? "cancelled" : "failed";
  await endAttempt(q, a, key, { state: attemptState, finishedAtMs: result.finishedAtMs, errorJson: errorJsonText(result.error), ...usage });
  await nodes.upsertNode(q, {
    ...node,
    state,
    wakeAtMs: rateWait ?? (outcome.kind === "failed" && outcome.retryable ? (outcome.retryAtMs ?? null) : null),
    errorJson: state === "failed" ? JSON.stringify(errorSummaryJson(result.error)) : null,
  });
}

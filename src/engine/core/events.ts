import { basename, extname } from "node:path";
import type { z } from "zod";
import { SmithersError } from "../../errors/index.ts";
import { isWaiting, WAITING_STATUSES, type RunStatus } from "./states.ts";
import { EVENT_TYPES, type ToolCallReport } from "../../contract/index.ts";
import { lazyEnum, zod } from "../../schema/index.ts";

/** Every event type the engine emits (see names.ts), as a zod enum built on first use. */
export const smithersEventTypeSchema = lazyEnum(EVENT_TYPES);
export type SmithersEventType = (typeof EVENT_TYPES)[number];

/**
 * One schema per event type, each with exactly the fields that type carries (strict: an extra
 * field fails), joined as a discriminated union on `type`. Built on first use, not at import:
 * some 150 zod objects are several ms of every process's start, and the engine itself never
 * parses an event with it (tests and tools do).
 */
export function smithersEventSchema(): EventSchema {
  eventSchema ??= buildEventSchema();
  return eventSchema;
}
let eventSchema: EventSchema | undefined;
type EventSchema = ReturnType<typeof buildEventSchema>;

function buildEventSchema() {
  const z = zod();
  const T = Object.fromEntries(EVENT_TYPES.map((type) => [type, type])) as { [K in SmithersEventType]: K };
  /** An error as `errorToJson` stores it: code, message and details. */
  const ErrorJsonSchema = z.record(z.string(), z.unknown());

  /** `runId` and `timestampMs` are columns of `_smithers_events`; `type` too; the rest is `payload_json`. */
  const base = { runId: z.string(), timestampMs: z.number() };
  const node = { ...base, nodeId: z.string(), iteration: z.number().int() };
  const attempt = { ...node, attempt: z.number().int() };
  const variant = <K extends SmithersEventType, S extends z.ZodRawShape>(type: K, shape: S) => z.strictObject({ type: z.literal(type), ...shape });

  return z.discriminatedUnion("type", [
    variant(T.RunStarted, { ...base, status: z.literal("running") }),
    variant(T.RunResumed, { ...base, status: z.literal("running") }),
    /**
     * A process claimed the run to resume it (a stale owner's, or a wait that is over) and could
     * not: its workflow did not load there, or resuming failed. The claim was handed back; `by` is
     * the process (owner id) that tried. Repeats of the same reason are journalled once.
     */
    variant(T.RunResumeFailed, { ...base, reason: z.string(), by: z.string() }),
    variant(T.RunFinished, { ...base, status: z.literal("finished") }),
    variant(T.RunFailed, { ...base, status: z.literal("failed"), error: ErrorJsonSchema }),
    variant(T.RunCancelled, { ...base, status: z.literal("cancelled") }),
    /**
     * The run ended `continued`: `newRunId` carries on. `iteration`: the loop iteration the new run
     * starts at (`<Loop continueAsNewEvery>`), else the iteration the run was at; `carriedStateSize`:
     * bytes of the JSON `state` handed over (0 without one).
     */
    variant(T.RunContinuedAsNew, {
      ...base,
      status: z.literal("continued"),
      newRunId: z.string(),
      iteration: z.number().int(),
      carriedStateSize: z.number().int(),
    }),
    variant(T.NodeStarted, attempt),
    /** `cached`: the output came from `_smithers_cache` (a `cache` policy's hit); the body did not run. */
    variant(T.NodeFinished, { ...attempt, durationMs: z.number(), cached: z.literal(true).optional() }),
    /** No `durationMs` when no attempt ran: a task failed for its crash loop (TASK_CRASH_LOOP) before starting again. */
    variant(T.NodeFailed, { ...attempt, durationMs: z.number().optional(), error: ErrorJsonSchema }),
    /** `attempt` is the attempt that will run next, not before `retryAtMs` (`delayMs` after the failure was settled). */
    variant(T.NodeRetrying, { ...attempt, delayMs: z.number(), retryAtMs: z.number() }),
    variant(T.NodeSkipped, node),
    variant(T.NodeCancelled, { ...attempt, durationMs: z.number() }),
    /**
     * An attempt closed without its body known to have ended: `process-died` (its process died;
     * found at resume) or `body-unsettled` (stopped, it did not settle within the grace period and
     * may still be running; `error` says what stopped it).
     */
    variant(T.NodeAbandoned, {
      ...attempt,
      reason: z.enum(["process-died", "body-unsettled"]),
      error: ErrorJsonSchema.optional(),
      /** The agent subprocess group the dead process had left running, which this resume ended. */
      killedAgentPid: z.number().int().optional(),
    }),
    variant(T.LoopAdvanced, { ...base, loopId: z.string(), iteration: z.number().int() }),
    variant(T.LoopFinished, { ...base, loopId: z.string(), iteration: z.number().int() }),
    variant(T.FrameCommitted, { ...base, frameNo: z.number().int(), encoding: z.enum(["full", "keyframe", "delta"]) }),
    variant(T.ToolCallStarted, { ...attempt, toolName: z.string() }),
    /** `replayed`: a side-effect tool call an earlier attempt made with the same input; its recorded result was returned, nothing ran. */
    variant(T.ToolCallFinished, { ...attempt, toolName: z.string(), status: z.enum(["succeeded", "failed", "replayed"]) }),
    /** The run stopped with nothing left to do but wait; its process may exit, a resume continues it. */
    variant(T.RunWaiting, { ...base, status: z.enum(WAITING_STATUSES) }),
    variant(T.ApprovalRequested, { ...node, title: z.string() }),
    variant(T.ApprovalDecided, { ...node, approved: z.boolean(), decidedBy: z.string().nullable() }),
    variant(T.TimerScheduled, { ...node, fireAtMs: z.number() }),
    /** `firedLateMs`: how long after its time it fired (a process that was down at the time). */
    variant(T.TimerFired, { ...node, firedLateMs: z.number() }),
    /** A node started waiting for a signal of this name (and correlation id). */
    variant(T.SignalWaiting, { ...node, signalName: z.string(), correlationId: z.string().nullable() }),
    /** A waiting node took the signal with this seq. */
    variant(T.SignalReceived, { ...node, signalName: z.string(), seq: z.number().int(), correlationId: z.string().nullable() }),
    /** A signal sent before its node started failed that node's schema when offered to it: it is not offered again. */
    variant(T.SignalRejected, { ...node, signalName: z.string(), seq: z.number().int(), error: ErrorJsonSchema }),
    /** A signal wait or human task reached its timeoutMs; `outcome` is what it did (fail, skip, continue). */
    variant(T.WaitTimedOut, { ...node, outcome: z.enum(["fail", "skip", "continue"]) }),
    variant(T.HumanRequested, { ...node, requestId: z.string(), prompt: z.string() }),
    /** `accepted: false`: the answer failed the output schema at the engine and the person is asked again (or the node fails). */
    variant(T.HumanAnswered, { ...node, requestId: z.string(), accepted: z.boolean(), answeredBy: z.string().nullable() }),
    /** A `<Subflow>`'s child run stopped waiting (`childStatus`): the node waits with it; the next attempt resumes the child. */
    variant(T.SubflowWaiting, { ...attempt, childRunId: z.string(), childStatus: z.enum(WAITING_STATUSES) }),
    /**
     * An agent task's attempt moved from agent `fromIndex` of its list (`agent={[...]}`,
     * `fallbackAgent`) to the next one, because that agent failed with `code` (a rate limit, quota,
     * auth failure, crash, or replies that never matched the schema).
     */
    variant(T.AgentFallback, {
      ...attempt,
      fromIndex: z.number().int(),
      toIndex: z.number().int(),
      fromAgent: z.string().nullable(),
      toAgent: z.string().nullable(),
      code: z.string(),
    }),
    /**
     * What a task's agent reported while working, for an operator following it: `text` (its reply
     * as it arrives) or `tool` (a tool it called: name and input, capped). At most OUTPUT_TEXT_MAX characters each.
     */
    variant(T.NodeOutput, { ...attempt, stream: z.enum(["text", "tool"]), text: z.string() }),
    /**
     * `smithers serve` refused to start a run: its queue held `waiting` runs (its `capacity`).
     * Journalled under the server's pseudo-run `SERVER_RUN_ID`; `refusedRunId` is the run asked for.
     */
    variant(T.RunRefused, {
      ...base,
      refusedRunId: z.string(),
      workflow: z.string(),
      waiting: z.number().int(),
      capacity: z.number().int(),
      retryAfterSeconds: z.number().int(),
    }),
    /** The run was made by forking `parentRunId` at frame `frameNo`; `reset`: the node ids it runs again (asked for and downstream). */
    variant(T.RunForked, {
      ...base,
      status: z.literal("paused"),
      parentRunId: z.string(),
      frameNo: z.number().int(),
      resetNodes: z.array(z.string()),
      reset: z.array(z.string()),
      copied: z.number().int(),
    }),
    /**
     * The run was reset in place from frame `fromFrame` to `toFrame`; `removed` holds everything
     * taken out (node rows, output rows, frames, approvals, human requests); `reverted`: the tool
     * calls whose revert ran.
     */
    variant(T.RunRewound, {
      ...base,
      status: z.literal("paused"),
      previousStatus: z.string(),
      fromFrame: z.number().int(),
      toFrame: z.number().int(),
      removed: z.record(z.string(), z.unknown()),
      reverted: z.array(z.record(z.string(), z.unknown())),
    }),
    /** A resume went on with changed code (allowed): the hashes, and the tasks changed, added and removed (see code-check.ts). */
    variant(T.WorkflowCodeChanged, {
      ...base,
      oldHash: z.string(),
      newHash: z.string(),
      changed: z.array(z.object({ nodeId: z.string(), iteration: z.number().int() })),
      added: z.array(z.string()),
      removed: z.array(z.string()),
    }),
    /** fork, replay or rewind went on (forced) across side effects that happened or may have: `calls`, the journal rows concerned. */
    variant(T.SideEffectBoundaryCrossed, {
      ...base,
      command: z.enum(["fork", "rewind"]),
      fromRunId: z.string().optional(),
      calls: z.array(z.record(z.string(), z.unknown())),
    }),
  ]);
}

/** The run id the server's own events (RunRefused) are journalled under. */
export const SERVER_RUN_ID = "_server";

/**
 * Refuses a run id chosen for a new run (INVALID_RUN_ID): ids starting with `_` are reserved for
 * Smithers' own journals such as SERVER_RUN_ID, whose events a run of that name would mix with its own.
 */
export function checkNewRunId(runId: string): void {
  if (runId === "" || runId.startsWith("_")) {
    const why = runId === "" ? "a run id cannot be empty" : `ids starting with "_" are reserved (${SERVER_RUN_ID} journals the server's own events)`;
    throw new SmithersError("INVALID_RUN_ID", `Run id ${JSON.stringify(runId)} refused: ${why}`, { runId });
  }
}

/** The name a worker finds a queued workflow by (`--workflows DIR`): its file name without extension, as `serve` registers it. */
export const queueName = (workflowPath: string) => basename(workflowPath, extname(workflowPath));
export type SmithersEvent = z.infer<EventSchema>;

/** The event of one type. @example const e: EventOf<"NodeFailed"> = ...; e.error */
export type EventOf<K extends SmithersEventType> = Extract<SmithersEvent, { type: K }>;

/** `Omit` applied to each member of a union (plain `Omit` would merge the variants). */
export type OmitEach<E, K extends PropertyKey> = E extends unknown ? Omit<E, K> : never;

/** An event before the bus stamps it with the run id and the time. */
export type EventBody = OmitEach<SmithersEvent, "runId" | "timestampMs">;

export type { ToolCallReport };
// The contract's ToolCallReport is exactly the ToolCall events without what the engine adds: a change to either fails here.
type DerivedToolCallReport = OmitEach<EventOf<"ToolCallStarted" | "ToolCallFinished">, "runId" | "timestampMs" | "nodeId" | "iteration" | "attempt">;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const toolCallReportMatches: Same<ToolCallReport, DerivedToolCallReport> = true;
void toolCallReportMatches;

/** The event a run ends with, for its final status. */
export function runEndedEvent(status: RunStatus, error: Record<string, unknown> | undefined): EventBody {
  if (status === "cancelled") return { type: "RunCancelled", status };
  if (status === "failed") return { type: "RunFailed", status, error: error ?? {} };
  if (isWaiting(status)) return { type: "RunWaiting", status };
  return { type: "RunFinished", status: "finished" };
}

/**
 * The API contract: the names and JSON shapes Smithers shows the outside world, in one module
 * that imports nothing. The server sends these shapes (GET /runs, /runs/:id, /inbox, frames,
 * outputs, events), `--json` output prints the same ones where it is the same data, the engine's
 * schemas are built from the name lists, and the dashboard (a browser program that bundles no
 * zod) reads them: a field changes here, and every front door and the UI see it together.
 */
import type { RunScores, ScorerSummary } from "./compare.ts";

/** Every event type the engine emits; `_smithers_events.type` holds one of these. */
export const EVENT_TYPES = [
  "RunStarted",
  "RunResumed",
  "RunResumeFailed",
  "RunFinished",
  "RunFailed",
  "RunCancelled",
  "RunContinuedAsNew",
  "NodeStarted",
  "NodeFinished",
  "NodeFailed",
  "NodeRetrying",
  "NodeSkipped",
  "NodeCancelled",
  "NodeAbandoned",
  "LoopAdvanced",
  "LoopFinished",
  "FrameCommitted",
  "ToolCallStarted",
  "ToolCallFinished",
  "RunWaiting",
  "ApprovalRequested",
  "ApprovalDecided",
  "TimerScheduled",
  "TimerFired",
  "SignalWaiting",
  "SignalReceived",
  "SignalRejected",
  "WaitTimedOut",
  "HumanRequested",
  "HumanAnswered",
  "SubflowWaiting",
  "AgentFallback",
  "NodeOutput",
  "RunRefused",
  "RunForked",
  "RunRewound",
  "WorkflowCodeChanged",
  "SideEffectBoundaryCrossed",
] as const;

/**
 * The statuses of a run. `continued`: it handed its work to a new run; `paused`: it holds its state
 * at a frame and no process executes it (a fork not started, a rewound run).
 */
export const RUN_STATUSES = [
  "running",
  "finished",
  "continued",
  "failed",
  "cancelled",
  "paused",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
  "waiting-slot",
  "waiting-rate",
] as const;

/** Statuses after which a run never runs again (resuming a failed or cancelled one is a new attempt at it). */
export const ENDED_RUN_STATUSES = ["finished", "continued", "failed", "cancelled"] as const;

/**
 * Statuses of a run that waits for the world (a person, a signal, a time, a concurrency slot, a
 * rate window); what the daemon looks at.
 */
export const WAITING_STATUSES = ["waiting-approval", "waiting-event", "waiting-timer", "waiting-slot", "waiting-rate"] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

/** Tokens and cost, summed over agent attempts; `costUsd` is null while no attempt reported (or was priced at) one. */
export type Usage = { inputTokens: number; cachedInputTokens: number; outputTokens: number; costUsd: number | null };

/** A stored error as the API shows it. */
export type ErrorSummary = { code?: string; message?: string };

/**
 * A failed attempt's stored error: its code and message, and `stack` when it was thrown from the
 * author's code: the frames in their files (`at fn (/abs/path.tsx:12:11)`), then one line saying
 * how many internal frames (Smithers, node_modules, the runtime) were left out.
 */
export type AttemptError = ErrorSummary & { stack?: string[] };

/** One failed attempt of a task, with its error. */
export type FailedAttempt = { attempt: number; finishedAtMs: number | null; error: AttemptError };

/** What every view of a run shows of it: its identity and times (`inspect`, `ps`, GET /runs). */
export type RunHeader = {
  runId: string;
  /** A RunStatus, or `queued` for a request no worker has started. */
  status: string;
  workflowName: string;
  workflowPath: string | null;
  parentRunId: string | null;
  createdAtMs: number;
  startedAtMs: number | null;
  finishedAtMs: number | null;
};

/**
 * A run's progress as `ps` and the dashboard print it: tasks done of all it recorded, and how many
 * failed or were cancelled when any did (`3/5 (1 failed)`).
 */
export function progressText(p: RunSummary["progress"]): string {
  return `${p.done}/${p.total}${p.failed > 0 ? ` (${p.failed} failed)` : ""}`;
}

/** One run of `ps --json` (an array of these). */
export type RunSummary = RunHeader & {
  /** finishedAtMs (or now, for a run not ended) minus startedAtMs; null before it started. */
  durationMs: number | null;
  /**
   * Tasks done (finished or skipped), tasks failed or cancelled, and all tasks the run has
   * recorded: a run that failed with 3 of 5 tasks finished is 3/5, never a full bar.
   */
  progress: { done: number; failed: number; total: number };
  /** The cost its agents reported, in US dollars; null when none reported one. */
  costUsd: number | null;
  /** Tokens and cost its agents reported, summed over all attempts. */
  usage: Usage;
  /**
   * For a run not ended: the last try to resume it failed (RunResumeFailed, not followed by a
   * resume that went ahead): why, which process tried, when. Null otherwise.
   */
  resumeFailure: { reason: string; by: string; atMs: number } | null;
  /** A queued run (status `queued`) only: its place in the queue. */
  queue?: QueuePlace;
};

/** How a queued run is ordered: workers claim higher priorities first and take turns between tenants; not before `notBeforeMs` (a debounce). */
export type QueuePlace = { priority: number; tenant: string | null; notBeforeMs: number | null; debounceKey: string | null };

/**
 * POST /runs' answer (202; 200 for a repeated Idempotency-Key): the run, and `reused` when the start
 * added none: `idempotency-key` (the key's first run, in its current status) or `debounce` (the
 * waiting run of that debounce key, which took this input).
 */
export type StartRunResponse = { runId: string; status: string; reused?: "idempotency-key" | "debounce" };

/** One run of GET /runs and the `runs` events of GET /runs/stream: the `ps --json` summary, with `workflow` named as in the rest of the API. */
export type RunListItem = RunSummary & { workflow: string };

/** A task of `inspect`: one node at one iteration. */
export type NodeReport = {
  nodeId: string;
  iteration: number;
  state: string;
  attempts: number;
  /** Time spent in its attempts, in ms (finished ones). */
  durationMs: number;
  error: ErrorSummary | null;
  usage: Usage | null;
  /** Its failed attempts, the last few (MAX_FAILED_ATTEMPTS_SHOWN), oldest first, each with its error and stack. */
  failedAttempts: FailedAttempt[];
};

/** What a waterfall segment shows: a wait for a worker, an attempt, the backoff before a retry, or a wait of the task. */
export const WATERFALL_KINDS = ["queued", "running", "retry-wait", "approval", "timer", "signal", "human"] as const;
export type WaterfallKind = (typeof WATERFALL_KINDS)[number];

/**
 * One bar of the run page's waterfall: from `startMs` to `endMs` (null: still going). A `running`
 * bar is one attempt, with its outcome (`state`), error and usage; a `queued` bar is the run's wait
 * for a worker (no node).
 */
export type WaterfallBar = {
  kind: WaterfallKind;
  nodeId: string | null;
  iteration: number;
  attempt: number | null;
  state: string | null;
  startMs: number;
  endMs: number | null;
  error: AttemptError | null;
  usage: Usage | null;
};

/** GET /runs/:id/waterfall: every bar of the run in start order, and the time axis they sit on. */
export type Waterfall = { runId: string; fromMs: number; toMs: number; bars: WaterfallBar[] };

/**
 * GET /runs/activity: for the runs created in the last `minutes` minutes, how many started, finished
 * and failed in each minute (oldest first, every minute listed); and the cost agents reported per
 * UTC day over the last `days` days (days without cost left out).
 */
export type RunActivity = {
  perMinute: { minuteMs: number; started: number; finished: number; failed: number }[];
  spendPerDay: { dayMs: number; costUsd: number }[];
};

/** A node waiting for a signal or a timer (an approval or a human answer is listed on its own too). */
export type WaitReport = {
  nodeId: string;
  iteration: number;
  state: string;
  /** When its timer fires or its wait times out, if it does. */
  wakeAtMs: number | null;
  /** A signal wait: `{ event, correlationId, schema }` as stored. */
  wait: unknown;
};

export type HumanRequestReport = {
  requestId: string;
  nodeId: string;
  iteration: number;
  kind: string;
  prompt: string;
  requestedAtMs: number;
  timeoutAtMs: number | null;
};

export type ApprovalOption = { key: string; label?: string; summary?: string };

/** What an approval gate asks, as its component declared it. */
export type ApprovalRequest = {
  title?: string;
  summary?: string;
  metadata?: Record<string, unknown>;
  /** Absent for an approve-mode `<Approval>`; "gate" for a `<Task needsApproval>`. */
  mode?: "select" | "rank" | "gate";
  options?: ApprovalOption[];
};

/** A gate waiting for a decision (`runId`: whose gate it is, the run's or a waiting child run's). */
export type PendingApproval = {
  runId: string;
  workflowName: string;
  nodeId: string;
  iteration: number;
  requestedAtMs: number | null;
  request: ApprovalRequest;
};

/** `smithers inspect --json` and GET /runs/:id. */
export type InspectReport = RunHeader & {
  error: ErrorSummary | null;
  budget: { maxCostUsd?: number; maxTokens?: number } | null;
  /** The run's input as stored (fields of the `input` row), null when it stored none. */
  input: Record<string, unknown> | null;
  usage: Usage;
  nodes: NodeReport[];
  pendingApprovals: PendingApproval[];
  pendingHumanRequests: HumanRequestReport[];
  waits: WaitReport[];
  /** The run's concurrency slots by key: held (its tasks run) and waited for (`waiting-slot`). */
  slots: RunSlots[];
};

/** One key's slots as one run holds and waits for them. */
export type RunSlots = { key: string; held: number; waiting: number };

/**
 * One key of the limits, as `smithers limits` and GET /metrics see it: the limits last declared
 * for it, the slots held and waited for by every run, and its rate window's use in the last minute.
 */
export type LimitUse = {
  key: string;
  concurrency: number | null;
  perMinute: number | null;
  tokensPerMinute: number | null;
  held: number;
  waiting: number;
  requestsLastMinute: number;
  tokensLastMinute: number;
  /** A provider's 429 holds the key until then (null: not held). */
  blockedUntilMs: number | null;
};

/** GET /runs/:id of a request no worker has started: its summary; no tasks, error or gates yet. */
export type QueuedRunReport = Omit<RunSummary, "usage"> & { workflow: string; nodes: []; usage: null; error: null; pendingApprovals: [] };

/** GET /runs/:id/outputs: each task's output row as its author sees it (without run, node and iteration keys). */
export type OutputRow = { nodeId: string; iteration: number; table: string; row: Record<string, unknown> };

/** A frame's prop value (src/codec's PropValue). */
export type PropValue = string | number | boolean | null | PropValue[] | { [k: string]: PropValue };

/** A frame's tree (src/codec's XmlElement): `workflow` at the root, containers, and `task` leaves with `state`. */
export type FrameTree = { tag: string; props: Record<string, PropValue>; children: FrameTree[] };

export type NodeRef = { tag: string; id: string; iteration: number };

/** What changed between two frames. */
export type FrameChanges = {
  mounted: (NodeRef & { props: Record<string, PropValue> })[];
  unmounted: (NodeRef & { props: Record<string, PropValue> })[];
  changed: (NodeRef & { props: Record<string, { from?: PropValue; to?: PropValue }> })[];
};

/** A run forked from a frame (`smithers fork`). */
export type ForkRef = { runId: string; status: string; createdAtMs: number };

/** GET /runs/:id/frames */
export type FrameList = {
  runId: string;
  count: number;
  frames: { frameNo: number; createdAtMs: number; encoding: string; bytes: number; forks: ForkRef[] }[];
};

/** GET /runs/:id/frames/:n */
export type FrameAt = {
  runId: string;
  frameNo: number;
  lastFrameNo: number;
  createdAtMs: number | null;
  tree: FrameTree;
  changes: FrameChanges;
  forks: ForkRef[];
};

/** GET /inbox's approvals: a gate waiting in a run that has not ended. */
export type InboxApproval = PendingApproval & { runStatus: string };

/** A JSON Schema as zod's toJSONSchema writes it, the parts a form reads. */
export type JsonSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: PropValue[];
  const?: PropValue;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
};

/** GET /inbox's human tasks and `smithers human list --json`. */
export type InboxHuman = {
  requestId: string;
  runId: string;
  workflowName: string | null;
  runStatus: string | null;
  nodeId: string;
  iteration: number;
  prompt: string;
  requestedAtMs: number;
  ageMs: number;
  timeoutAtMs: number | null;
  /** Its timeout passed; the run fails the node when it next runs, and an answer is refused. */
  expired: boolean;
  /** The JSON Schema the answer must satisfy. */
  schema: JsonSchema | null;
};

/** GET /inbox */
export type Inbox = { approvals: InboxApproval[]; human: InboxHuman[] };

/** Each SSE event's data on GET /runs/:id/events: the journalled event (its type's fields) with its place in the journal. */
export type JournalEvent = Record<string, unknown> & { type: string; runId: string; seq: number; timestampMs: number };

/** What a task's side-effect call reports (tools/); the engine adds run, node, iteration and attempt to make its ToolCall events. */
export type ToolCallReport =
  | { type: "ToolCallStarted"; toolName: string }
  | { type: "ToolCallFinished"; toolName: string; status: "succeeded" | "failed" | "replayed" };

/** Per scorer over a run: ScorerSummary (the latest attempt of each task) with the lowest and highest score. */
export type ScorerStats = ScorerSummary & { min: number | null; max: number | null };

/** `smithers scores RUN --json`: GET /runs/:id/scores's rows, ordered by node, iteration, attempt and scorer, with a summary per scorer. */
export type RunScoresReport = RunScores & { summary: ScorerStats[] };

/**
 * One sandbox session of a run (a row of `_smithers_sandboxes`): the bubblewrap process a task
 * attempt ran in, with the policy it ran under. `status`: running, finished, failed, or
 * abandoned (closed by a resume after the engine died; `exitCode` null). GET /runs/:id/sandboxes
 * and `smithers sandboxes RUN --json` return them, ordered by node, iteration and attempt.
 */
export type SandboxSession = {
  sandboxId: string;
  nodeId: string | null;
  iteration: number | null;
  attempt: number | null;
  runtime: string;
  /** The policy: network, writableRoot, memoryBytes, cpuSeconds as given (absent: not granted / no limit). */
  policy: Record<string, unknown>;
  status: string;
  rootDir: string | null;
  pid: number | null;
  startedAtMs: number | null;
  completedAtMs: number | null;
  exitCode: number | null;
  /** The code and message of a failure, or why it was abandoned. */
  error: string | null;
};

export type SandboxList = { runId: string; sessions: SandboxSession[] };
export type {
  ComparedTask,
  CompareSide,
  CompareSideTotals,
  RunComparison,
  RunScores,
  ScoreCell,
  ScoreMean,
  ScoreStatus,
  ScorerSummary,
  ScoreValue,
  TaskScore,
} from "./compare.ts";
export { scoreDelta, scoreText } from "./compare.ts";

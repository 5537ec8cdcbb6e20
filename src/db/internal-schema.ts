/**
 * The `_smithers_*` tables: the only definition of Smithers' own bookkeeping.
 * Column names follow the open-source Smithers layout so existing SQL keeps working.
 * Indexes exist for every lookup an adapter makes (see the adapter modules).
 * Each is a Drizzle table whose columns are built when first read (lazy-table.ts).
 */
import { blob, integer, real, text } from "drizzle-orm/sqlite-core/columns";
import { index, uniqueIndex } from "drizzle-orm/sqlite-core/indexes";
import { primaryKey } from "drizzle-orm/sqlite-core/primary-keys";
import { lazySqliteTable } from "./lazy-table.ts";
import { smithersLimits, smithersRateUsage, smithersSlots } from "./limits-schema.ts";

export { smithersLimits, smithersRateUsage, smithersSlots } from "./limits-schema.ts";

export const smithersRuns = lazySqliteTable(
  "_smithers_runs",
  () => ({
    runId: text("run_id").primaryKey(),
    parentRunId: text("parent_run_id"),
    workflowName: text("workflow_name").notNull(),
    workflowPath: text("workflow_path"),
    workflowHash: text("workflow_hash"),
    status: text("status").notNull(),
    createdAtMs: integer("created_at_ms").notNull(),
    startedAtMs: integer("started_at_ms"),
    finishedAtMs: integer("finished_at_ms"),
    heartbeatAtMs: integer("heartbeat_at_ms"),
    /** How often its owner heartbeats (null: DEFAULT_HEARTBEAT_MS); no one judges it stale before several beats were missed. */
    heartbeatMs: integer("heartbeat_ms"),
    runtimeOwnerId: text("runtime_owner_id"),
    cancelRequestedAtMs: integer("cancel_requested_at_ms"),
    vcsType: text("vcs_type"),
    vcsRoot: text("vcs_root"),
    vcsRevision: text("vcs_revision"),
    inputHash: text("input_hash"),
    errorJson: text("error_json"),
    configJson: text("config_json"),
    /**
     * A waiting run: when the daemon should look at it again (its earliest timer or timeout, or
     * "now" once a decision, answer or signal it waits for arrived).
     */
    wakeAtMs: integer("wake_at_ms"),
    /** A run that ended `continued` (`<ContinueAsNew>`, `<Loop continueAsNewEvery>`): the run that carries on its work. */
    nextRunId: text("next_run_id"),
    /** A run started by continuing another one: that run (its `next_run_id` names this one). */
    continuedFromRunId: text("continued_from_run_id"),
    /** What a continued run hands over, as JSON: `{ fromRunId, generation, payload? }`; it reaches ctx.input as `__smithersContinuation`. */
    continuationJson: text("continuation_json"),
    /**
     * The W3C `traceparent` the run's spans hang under, stored when the run was created while a
     * tracer was registered: the caller's active span, or a subflow's parent task span. Every
     * process that executes part of the run (a resume, a worker, a supervisor) continues from it.
     * Null: the trace derived from the run id (engine/telemetry/trace-ids.ts).
     */
    traceParent: text("trace_parent"),
    /** The run's root directory (RunOptions.rootDir, else the working directory it started in), kept for its resumes. */
    rootDir: text("root_dir"),
    /** A run made by `smithers fork` (or replay): the frame of `parent_run_id` it was forked from (null: not a fork). */
    forkedFromFrame: integer("forked_from_frame"),
  }),
  (t) => [
    index("_smithers_runs_status_heartbeat_idx").on(t.status, t.heartbeatAtMs),
    index("_smithers_runs_status_wake_idx").on(t.status, t.wakeAtMs),
    // `smithers ps`: newest first, all runs or those of one status.
    index("_smithers_runs_created_idx").on(t.createdAtMs),
    index("_smithers_runs_status_created_idx").on(t.status, t.createdAtMs),
    // A run's forks (every timeline and frames request) and its <Subflow> children.
    index("_smithers_runs_parent_idx").on(t.parentRunId),
  ],
);

export const smithersNodes = lazySqliteTable(
  "_smithers_nodes",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    state: text("state").notNull(),
    lastAttempt: integer("last_attempt"),
    /**
     * A waiting node's deadline: when its timer fires, or when its signal or human task times out
     * (persisted once, so a restart never moves it); on a `pending` node after a failed attempt,
     * when its retry may start (its backoff).
     */
    wakeAtMs: integer("wake_at_ms"),
    /** A node waiting for a signal: `{ event, correlationId, schema }` (the payload's JSON Schema), what a sender checks against. */
    waitJson: text("wait_json"),
    /**
     * A failed node's error summary (`{ code, message, … }`), null in any other state: what a
     * resumed run decides a `<TryCatchFinally catchErrors>` on and calls its catch with.
     */
    errorJson: text("error_json"),
    updatedAtMs: integer("updated_at_ms").notNull(),
    outputTable: text("output_table").notNull(),
    label: text("label"),
    /**
     * The node's definition signature as of its latest attempt's start (see definitionSignature): a resume
     * under changed code names the nodes whose definitions differ from what they ran with.
     */
    defSig: text("def_sig"),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration] })],
);

export const smithersAttempts = lazySqliteTable(
  "_smithers_attempts",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    attempt: integer("attempt").notNull(),
    state: text("state").notNull(),
    startedAtMs: integer("started_at_ms").notNull(),
    finishedAtMs: integer("finished_at_ms"),
    heartbeatAtMs: integer("heartbeat_at_ms"),
    errorJson: text("error_json"),
    cached: integer("cached", { mode: "boolean" }).notNull().default(false),
    metaJson: text("meta_json"),
    responseText: text("response_text"),
    /** What the attempt's agent calls consumed (null: not an agent, or nothing reported). Input includes cached input. */
    inputTokens: integer("input_tokens"),
    cachedInputTokens: integer("cached_input_tokens"),
    outputTokens: integer("output_tokens"),
    /** Reported by the agent, or priced from the run's `pricing`; null when unknown. */
    costUsd: real("cost_usd"),
    agentModel: text("agent_model"),
    /**
     * The agent subprocess of a running attempt (its pid is its process group) and that process's
     * start time: a resume after the engine died ends the group if it still runs.
     */
    agentPid: integer("agent_pid"),
    agentPidStart: text("agent_pid_start"),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration, t.attempt] })],
);

export const smithersFrames = lazySqliteTable(
  "_smithers_frames",
  () => ({
    runId: text("run_id").notNull(),
    frameNo: integer("frame_no").notNull(),
    createdAtMs: integer("created_at_ms").notNull(),
    xmlJson: text("xml_json").notNull(),
    xmlHash: text("xml_hash").notNull(),
    encoding: text("encoding").notNull().default("full"),
    mountedTaskIdsJson: text("mounted_task_ids_json"),
    note: text("note"),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.frameNo] })],
);

export const smithersApprovals = lazySqliteTable(
  "_smithers_approvals",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    status: text("status").notNull(),
    requestedAtMs: integer("requested_at_ms"),
    decidedAtMs: integer("decided_at_ms"),
    note: text("note"),
    decidedBy: text("decided_by"),
    requestJson: text("request_json"),
    decisionJson: text("decision_json"),
    autoApproved: integer("auto_approved", { mode: "boolean" }).notNull().default(false),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration] }), index("_smithers_approvals_status_idx").on(t.status)],
);

export const smithersHumanRequests = lazySqliteTable(
  "_smithers_human_requests",
  () => ({
    requestId: text("request_id").primaryKey(),
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    kind: text("kind").notNull(),
    status: text("status").notNull(),
    prompt: text("prompt").notNull(),
    schemaJson: text("schema_json"),
    optionsJson: text("options_json"),
    responseJson: text("response_json"),
    requestedAtMs: integer("requested_at_ms").notNull(),
    answeredAtMs: integer("answered_at_ms"),
    answeredBy: text("answered_by"),
    timeoutAtMs: integer("timeout_at_ms"),
  }),
  (t) => [
    index("_smithers_human_requests_status_idx").on(t.status, t.timeoutAtMs),
    index("_smithers_human_requests_run_node_idx").on(t.runId, t.nodeId, t.iteration),
  ],
);

export const smithersCache = lazySqliteTable(
  "_smithers_cache",
  () => ({
    cacheKey: text("cache_key").primaryKey(),
    createdAtMs: integer("created_at_ms").notNull(),
    workflowName: text("workflow_name").notNull(),
    nodeId: text("node_id").notNull(),
    outputTable: text("output_table").notNull(),
    schemaSig: text("schema_sig").notNull(),
    agentSig: text("agent_sig"),
    payloadJson: text("payload_json").notNull(),
  }),
  (t) => [index("_smithers_cache_workflow_node_idx").on(t.workflowName, t.nodeId)],
);

export const smithersSandboxes = lazySqliteTable(
  "_smithers_sandboxes",
  () => ({
    runId: text("run_id").notNull(),
    sandboxId: text("sandbox_id").notNull(),
    runtime: text("runtime").notNull().default("bubblewrap"),
    remoteRunId: text("remote_run_id"),
    workspaceId: text("workspace_id"),
    containerId: text("container_id"),
    configJson: text("config_json").notNull(),
    status: text("status").notNull().default("pending"),
    heartbeatAtMs: integer("heartbeat_at_ms"),
    shippedAtMs: integer("shipped_at_ms"),
    completedAtMs: integer("completed_at_ms"),
    bundlePath: text("bundle_path"),
    // A bubblewrap session of a task attempt: its directory, process, start and exit.
    nodeId: text("node_id"),
    iteration: integer("iteration"),
    attempt: integer("attempt"),
    rootDir: text("root_dir"),
    pid: integer("pid"),
    startedAtMs: integer("started_at_ms"),
    exitCode: integer("exit_code"),
    /** Why the session failed (SANDBOX_* code and message), when it did. */
    errorText: text("error_text"),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.sandboxId] })],
);

export const smithersToolCalls = lazySqliteTable(
  "_smithers_tool_calls",
  () => ({
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    attempt: integer("attempt").notNull(),
    seq: integer("seq").notNull(),
    toolName: text("tool_name").notNull(),
    inputJson: text("input_json"),
    outputJson: text("output_json"),
    startedAtMs: integer("started_at_ms").notNull(),
    finishedAtMs: integer("finished_at_ms"),
    status: text("status").notNull(),
    errorJson: text("error_json"),
    sideEffect: integer("side_effect", { mode: "boolean" }).notNull().default(false),
    idempotencyKey: text("idempotency_key"),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.nodeId, t.iteration, t.attempt, t.seq] }), index("_smithers_tool_calls_idempotency_idx").on(t.idempotencyKey)],
);

export const smithersEvents = lazySqliteTable(
  "_smithers_events",
  () => ({
    runId: text("run_id").notNull(),
    seq: integer("seq").notNull(),
    timestampMs: integer("timestamp_ms").notNull(),
    type: text("type").notNull(),
    payloadJson: text("payload_json").notNull(),
  }),
  (t) => [
    primaryKey({ columns: [t.runId, t.seq] }),
    // Finds duplicate candidates by time (few share one millisecond); no run_id in it, so it stays small.
    index("_smithers_events_time_idx").on(t.timestampMs, t.type),
  ],
);

export const smithersRalph = lazySqliteTable(
  "_smithers_ralph",
  () => ({
    runId: text("run_id").notNull(),
    ralphId: text("ralph_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    done: integer("done", { mode: "boolean" }).notNull().default(false),
    updatedAtMs: integer("updated_at_ms").notNull(),
  }),
  (t) => [primaryKey({ columns: [t.runId, t.ralphId] })],
);

export const smithersCron = lazySqliteTable(
  "_smithers_cron",
  () => ({
    cronId: text("cron_id").primaryKey(),
    pattern: text("pattern").notNull(),
    workflowPath: text("workflow_path").notNull(),
    inputJson: text("input_json"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    createdAtMs: integer("created_at_ms").notNull(),
    lastRunAtMs: integer("last_run_at_ms"),
    nextRunAtMs: integer("next_run_at_ms"),
    errorJson: text("error_json"),
    /** IANA time zone the pattern is read in; null is UTC. */
    timezone: text("timezone"),
    /** The run the latest fire started (`cron:<id>:<slotMs>`). */
    lastRunId: text("last_run_id"),
    /** Missed slots passed over without a run (the policy runs only the latest missed one). */
    skippedSlots: integer("skipped_slots").notNull().default(0),
  }),
  (t) => [index("_smithers_cron_enabled_idx").on(t.enabled, t.cronId), index("_smithers_cron_due_idx").on(t.enabled, t.nextRunAtMs)],
);

export const smithersScorers = lazySqliteTable(
  "_smithers_scorers",
  () => ({
    id: text("id").primaryKey(),
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    attempt: integer("attempt").notNull().default(1),
    scorerId: text("scorer_id").notNull(),
    scorerName: text("scorer_name").notNull(),
    source: text("source").notNull().default("live"),
    /** `pending` (recorded with the attempt's result, not scored yet), `scored`, or `error`. */
    status: text("status").notNull().default("scored"),
    /** 0..1 once scored; null while pending and when the scorer failed (see `error`). */
    score: real("score"),
    reason: text("reason"),
    metaJson: text("meta_json"),
    /** What went wrong for a scorer that threw, timed out or returned a score outside 0..1: `CODE: message`. */
    error: text("error"),
    /** The scored attempt's own latency (what a latency scorer judges). */
    latencyMs: integer("latency_ms"),
    /** How long the scorer itself took. */
    durationMs: integer("duration_ms"),
    scoredAtMs: integer("scored_at_ms").notNull(),
  }),
  (t) => [index("_smithers_scorers_run_node_idx").on(t.runId, t.nodeId, t.iteration)],
);

export const smithersVectors = lazySqliteTable(
  "_smithers_vectors",
  () => ({
    id: text("id").primaryKey(),
    namespace: text("namespace").notNull(),
    content: text("content").notNull(),
    embedding: blob("embedding", { mode: "buffer" }).notNull(),
    dimensions: integer("dimensions").notNull(),
    metadataJson: text("metadata_json"),
    documentId: text("document_id"),
    chunkIndex: integer("chunk_index"),
    createdAtMs: integer("created_at_ms").notNull(),
  }),
  (t) => [index("_smithers_vectors_namespace_idx").on(t.namespace, t.documentId)],
);

export const smithersSignals = lazySqliteTable(
  "_smithers_signals",
  () => ({
    runId: text("run_id").notNull(),
    seq: integer("seq").notNull(),
    signalName: text("signal_name").notNull(),
    correlationId: text("correlation_id"),
    payloadJson: text("payload_json").notNull(),
    receivedAtMs: integer("received_at_ms").notNull(),
    receivedBy: text("received_by"),
    /** The node (and iteration) that took the signal, and when; null while it waits for one. */
    consumedByNodeId: text("consumed_by_node_id"),
    consumedByIteration: integer("consumed_by_iteration"),
    consumedAtMs: integer("consumed_at_ms"),
    /** Set instead when the node it was offered to refused its payload (the validation error). */
    rejectedJson: text("rejected_json"),
    /** The sender's idempotency key: a second signal with the same key for the run is the first one again. */
    dedupeKey: text("dedupe_key"),
  }),
  (t) => [
    primaryKey({ columns: [t.runId, t.seq] }),
    index("_smithers_signals_name_idx").on(t.runId, t.signalName, t.receivedAtMs),
    uniqueIndex("_smithers_signals_dedupe_idx").on(t.runId, t.dedupeKey),
  ],
);

/**
 * `_smithers_queue`: runs handed to workers (`smithers serve`, `runWorkflow({ enqueue })`, `up
 * --detach`) and not yet taken. A request is written here before it is acknowledged, so a crash
 * after `202 Accepted` never loses it. A worker claims it with a lease (`claimed_by`,
 * `lease_expires_at_ms`, renewed while it loads the workflow); the row goes in the transaction that
 * creates or resumes its run, from where the run's own owner and heartbeat are the lease. A claim
 * whose lease ran out (its worker died) is claimed again.
 */
export const smithersQueue = lazySqliteTable(
  "_smithers_queue",
  () => ({
    runId: text("run_id").primaryKey(),
    workflowName: text("workflow_name").notNull(),
    workflowPath: text("workflow_path").notNull(),
    inputJson: text("input_json"),
    enqueuedAtMs: integer("enqueued_at_ms").notNull(),
    /** When a worker claimed it (null: waiting). */
    startedAtMs: integer("started_at_ms"),
    /** The worker holding the claim. */
    claimedBy: text("claimed_by"),
    /** When the claim lapses unless renewed; another worker may claim it from then on. */
    leaseExpiresAtMs: integer("lease_expires_at_ms"),
    /** The W3C traceparent of the request that queued it (POST /runs): the new run's trace continues it. */
    traceParent: text("trace_parent"),
    /** Times a worker gave it back because its workflow did not load there (null: never). */
    returnCount: integer("return_count"),
    /** Claimed before every request of a lower priority (default 0; higher first). */
    priority: integer("priority").notNull().default(0),
    /** Whose request it is: within a priority, workers take turns between tenants ('': none given). */
    tenant: text("tenant").notNull().default(""),
    /** No worker claims it before this time (a debounced start waits out its quiet period); null: at once. */
    notBeforeMs: integer("not_before_ms"),
    /** A debounced start's key: a later start with the same key and workflow, while this one waits, replaces its input and pushes not_before_ms. */
    debounceKey: text("debounce_key"),
  }),
  (t) => [
    index("_smithers_queue_order_idx").on(t.startedAtMs, t.enqueuedAtMs),
    // The claim: the highest priority, then a tenant's oldest request (adapters/queue.ts, claimNext).
    index("_smithers_queue_claim_idx").on(t.priority, t.tenant, t.enqueuedAtMs, t.runId),
    index("_smithers_queue_debounce_idx").on(t.debounceKey),
    index("_smithers_queue_not_before_idx").on(t.notBeforeMs),
  ],
);

/**
 * `_smithers_queue_tenants`: when each tenant's request was last claimed, as a claim counter, so a
 * claim picks, within the highest waiting priority, the tenant served longest ago (one row per
 * tenant that ever queued a run; a missing row is a tenant never served).
 */
export const smithersQueueTenants = lazySqliteTable(
  "_smithers_queue_tenants",
  () => ({
    tenant: text("tenant").primaryKey(),
    lastClaimSeq: integer("last_claim_seq").notNull(),
  }),
  (t) => [index("_smithers_queue_tenants_seq_idx").on(t.lastClaimSeq)],
);

/**
 * `_smithers_idempotency`: the run each idempotency key started (POST /runs' `Idempotency-Key`,
 * `up --detach --idempotency-key`, the enqueue option), kept until `expires_at_ms` whether the
 * request still waits, runs or ended (queue rows go when their run starts). `request_hash` is the
 * start's parameters, so the same key with another request is told apart (IDEMPOTENCY_CONFLICT).
 */
export const smithersIdempotency = lazySqliteTable(
  "_smithers_idempotency",
  () => ({
    key: text("key").primaryKey(),
    runId: text("run_id").notNull(),
    requestHash: text("request_hash").notNull(),
    createdAtMs: integer("created_at_ms").notNull(),
    expiresAtMs: integer("expires_at_ms").notNull(),
  }),
  (t) => [index("_smithers_idempotency_expires_idx").on(t.expiresAtMs)],
);

/** All internal tables, in creation order. */
export const internalTables = {
  smithersRuns,
  smithersNodes,
  smithersAttempts,
  smithersFrames,
  smithersApprovals,
  smithersHumanRequests,
  smithersCache,
  smithersSandboxes,
  smithersToolCalls,
  smithersEvents,
  smithersRalph,
  smithersCron,
  smithersScorers,
  smithersVectors,
  smithersSignals,
  smithersQueue,
  smithersLimits,
  smithersSlots,
  smithersRateUsage,
  smithersQueueTenants,
  smithersIdempotency,
} as const;

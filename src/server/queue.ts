/**
 * The server's run queue: admission (bounded, durable before acknowledged), and a Worker that
 * executes queued runs of the registered workflows, oldest first, at most `maxConcurrent` at once
 * (none with 0: then `smithers worker` processes on the same database run them), and that also
 * wakes those workflows' answered or due waiting runs and takes over their stale ones.
 */
import { queue, type runs, type SmithersDb } from "../db/index.ts";
import {
  admissionOf,
  checkStartOptions,
  type EnqueuedRun,
  idempotencyConflict,
  type Limits,
  type QueueStartOptions,
  queueName,
  SERVER_RUN_ID,
  startedRunStatus,
  validateInput,
  Worker,
  type RegisteredWorkflow,
  type SmithersEvent,
  type WorkerOutcome,
} from "../engine/index.ts";
import { errorKind, SmithersError } from "../errors/index.ts";

/**
 * What became of a run the queue's worker handled, already described in one line by the worker
 * (dropped, returned, released, a pass that failed): its stack would be this file's, never the cause's.
 */
export class OutcomeNote extends Error {
  override name = "OutcomeNote";
}

/**
 * How `serve` logs what onError hears: one line, `CODE: message`, for an expected outcome (a
 * SmithersError of any kind but internal: a denial, a failed task, a conflict) and for a worker's
 * note; the stack for anything else, a bug operators should see whole.
 */
export function logText(error: unknown): string {
  const line = (text: string) => text.replace(/\s*\n\s*/g, " | ");
  if (error instanceof OutcomeNote) return line(error.message);
  if (error instanceof SmithersError && errorKind(error.code) !== "internal") return line(`${error.code}: ${error.message}`);
  return (error as Error)?.stack ?? String(error);
}

export type { RegisteredWorkflow } from "../engine/index.ts";

export type RunQueueOptions = {
  db: SmithersDb;
  workflows: ReadonlyMap<string, RegisteredWorkflow>;
  /** Runs that may wait to start; one more is refused (503). */
  capacity: number;
  /** Runs this server executes at once; 0: it only accepts them, for workers. */
  maxConcurrent: number;
  /** What a refusal's Retry-After says. */
  retryAfterSeconds: number;
  /** Hears every event of the runs this server executes (wakes SSE followers). */
  onEvent: (runId: string) => void;
  /** Hears each event itself (the server's metrics). */
  observe?: (event: SmithersEvent) => void;
  /** A run that failed to start or threw, or a pass that failed on the database. */
  onError: (runId: string, error: unknown) => void;
  /** The worker's lease (WorkerOptions.leaseMs). */
  leaseMs?: number;
  /** The worker's limits (WorkerOptions.limits). */
  limits?: Limits;
  /** How long an Idempotency-Key is remembered (default 24 h). */
  idempotencyWindowMs?: number;
};

/** A start request: a new run (with the queue's ordering and dedup options) or a resume. */
export type StartRequest = QueueStartOptions & {
  workflow: string;
  runId: string;
  /** The caller named the run (an idempotency key's request then includes the id). */
  explicitRunId?: boolean;
  input?: unknown;
  resume?: boolean;
  /** A valid W3C traceparent the caller sent: the run's trace continues the caller's. */
  traceParent?: string;
};

export class RunQueue {
  private readonly worker: Worker | undefined;
  private readonly stopWorker = new AbortController();
  private readonly abandonWorker = new AbortController();
  private working: Promise<void> | undefined;

  constructor(private readonly o: RunQueueOptions) {
    if (o.idempotencyWindowMs !== undefined) checkStartOptions({ idempotencyWindowMs: o.idempotencyWindowMs }, "INVALID_OPTION");
    if (o.leaseMs !== undefined && o.maxConcurrent === 0) {
      throw new SmithersError("INVALID_OPTION", "leaseMs is the lease of the server's own worker, and maxConcurrent 0 runs none");
    }
    this.worker =
      o.maxConcurrent > 0
        ? new Worker({
            db: o.db,
            concurrency: o.maxConcurrent,
            workflows: [...o.workflows.values()],
            ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
            ...(o.limits === undefined ? {} : { limits: o.limits }),
            onEvent: (event) => {
              o.observe?.(event);
              o.onEvent(event.runId);
            },
            onOutcome: (outcome) => this.settled(outcome),
          })
        : undefined;
  }

  /** Finds a registered workflow by name. */
  workflow(name: string): RegisteredWorkflow {
    const found = this.o.workflows.get(name);
    if (!found)
      throw new SmithersError("WORKFLOW_LOAD_FAILED", `No workflow "${name}" is registered (known: ${[...this.o.workflows.keys()].join(", ") || "none"})`, {
        workflow: name,
      });
    return found;
  }

  /** The registered workflow a stored run belongs to: by its file, else by its file's name (another host's path). */
  workflowOf(run: runs.RunRow): RegisteredWorkflow {
    for (const w of this.o.workflows.values()) if (run.workflowPath === w.path) return w;
    const byName = run.workflowPath === null ? undefined : this.o.workflows.get(queueName(run.workflowPath));
    if (byName) return byName;
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `Run "${run.runId}" belongs to workflow "${run.workflowName}", which this server does not serve`, {
      runId: run.runId,
    });
  }

  /**
   * Accepts a run (new, or `resume` of a stored one) into the queue, written before this
   * resolves; QUEUE_FULL (with `retryAfterSeconds`) when the queue is full, RUN_EXISTS when the
   * run (or a request for it) exists already, IDEMPOTENCY_CONFLICT when its key started another
   * request. A repeated idempotency key, or a debounce that joined a waiting run, adds no run: the
   * result names the run it stands for (`reused`).
   */
  async enqueue(request: StartRequest): Promise<EnqueuedRun> {
    const { capacity, retryAfterSeconds } = this.o;
    const target = this.workflow(request.workflow);
    // Checked now, so a bad input is a 400 and never an accepted run that cannot start.
    const input = request.resume ? undefined : validateInput(target.workflow.registry, request.input);
    const { priority, tenant, debounce } = request;
    const admission = await queue.enqueue(
      this.o.db,
      {
        runId: request.runId,
        workflowName: target.name,
        workflowPath: target.path,
        inputJson: input === undefined ? null : JSON.stringify(input),
        enqueuedAtMs: Date.now(),
        ...(request.traceParent === undefined ? {} : { traceParent: request.traceParent }),
        ...(priority === undefined ? {} : { priority }),
        ...(tenant === undefined ? {} : { tenant }),
      },
      {
        capacity,
        resume: request.resume ?? false,
        ...admissionOf(
          request,
          { workflow: target.name, input: request.input, ...(request.explicitRunId ? { runId: request.runId } : {}), priority, tenant, debounce },
          this.o.idempotencyWindowMs,
        ),
      },
      (waiting) => ({
        runId: SERVER_RUN_ID,
        timestampMs: Date.now(),
        type: "RunRefused",
        payloadJson: JSON.stringify({ refusedRunId: request.runId, workflow: target.name, waiting, capacity, retryAfterSeconds }),
      }),
    );
    if (admission.accepted) {
      this.worker?.nudge();
      return { runId: admission.runId, status: "queued", ...(admission.debounced ? { reused: "debounce" as const } : {}) };
    }
    if (admission.reason === "replayed")
      return { runId: admission.runId, status: await startedRunStatus(this.o.db, admission.runId), reused: "idempotency-key" };
    if (admission.reason === "conflict") throw idempotencyConflict(request.idempotencyKey!, admission.runId);
    if (admission.reason === "full") {
      throw new SmithersError("QUEUE_FULL", `The run queue is full (${admission.waiting} waiting, capacity ${capacity}); retry after ${retryAfterSeconds} s`, {
        retryAfterSeconds,
      });
    }
    if (admission.reason === "missing") throw new SmithersError("RUN_NOT_FOUND", `No run "${request.runId}"`, { runId: request.runId });
    throw new SmithersError("RUN_EXISTS", `Run "${request.runId}" already exists or is queued`, { runId: request.runId });
  }

  /** Starts the worker (a request a crashed server had claimed is claimed again once its lease runs out). */
  async start(): Promise<void> {
    this.working ??= this.worker?.run(this.stopWorker.signal, this.abandonWorker.signal);
  }

  /** Starts no more runs; with `drain`, waits for the runs in flight (without, they go on until the process ends). */
  async stop(drain = true): Promise<void> {
    this.stopWorker.abort();
    if (!drain) this.abandonWorker.abort();
    await this.working;
  }

  /** Cancels a run this server executes now, without waiting for its next heartbeat; false when it runs elsewhere (or not at all). */
  cancelLocal(runId: string): boolean {
    return this.worker?.cancelLocal(runId) ?? false;
  }

  get running(): number {
    return this.worker?.running ?? 0;
  }

  private settled(outcome: WorkerOutcome): void {
    // "released": a run this server claimed to resume and could not (journalled as RunResumeFailed too).
    if (
      outcome.action === "error" ||
      outcome.action === "dropped" ||
      outcome.action === "returned" ||
      outcome.action === "released" ||
      outcome.action === "cron-failed"
    ) {
      this.o.onError(outcome.runId, new OutcomeNote(outcome.reason));
    } else if ((outcome.action === "ran" || outcome.action === "resumed") && outcome.result.status === "failed" && outcome.result.error) {
      this.o.onError(outcome.runId, outcome.result.error);
    }
    if (outcome.runId) this.o.onEvent(outcome.runId);
  }
}

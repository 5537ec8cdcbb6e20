/**
 * The server's run queue: admission (bounded, durable before acknowledged) and the worker that
 * executes queued runs, oldest first, at most `maxConcurrent` at once.
 */
import { queue, runs, type SmithersDb } from "../db/index.ts";
import { runWorkflow, SERVER_RUN_ID, validateInput, type SmithersWorkflow } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";

/** A workflow the server can start: registered under `name` (its file name without extension). */
export type RegisteredWorkflow = { name: string; path: string; workflow: SmithersWorkflow };

export type RunQueueOptions = {
  db: SmithersDb;
  dbPath: string;
  workflows: ReadonlyMap<string, RegisteredWorkflow>;
  /** Runs that may wait to start; one more is refused (503). */
  capacity: number;
  maxConcurrent: number;
  /** What a refusal's Retry-After says. */
  retryAfterSeconds: number;
  /** Hears every event of the runs this server executes (wakes SSE followers). */
  onEvent: (runId: string) => void;
  /** A run that failed to start or threw (its queue row is kept for the next start). */
  onError: (runId: string, error: unknown) => void;
};

export class RunQueue {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly aborts = new Map<string, AbortController>();
  private stopped = false;
  private pumping = false;
  private again = false;

  constructor(private readonly o: RunQueueOptions) {}

  /** Finds a registered workflow by name. */
  workflow(name: string): RegisteredWorkflow {
    const found = this.o.workflows.get(name);
    if (!found)
      throw new SmithersError("WORKFLOW_LOAD_FAILED", `No workflow "${name}" is registered (known: ${[...this.o.workflows.keys()].join(", ") || "none"})`, {
        workflow: name,
      });
    return found;
  }

  /** The registered workflow a stored run belongs to (by its file, else by its name). */
  workflowOf(run: runs.RunRow): RegisteredWorkflow {
    for (const w of this.o.workflows.values()) if (run.workflowPath === w.path) return w;
    for (const w of this.o.workflows.values()) if (run.workflowName === w.workflow.name) return w;
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `Run "${run.runId}" belongs to workflow "${run.workflowName}", which this server does not serve`, {
      runId: run.runId,
    });
  }

  /**
   * Accepts a run (new, or `resume` of a stored one) into the queue, written before this
   * resolves; QUEUE_FULL (with `retryAfterSeconds`) when the queue is full, RUN_EXISTS when the
   * run (or a request for it) exists already.
   */
  async enqueue(request: { workflow: string; runId: string; input?: unknown; resume?: boolean }): Promise<void> {
    const { capacity, retryAfterSeconds } = this.o;
    const target = this.workflow(request.workflow);
    // Checked now, so a bad input is a 400 and never an accepted run that cannot start.
    const input = request.resume ? undefined : validateInput(target.workflow.registry, request.input);
    const admission = await queue.enqueue(
      this.o.db,
      {
        runId: request.runId,
        workflowName: target.name,
        workflowPath: target.path,
        inputJson: input === undefined ? null : JSON.stringify(input),
        enqueuedAtMs: Date.now(),
      },
      { capacity, resume: request.resume ?? false },
      (waiting) => ({
        runId: SERVER_RUN_ID,
        timestampMs: Date.now(),
        type: "RunRefused",
        payloadJson: JSON.stringify({ refusedRunId: request.runId, workflow: target.name, waiting, capacity, retryAfterSeconds }),
      }),
    );
    if (admission.accepted) {
      this.pump();
      return;
    }
    if (admission.reason === "full") {
      throw new SmithersError("QUEUE_FULL", `The run queue is full (${admission.waiting} waiting, capacity ${capacity}); retry after ${retryAfterSeconds} s`, {
        retryAfterSeconds,
      });
    }
    if (admission.reason === "missing") throw new SmithersError("RUN_NOT_FOUND", `No run "${request.runId}"`, { runId: request.runId });
    throw new SmithersError("RUN_EXISTS", `Run "${request.runId}" already exists or is queued`, { runId: request.runId });
  }

  /** Starts the worker: requests a previous server left started (it crashed) run again. */
  async start(): Promise<void> {
    await queue.requeueStarted(this.o.db);
    this.pump();
  }

  /** Starts no more runs; with `drain`, waits for the runs in flight. */
  async stop(drain = true): Promise<void> {
    this.stopped = true;
    if (drain) await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Cancels a run this server executes now, without waiting for its next heartbeat; false when it runs elsewhere (or not at all). */
  cancelLocal(runId: string): boolean {
    const abort = this.aborts.get(runId);
    abort?.abort();
    return abort !== undefined;
  }

  get running(): number {
    return this.inFlight.size;
  }

  /** Claims and starts queued runs while a slot is free (one pass at a time). */
  pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void (async () => {
      try {
        do {
          this.again = false;
          while (!this.stopped && this.inFlight.size < this.o.maxConcurrent) {
            const next = await queue.claimNext(this.o.db, Date.now());
            if (!next) break;
            const done = this.execute(next).finally(() => {
              this.inFlight.delete(next.runId);
              this.pump();
            });
            this.inFlight.set(next.runId, done);
          }
        } while (this.again && !this.stopped);
      } catch (error) {
        this.o.onError("", error);
      } finally {
        this.pumping = false;
      }
    })();
  }

  private async execute(row: queue.QueueRow): Promise<void> {
    const abort = new AbortController();
    this.aborts.set(row.runId, abort);
    try {
      const target = this.o.workflows.get(row.workflowName);
      if (!target)
        throw new SmithersError("WORKFLOW_LOAD_FAILED", `Queued run "${row.runId}" names workflow "${row.workflowName}", which this server does not serve`);
      const exists = (await runs.getRun(this.o.db, row.runId)) !== undefined;
      await runWorkflow(target.workflow, {
        runId: row.runId,
        resume: exists,
        ...(exists || row.inputJson === null ? {} : { input: JSON.parse(row.inputJson) }),
        dbPath: this.o.dbPath,
        workflowPath: target.path,
        signal: abort.signal,
        onEvent: () => this.o.onEvent(row.runId),
      });
      // Ended, or stopped to wait (the daemon or POST /runs/:id/resume continues it).
      await queue.remove(this.o.db, row.runId);
    } catch (error) {
      this.o.onError(row.runId, error);
      if (error instanceof SmithersError && error.code !== "DB_WRITE_FAILED" && error.code !== "DB_CLOSED")
        await queue.remove(this.o.db, row.runId).catch(() => undefined);
    } finally {
      this.aborts.delete(row.runId);
      this.o.onEvent(row.runId);
    }
  }
}

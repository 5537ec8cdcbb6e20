/**
 * A drive: one call into the engine that the test kit started (a run, a resume, a cron pass) and
 * follows until it ends. It hears the runs' events, which tell the attempts in flight (a task body
 * may be doing real work: the kit waits for it) from a run that only waits for the clock.
 */
import type { RunResult, SmithersEvent } from "../engine/index.ts";

/** Events that end an attempt NodeStarted began. */
const ATTEMPT_ENDS: ReadonlySet<string> = new Set(["NodeFinished", "NodeFailed", "NodeCancelled", "SubflowWaiting"]);

export class Drive {
  /** How each run the drive executed ended, by run id (the last of a continue-as-new chain). */
  readonly results = new Map<string, RunResult>();
  /** Attempts started and not yet ended, as `runId nodeId#iteration`. */
  readonly working = new Set<string>();
  /** The run whose event came last (a continued chain moves on to its next run). */
  lastRunId: string | undefined;
  done = false;
  /** Set when the engine call rejected (bad input, an unknown run …). */
  failed: { error: unknown } | undefined;
  private waiters: (() => void)[] = [];

  constructor(runId: string | undefined) {
    this.lastRunId = runId;
  }

  /** Records what `event` changes: the attempts in flight, the latest run. */
  hear(event: SmithersEvent): void {
    this.lastRunId = event.runId;
    if (event.type === "NodeStarted" || ATTEMPT_ENDS.has(event.type)) {
      const { nodeId, iteration } = event as { nodeId: string; iteration: number };
      const key = `${event.runId} ${nodeId}#${iteration}`;
      if (event.type === "NodeStarted") this.working.add(key);
      else this.working.delete(key);
    }
    this.changed();
  }

  /** The engine call settled. */
  end(results: readonly RunResult[] | undefined, error?: unknown): void {
    for (const r of results ?? []) this.results.set(r.runId, r);
    if (results === undefined) this.failed = { error };
    this.done = true;
    this.changed();
  }

  /** Resolves the next time an event arrives or the drive ends. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private changed(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}

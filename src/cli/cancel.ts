/**
 * `smithers cancel <run> [--no-wait] [--timeout-ms N]`: stops a run. A waiting run is cancelled at
 * once; a running one is asked, and its owner cancels at its next heartbeat (its attempts end
 * `cancelled`). By default the command waits until the run has ended and prints its status. A
 * request still queued for workers is dropped.
 */
import { parseArgs } from "./parse-args.ts";
import { queue, runs } from "../db/index.ts";
import { requestCancel } from "../engine/waits/index.ts";
import { isOver } from "../engine/core/index.ts";
import { EXIT, nonNegativeMs, openExistingDb, usageError, type Io } from "./shared.ts";

/** How often the command looks whether the run has ended. */
const CANCEL_POLL_MS = 100;
/** How long it waits by default: a few heartbeats (5 s each) plus a task's grace period (10 s). */
export const CANCEL_WAIT_DEFAULT_MS = 60_000;

export async function cancelCommand(args: string[], io: Io, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { "no-wait": { type: "boolean" }, "timeout-ms": { type: "string" }, json: { type: "boolean" }, db: { type: "string" } },
  });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("cancel takes exactly one run id");
  const timeoutMs = nonNegativeMs(values["timeout-ms"], "--timeout-ms") ?? CANCEL_WAIT_DEFAULT_MS;
  const db = openExistingDb(values.db);
  const report = (status: string) => {
    io.out(values.json ? JSON.stringify({ runId, status }) : `run ${runId} ${status}`);
  };
  try {
    // A request queued for workers and not started is dropped: a new run never starts, and a queued
    // resume of an ended run leaves it as it ended.
    if (await queue.removeWaiting(db, runId)) {
      const run = await runs.getRun(db, runId);
      if (!run || isOver(run.status)) {
        report(run ? run.status : "cancelled");
        return EXIT.ok;
      }
    }
    const outcome = await requestCancel(db, runId);
    if (outcome.status === "cancelled" || values["no-wait"]) {
      report(outcome.status);
      return EXIT.ok;
    }
    if (!values.json) io.out(`run ${runId}: cancel requested; its process stops it at its next heartbeat`);
    const deadline = Date.now() + timeoutMs;
    while (!signal?.aborted && Date.now() < deadline) {
      const status = (await runs.getRun(db, runId))?.status ?? "cancelled";
      // A run asked to stop may still end another way (its last task finished first).
      if (isOver(status)) {
        report(status);
        return EXIT.ok;
      }
      await Bun.sleep(CANCEL_POLL_MS);
    }
    io.err(`smithers: run ${runId} has not stopped yet; the request stands (its owner cancels it at its next heartbeat, or when it is resumed)`);
    return EXIT.failed;
  } finally {
    await db.close();
  }
}

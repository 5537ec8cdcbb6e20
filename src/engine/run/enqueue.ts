/**
 * Handing a run to workers: `runWorkflow(workflow, { enqueue: true, workflowPath })` checks the
 * input here, writes a request to `_smithers_queue` and returns; a `smithers worker` (or `smithers
 * serve`) on the same database claims it and executes it.
 */
import { resolve } from "node:path";
import { queue } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { checkNewRunId, queueName } from "../core/index.ts";
import type { RunOptions } from "./run-workflow.ts";
import { validateInput } from "../workflow/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import type { RunStatus } from "../core/index.ts";
import { admissionOf, checkStartOptions, idempotencyConflict, QUEUE_START_OPTIONS, startedRunStatus } from "./start-options.ts";

/**
 * What an enqueue returns: the run's id, and that it waits for a worker. `reused` says the start
 * added no run: `idempotency-key` (a repeat of a key: the first run, in its current status) or
 * `debounce` (the waiting run of that debounce key took this input).
 */
export type EnqueuedRun = { runId: string; status: "queued" | RunStatus; reused?: "idempotency-key" | "debounce" };

/** The options an enqueued run takes; the rest only make sense in the process that executes it. */
const ENQUEUE_OPTIONS = new Set<string>(["enqueue", "input", "runId", "resume", "dbPath", "workflowPath", ...QUEUE_START_OPTIONS]);

/**
 * Queues a new run (or, with `resume`, a resume of a stored one) for workers. The input is checked
 * against the workflow's input schema now, so a bad input fails here and never reaches a worker.
 * RUN_EXISTS when the run (or a request for it) exists already; RUN_NOT_FOUND for a resume of an
 * unknown run.
 */
export async function enqueueRun(workflow: SmithersWorkflow, options: RunOptions): Promise<EnqueuedRun> {
  const other = Object.keys(options).filter((key) => !ENQUEUE_OPTIONS.has(key) && options[key as keyof RunOptions] !== undefined);
  if (other.length > 0) {
    throw new SmithersError(
      "INVALID_OPTION",
      `enqueue: true hands the run to a worker, which runs it with its own settings; ${other.join(", ")} cannot be passed with it`,
      { options: other },
    );
  }
  if (!options.workflowPath) {
    throw new SmithersError("INVALID_OPTION", "enqueue: true needs workflowPath: the workflow file a worker loads to run it");
  }
  if (options.resume && options.runId === undefined) throw new SmithersError("INVALID_OPTION", "enqueue with resume: true needs the runId to resume");
  if (options.resume && options.input !== undefined) {
    throw new SmithersError("INVALID_OPTION", "A queued resume takes no input: the run goes on with the input it was started with");
  }
  checkStartOptions(options, "INVALID_OPTION");
  const workflowPath = resolve(options.workflowPath);
  const db = workflow.dbFor(options.dbPath);
  const runId = options.runId ?? crypto.randomUUID();
  if (!options.resume) checkNewRunId(runId);
  const input = options.resume ? undefined : validateInput(workflow.registry, options.input);
  const name = queueName(workflowPath);
  const { priority, tenant, debounce } = options;
  const admission = await queue.enqueue(
    db,
    {
      runId,
      workflowName: name,
      workflowPath,
      inputJson: input === undefined ? null : JSON.stringify(input),
      enqueuedAtMs: Date.now(),
      ...(priority === undefined ? {} : { priority }),
      ...(tenant === undefined ? {} : { tenant }),
    },
    {
      capacity: Number.MAX_SAFE_INTEGER,
      resume: options.resume ?? false,
      ...admissionOf(options, { workflow: name, input: options.input, runId: options.runId, priority, tenant, debounce }),
    },
    () => {
      throw new SmithersError("ENGINE_ERROR", "An unbounded queue refused a run");
    },
  );
  if (admission.accepted) return { runId: admission.runId, status: "queued", ...(admission.debounced ? { reused: "debounce" as const } : {}) };
  if (admission.reason === "replayed") return { runId: admission.runId, status: await startedRunStatus(db, admission.runId), reused: "idempotency-key" };
  if (admission.reason === "conflict") throw idempotencyConflict(options.idempotencyKey!, admission.runId);
  if (admission.reason === "missing") throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" to resume in ${db.path}`, { runId });
  throw new SmithersError("RUN_EXISTS", `Run "${runId}" already exists or is queued${options.resume ? " (a resume of it is queued already)" : ""}`, { runId });
}

/** `smithers up`: runs (or queues, with --detach) a workflow file and prints its progress and result. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "./parse-args.ts";
import { runs } from "../db/index.ts";
import {
  checkStartOptions,
  DEFAULT_DB_PATH,
  loadWorkflowFile,
  runWorkflow,
  type EnqueuedRun,
  type QueueStartOptions,
  type RunResult,
  type SmithersEvent,
} from "../engine/index.ts";
import { errorToJson, firstUserFrame, SmithersError } from "../errors/index.ts";
import type { ModelPricing } from "../agents/index.ts";
import { formatUsage, newProgress, redraw, renderProgress, trackProgress } from "./progress.ts";
import { createLogger, logFormatOption, type Logger } from "./log.ts";
import { peerResume } from "./peer-resume.ts";
import type { ResumeRun } from "./time-travel.ts";
import {
  dbPathOption,
  durabilityFlag,
  durationFlag,
  EXIT,
  type Io,
  limitFlags,
  nonNegativeMs,
  nonNegativeNumber,
  openExistingDb,
  parseInput,
  parseJsonFlag,
  positiveInt,
  type StopSignals,
  usageError,
} from "./shared.ts";

/** Flags of `up` that set how this process runs the run: a detached run is run by a worker, with its own. */
const NOT_WITH_DETACH = [
  "max-concurrency",
  "grace-ms",
  "durability",
  "root",
  "max-cost-usd",
  "max-tokens",
  "pricing",
  "allow-code-change",
  "accept-workflow-change",
  "limit",
] as const;

/** Flags of `up` that order a queued start: only with --detach. */
const ONLY_WITH_DETACH = ["priority", "tenant", "idempotency-key", "debounce"] as const;

/** `--priority`, `--tenant`, `--idempotency-key`, `--debounce KEY=DURATION` as enqueue options; USAGE when malformed. */
function queueFlags(values: Partial<Record<(typeof ONLY_WITH_DETACH)[number], string>>): QueueStartOptions {
  const o: QueueStartOptions = {};
  if (values.priority !== undefined) {
    const n = Number(values.priority);
    if (!(values.priority.trim() !== "" && Number.isInteger(n))) throw usageError(`--priority must be an integer, got "${values.priority}"`);
    o.priority = n;
  }
  if (values.tenant !== undefined) o.tenant = values.tenant;
  if (values["idempotency-key"] !== undefined) o.idempotencyKey = values["idempotency-key"];
  if (values.debounce !== undefined) {
    const at = values.debounce.lastIndexOf("=");
    if (at <= 0) throw usageError(`--debounce must be KEY=DURATION (e.g. deploy=30s), got "${values.debounce}"`);
    const ms = durationFlag(values.debounce.slice(at + 1), "--debounce's DURATION");
    if (!ms) throw usageError(`--debounce's DURATION must be more than 0, got "${values.debounce.slice(at + 1)}"`);
    o.debounce = { key: values.debounce.slice(0, at), ms };
  }
  const flags: Record<string, string> = { priority: "--priority", tenant: "--tenant", idempotencyKey: "--idempotency-key", "debounce.key": "--debounce's KEY" };
  checkStartOptions(o, "USAGE", (option) => flags[option] ?? option);
  return o;
}

async function up(args: string[], io: Io, signals: StopSignals): Promise<{ result: RunResult; log: Logger } | { queued: EnqueuedRun; log: Logger }> {
  const translated = peerResume(args);
  const runIds = new Set(translated.flatMap((arg, i) => (arg === "--run-id" && translated[i + 1] !== undefined ? [translated[i + 1]] : [])));
  if (runIds.size > 1) throw usageError(`--resume and --run-id name different runs (${[...runIds].join(", ")})`);
  const { values, positionals } = parseArgs({
    args: translated,
    allowPositionals: true,
    options: {
      input: { type: "string" },
      "run-id": { type: "string" },
      resume: { type: "boolean" },
      db: { type: "string" },
      "max-concurrency": { type: "string" },
      "grace-ms": { type: "string" },
      durability: { type: "string" },
      root: { type: "string" },
      "max-cost-usd": { type: "string" },
      "max-tokens": { type: "string" },
      pricing: { type: "string" },
      detach: { type: "boolean", short: "d" },
      "allow-code-change": { type: "boolean" },
      "accept-workflow-change": { type: "boolean" },
      "log-format": { type: "string" },
      limit: { type: "string", multiple: true },
      priority: { type: "string" },
      tenant: { type: "string" },
      "idempotency-key": { type: "string" },
      debounce: { type: "string" },
    },
  });
  const log = createLogger(io, logFormatOption(values["log-format"]));
  if (positionals.length > 1) throw usageError("up takes exactly one workflow file");
  const withDetach = values.detach ? NOT_WITH_DETACH.filter((flag) => values[flag] !== undefined) : [];
  if (withDetach.length > 0) throw usageError(`--${withDetach[0]} cannot be used with --detach: the worker that runs it uses its own settings`);
  const queueOnly = values.detach ? [] : ONLY_WITH_DETACH.filter((flag) => values[flag] !== undefined);
  if (queueOnly.length > 0) throw usageError(`--${queueOnly[0]} orders a queued start: add --detach`);
  const queueOptions = queueFlags(values);
  if (values.resume && !values["run-id"]) throw usageError("--resume needs --run-id");
  if ((values["allow-code-change"] || values["accept-workflow-change"]) && !values.resume)
    throw usageError("--allow-code-change is for a resume: add --resume");
  const recorded = positionals[0] === undefined ? await recordedWorkflow(values) : undefined;
  const file = positionals[0] ?? recorded?.file;
  if (!file) throw usageError("up takes exactly one workflow file");
  const maxConcurrency = positiveInt(values["max-concurrency"], "--max-concurrency");
  const limits = limitFlags(values.limit);
  const graceMs = nonNegativeMs(values["grace-ms"], "--grace-ms");
  const durability = durabilityFlag(values.durability);
  const input = parseInput(values.input);
  const maxCostUsd = nonNegativeNumber(values["max-cost-usd"], "--max-cost-usd");
  const maxTokens = nonNegativeNumber(values["max-tokens"], "--max-tokens", true);
  const pricing = values.pricing === undefined ? undefined : parseJsonFlag(values.pricing, "--pricing");
  const workflow = await loadWorkflowFile(file);
  if (values.detach) {
    const queued = await runWorkflow(workflow, {
      ...queueOptions,
      enqueue: true,
      input,
      runId: values["run-id"],
      resume: values.resume,
      dbPath: recorded?.dbPath ?? dbPathOption(values.db),
      workflowPath: resolve(file),
    });
    return { queued, log };
  }
  // The redrawn status line is for a person at a terminal; JSON lines are for a program, one per event.
  const live = io.tty && log.format === "text" ? liveProgress(io.tty) : undefined;
  const result = await runWorkflow(workflow, {
    input,
    runId: values["run-id"],
    resume: values.resume,
    dbPath: recorded?.dbPath ?? dbPathOption(values.db),
    maxConcurrency,
    graceMs,
    durability,
    ...(limits ? { limits } : {}),
    ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(pricing === undefined ? {} : { pricing: pricing as ModelPricing }),
    signal: signals.cancel,
    abandonSignal: signals.abandon,
    workflowPath: resolve(file),
    allowCodeChange: Boolean(values["allow-code-change"] || values["accept-workflow-change"]),
    rootDir: values.root === undefined ? undefined : resolve(values.root),
    onEvent: (event: SmithersEvent) => {
      if (live) {
        trackProgress(live, event);
        return live.draw();
      }
      log.event(event);
    },
  }).finally(() => live?.stop());
  // The process exits right after: the WAL is folded now (runWorkflow leaves that to the event loop's next turn).
  await workflow
    .dbFor(recorded?.dbPath ?? dbPathOption(values.db))
    .checkpoint()
    .catch(() => undefined);
  return { result, log };
}

/**
 * `up --resume --run-id X` without a file: the workflow file the run recorded, and the database
 * it was read from (the workflow's own dbPath is not known before the file is loaded).
 */
async function recordedWorkflow(values: { resume?: boolean; "run-id"?: string; db?: string }): Promise<{ file: string; dbPath: string } | undefined> {
  const runId = values["run-id"];
  if (!values.resume || runId === undefined) return undefined;
  const dbPath = dbPathOption(values.db) ?? DEFAULT_DB_PATH;
  const db = openExistingDb(dbPath);
  try {
    const run = await runs.getRun(db, runId);
    if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
    if (!run.workflowPath) throw usageError(`run ${runId} recorded no workflow file: pass it (smithers up <workflow.tsx> --resume --run-id ${runId})`);
    if (!existsSync(run.workflowPath)) throw usageError(`run ${runId}'s workflow file ${run.workflowPath} is gone: pass its new path`);
    return { file: run.workflowPath, dbPath };
  } finally {
    await db.close();
  }
}

/** The redrawn status line of `up` on a terminal: on each event and every 250 ms (the elapsed time moves). */
function liveProgress(tty: (text: string) => void) {
  const state = Object.assign(newProgress(Date.now()), {
    draw: () => tty(redraw(renderProgress(state, Date.now(), (process.stdout.columns ?? 100) - 1))),
    stop: () => {
      clearInterval(timer);
      tty(redraw(""));
    },
  });
  const timer = setInterval(state.draw, 250);
  return state;
}

export async function upCommand(args: string[], io: Io, signals: StopSignals): Promise<number> {
  const started = await up(args, io, signals);
  const { log } = started;
  if ("queued" in started) {
    const { runId, status, reused } = started.queued;
    const why =
      reused === "idempotency-key" ? " (started earlier with this idempotency key)" : reused === "debounce" ? " (debounced into the waiting run)" : "";
    log.out("info", `run ${runId} ${status}${why}`, { runId, status, ...(reused ? { reused } : {}) });
    if (status === "queued") log.out("info", `a smithers worker on the same database runs it; follow it with smithers events ${runId} --follow`);
    return EXIT.ok;
  }
  const { result } = started;
  const run = { runId: result.runId, status: result.status };
  log.out(result.status === "failed" ? "error" : "info", `run ${result.runId} ${result.status}`, {
    ...run,
    ...("error" in result && result.error ? { code: result.error.code } : {}),
  });
  if (result.usage) log.out("info", formatUsage(result.usage), { runId: result.runId, ...result.usage });
  if (result.status === "finished") {
    // The run's output: what the run returned, not a log line, printed the same in both formats.
    io.out(JSON.stringify(result.output ?? null, null, 2));
    return EXIT.ok;
  }
  if (result.status === "cancelled") return EXIT.cancelled;
  if (result.status === "waiting-approval") {
    log.out(
      "info",
      `the run waits for a person: smithers approve ${result.runId} (or deny) for an approval, smithers human list / answer for a human task; then run this command again with --resume (or let smithers supervise --watch resume it)`,
      run,
    );
    return EXIT.waiting;
  }
  if (result.status === "waiting-event") {
    log.out(
      "info",
      `the run waits for a signal: smithers signal ${result.runId} <name> --data JSON (for a <Subflow>'s child, its run id shown above); smithers supervise --watch then resumes it`,
      run,
    );
    return EXIT.waiting;
  }
  if (result.status === "waiting-timer") {
    log.out("info", "the run waits for a timer: smithers supervise --watch resumes it when due (or run this command again with --resume then)", run);
    return EXIT.waiting;
  }
  if (result.status === "waiting-slot") {
    log.out(
      "info",
      "the run waits for a concurrency slot other runs hold (smithers limits shows them): smithers supervise --watch or a worker resumes it when one frees",
      run,
    );
    return EXIT.waiting;
  }
  if (result.status === "waiting-rate") {
    log.out("info", "the run waits for its key's rate window (smithers limits shows it): smithers supervise --watch resumes it when due", run);
    return EXIT.waiting;
  }
  if (result.error) {
    const { code, message } = result.error;
    // The author's line the failure was thrown from, when it was thrown from their code: a second text line, a field of the JSON one.
    const at = firstUserFrame(errorToJson(result.error));
    if (log.format === "json") log.err("error", message, { runId: result.runId, code, ...(at ? { at: at.replace(/^at /, "") } : {}) });
    else {
      io.err(`smithers: ${code}: ${message}`);
      if (at) io.err(`  ${at}`);
    }
  }
  return EXIT.failed;
}

/** What fork --run, replay and rewind --resume execute the run with: up [FILE] --resume (FILE: the workflow file they loaded). */
export const resumeWith =
  (io: Io, signals: StopSignals): ResumeRun =>
  (runId, dbPath, extra, file) =>
    upCommand([...(file === undefined ? [] : [file]), "--resume", "--run-id", runId, "--db", dbPath, ...extra], io, signals);

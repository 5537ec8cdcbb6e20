#!/usr/bin/env bun
/**
 * The `smithers` command. Exit codes: 0 success, 1 failed run, 2 bad usage or bad input,
 * 130 cancelled by Ctrl-C.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { runs } from "../db/index.ts";
import { DEFAULT_DB_PATH, loadWorkflowFile, runWorkflow, type EnqueuedRun, type RunResult, type SmithersEvent } from "../engine/index.ts";
import { SmithersError, type SmithersErrorCode } from "../errors/index.ts";
import { formatEvent, formatUsage, newProgress, redraw, renderProgress, trackProgress } from "./progress.ts";
import { inspectCommand } from "./inspect.ts";
import {
  dbPathOption,
  durabilityFlag,
  EXIT,
  type Io,
  nonNegativeMs,
  openExistingDb,
  nonNegativeNumber,
  usageError,
  positiveInt,
  parseInput,
  parseJsonFlag,
} from "./shared.ts";
import type { ModelPricing } from "../agents/index.ts";
import { superviseCommand } from "./supervise.ts";
import { framesCommand } from "./frames.ts";
import { decideCommand } from "./approve.ts";
import { cronCommand } from "./cron.ts";
import { signalCommand } from "./signal.ts";
import { humanCommand } from "./human.ts";
import { serveCommand } from "./serve.ts";
import { pruneCommand } from "./prune.ts";
import { psCommand } from "./ps.ts";
import { eventsCommand } from "./events.ts";
import { cancelCommand } from "./cancel.ts";
import { workerCommand } from "./worker.ts";
import { diffCommand, timelineCommand } from "./timeline.ts";
import { forkCommand, rewindCommand, type ResumeRun } from "./time-travel.ts";
import { commandFlags, commandHelp, suggest } from "./help.ts";

export { EXIT };

const USAGE = `Usage: smithers up <workflow.tsx> [--input '<json>'] [--run-id ID] [--resume] [--db PATH] [--root DIR] [--max-concurrency N] [--grace-ms N] [--durability process|power] [--max-cost-usd N] [--max-tokens N] [--pricing JSON]
       smithers up --resume <run-id> [--db PATH] [options as above]
       smithers up <workflow.tsx> --detach [--input '<json>'] [--run-id ID] [--db PATH]
       smithers worker [--db PATH|URL] [--concurrency N] [--workflows DIR] [--lease D] [--poll-interval D] [--durability process|power] [--quiet]
       smithers ps [--status S] [--limit N] [--json] [--db PATH]
       smithers inspect <run-id> [--json] [--db PATH]
       smithers events <run-id> [--after-seq N] [--type T] [--node ID] [--follow] [--json] [--db PATH]
       smithers cancel <run-id> [--no-wait] [--timeout-ms N] [--json] [--db PATH]
       smithers supervise [--db PATH] [--stale-after-ms N] [--watch] [--interval-ms N] [--durability process|power]
       smithers frames <run-id> [--frame N] [--db PATH]
       smithers timeline <run-id> [--json] [--db PATH]
       smithers diff <run-id> <frameA> <frameB> [--json] [--db PATH]
       smithers fork <run-id> --frame N [--reset-node ID]… [--input JSON] [--run-id NEW] [--run] [--force] [--workflow FILE] [--json] [--db PATH]
       smithers replay <run-id> --frame N [--reset-node ID]… [--run-id NEW] [--force] [--workflow FILE] [--db PATH]
       smithers rewind <run-id> <frame> [--resume] [--force] [--no-revert] [--workflow FILE] [--json] [--db PATH]
       smithers approve <run-id> [--node ID] [--iteration N] [--select KEY | --rank K1,K2,…] [--by NAME] [--note TEXT] [--yes] [--db PATH]
       smithers deny <run-id> [--node ID] [--iteration N] [--by NAME] [--note TEXT] [--yes] [--db PATH]
       smithers signal <run-id> <name> [--data JSON] [--correlation-id ID] [--dedupe-key KEY] [--by NAME] [--db PATH]
       smithers human list [--json] [--db PATH]
       smithers human answer <request-id> --data JSON [--by NAME] [--db PATH]
       smithers human cancel <request-id> [--db PATH]
       smithers cron add <workflow.tsx> --schedule "<expr>" [--input JSON] [--tz ZONE] [--id ID] [--db PATH]
       smithers cron list [--json] [--db PATH]
       smithers cron rm <id> [--db PATH]
       smithers serve [--port N] [--host H] [--db PATH] [--workflows DIR] [--token T] [--queue-capacity N] [--max-concurrent N] [--lease D] [--prune-older-than D]
       smithers prune [--older-than 7d] [--dry-run] [--vacuum] [--json] [--db PATH]

up          runs a workflow to completion, printing a line as each task starts and finishes
            (on a terminal: one redrawn status line instead, with tasks done/total, those running, time);
            exit 3 when it stops to wait for an approval, a human answer, a signal or a timer
            (smithers supervise --watch resumes it once answered or due; or run it again with --resume).
            A run that continues as a new run (<ContinueAsNew>, <Loop continueAsNewEvery>) is
            followed to the end of its chain; --resume of any run of a chain resumes its last run.
  --input JSON          run input (validated against the workflow's input schema)
  --run-id ID           id for a new run, or the run to continue with --resume
  --resume              continue run --run-id: finished tasks are kept, failed ones run again
                        (also the peer's forms: --resume true, --resume <run-id>); the workflow
                        file may be left out: the one the run recorded is loaded
  --db PATH|URL         SQLite file or postgres:// URL (default: $SMITHERS_DATABASE_URL, $SMITHERS_DB_PATH, the workflow's db, ./smithers.db)
  --root DIR            the tasks' working directory, and the git repository <Worktree> paths
                        resolve against and are added to (default: the current directory)
  --max-concurrency N   cap on tasks running at once
  --grace-ms N          on Ctrl-C or a timeout, how long a task body may take to stop before its
                        attempt is recorded abandoned (default 10000); Ctrl-C twice abandons at once
  --durability MODE     process (default): commits survive a crash or kill -9; power: also a
                        power cut, each commit waits for an fsync (side-effect intents always do)
  --max-cost-usd N      spend limit of the run in US dollars: once its agents cost this much no
                        agent attempt starts and the run fails BUDGET_EXCEEDED (stored on the run;
                        --resume with a higher limit goes on)
  --max-tokens N        token limit of the run (input plus output), kept the same way
  --pricing JSON        prices for agents that report tokens but no cost, in US dollars per
                        million tokens: '{"<model>":{"inputPerMTok":3,"outputPerMTok":15}}'
  --allow-code-change   resume although the workflow's code changed since the run ran (its file or a
                        local module it imports); without it such a resume stops with
                        WORKFLOW_CHANGED naming the tasks whose definitions changed (exit 2).
                        Finished tasks are kept either way (also: --accept-workflow-change)
  --detach              do not run it here: queue it (input checked now) for a smithers worker on
                        the same database, print its run id and exit 0 (with --resume: queue a resume)
worker      executes runs handed to workers (up --detach, runWorkflow's enqueue, serve --max-concurrent 0)
            under a lease; also wakes waiting runs that were answered or are due, takes over runs
            whose owner stopped heartbeating (a dead worker's), and starts due cron slots. Start one
            on every host; on PostgreSQL idle workers hear of new work at once (LISTEN/NOTIFY).
            Ctrl-C: take nothing more, finish the runs in flight; twice: exit now (other workers
            take those runs over once the lease runs out)
  --concurrency N       runs executing at once in this worker (default 4)
  --workflows DIR       run only the workflows in DIR (each *.tsx by file name, as serve does);
                        default: load the workflow file each run recorded
  --lease D             how long a claim or a run's heartbeat stays good, e.g. 30s (default 30s);
                        give every worker of a database the same value
  --poll-interval D     longest pause between looks for work (default 1s)
  --durability MODE     as for up, for the runs it executes
  --quiet               print what became of each run, not each task's progress
ps          lists runs, newest first: id, status, workflow, start, duration, tasks done/total, cost;
            runs queued for workers and not started yet come first, status queued
  --status S            only runs in status S (queued, running, finished, continued, failed, cancelled,
                        paused, waiting-approval, waiting-event, waiting-timer)
  --limit N             at most N runs (default 20)
  --json                a JSON array of runs (see the README)
inspect     shows a run: status, workflow and its file, input, its tasks (state, attempts, time,
            error), pending approvals, human requests and waits, and the tokens and cost its agents
            used (--json: the same as one JSON object)
events      prints a run's events in order (seq, time, what happened)
  --after-seq N         only events after seq N
  --type T              only events of type T (repeat it, or T1,T2)
  --node ID             only events of node ID
  --follow              keep printing new events until the run has ended (a waiting run has not);
                        a run queued for workers (up --detach) is waited for until one starts it
  --json                one JSON object per line: { seq, runId, type, timestampMs, ...payload }
cancel      stops a run: a waiting run at once; a running one (in any process) at its owner's next
            heartbeat, its running attempts recorded cancelled; then waits for it to end and prints
            its status (exit 2 with RUN_ENDED for a run that already ended); a run still queued
            for workers is dropped from the queue
  --no-wait             return once the request is stored
  --timeout-ms N        how long to wait for the run to end (default 60000; exit 1 after it)
  --json                { "runId": …, "status": "cancelled" | "cancel-requested" | <final status> }
supervise   resumes runs whose owner stopped heartbeating, wakes waiting runs that were answered or are due,
            and starts due cron slots (one pass, or --watch to keep looking)
  --stale-after-ms N    heartbeat age that makes a running run stale (default 30000)
  --interval-ms N       pause between passes with --watch (default 1000)
  --interval D, --stale-threshold D
                        the peer's forms, durations like 30s or 1m (--interval implies --watch)
  --durability MODE     as for up, for the runs it resumes
frames      lists a run's frames (number, encoding, bytes), or prints frame N's XML
timeline    the run's frames in order, each with its time and what changed in the plan: nodes
            mounted (+), unmounted (-), state and prop changes (~), and the runs forked from it (⑂)
            (--json: one object per frame, with its forks)
diff        the plan change between two frames of a run, in the same form (--json: one object)
fork        creates a new run (status paused, linked to its parent and frame) holding the run's
            outputs as of frame N; the parent is never changed. Side effects of the parent that the
            fork would run again stop it with SIDE_EFFECT_BOUNDARY (exit 2) unless --force
  --frame N             the frame to start from (smithers timeline lists them)
  --reset-node ID       run this task again, and everything downstream of it (repeatable)
  --input JSON          the fork's input (checked against the input schema); default: the parent's
  --run-id NEW          the fork's id (default: a new UUID)
  --run                 execute it now, as up --resume does
  --force               go on across side effects (recorded as a SideEffectBoundaryCrossed event)
  --workflow FILE       the workflow file (default: the one the run recorded)
replay      fork with the parent's input, then execute it (fork --run)
rewind      resets a finished, failed, cancelled or paused run in place to frame N: outputs,
            approvals and human requests of tasks not over at N and the frames after N are removed
            in one transaction (kept in a RunRewound event), those tasks are pending again and the
            run is paused. Tool calls with side effects it would discard first run their tool's
            revert, newest first; a call without one (or whose revert throws) stops it with
            SIDE_EFFECT_BOUNDARY unless --force
  --resume              continue the run at once, as up --resume does
  --no-revert           run no reverts (every side effect crossed then needs --force)
approve     decides a run's waiting <Approval> or <Task needsApproval> (deny: the same, denied);
            shows the request and asks on a terminal (--yes to skip); --node may be left out when
            one approval waits; a select gate takes --select KEY, a rank gate --rank K1,K2,…
signal      sends a signal to a run (checked against the schema of a node waiting for it); a node
            that waits for it later takes it then
human       list: the open <HumanTask> requests (inbox); answer: checked against the task's schema;
            cancel: the task fails with HUMAN_TASK_CANCELLED
cron        schedules a workflow file on a cron pattern (5 or 6 fields, read in --tz, default UTC);
            supervise starts its due slots, each once; after downtime only the latest missed slot runs
serve       the HTTP API: start runs of the workflows in --workflows DIR (each *.tsx by file name),
            inspect, approve/deny, answer, signal, resume them, follow their events (SSE)
  --port N              port (default 7331; 0: any free port; the URL is printed)
  --host H              address (default 127.0.0.1; another needs --token)
  --token T             require Authorization: Bearer T (default: $SMITHERS_TOKEN)
  --queue-capacity N    runs that may wait to start (default 1024); more are answered 503
  --max-concurrent N    runs executing at once (default 4); 0: only accept them, for smithers worker
                        processes on the same database to execute
  --lease D             as for worker (default 30s)
  --prune-older-than D  prune (as smithers prune) runs that ended longer ago than D, at start
                        and every hour
prune       removes the frames and events of runs that ended (finished, failed, cancelled,
            continued) more than --older-than ago (default 7d), keeping frame 0, the last frame
            (stored whole), the first and last event and every output row; never a running or
            waiting run. Reports what went and the bytes freed (--vacuum: VACUUM so the file shrinks;
            --dry-run: report only; --json: the report as JSON)
Every --db takes a SQLite path or a postgres:// URL, and defaults to SMITHERS_DATABASE_URL, else SMITHERS_DB_PATH, when set.
Every command takes --help (or: smithers help <command>).`;

/** The usage line of `command` (the whole synopsis when the command is unknown). */
function usageLine(command: string | undefined): string {
  const lines = USAGE.split("\n").filter((l) => /^(Usage:)?\s*smithers /.test(l));
  return (
    lines.find((l) =>
      l
        .replace(/^Usage:/, "")
        .trim()
        .startsWith(`smithers ${command} `),
    ) ?? lines.join("\n")
  );
}

/** Codes that mean the caller asked for something invalid (exit 2), not that a run failed. */
const BAD_INPUT_CODES: ReadonlySet<SmithersErrorCode> = new Set([
  "USAGE",
  "APPROVAL_NOT_FOUND",
  "APPROVAL_DECIDED",
  "APPROVAL_AMBIGUOUS",
  "APPROVAL_INVALID",
  "SIGNAL_INVALID",
  "RUN_ENDED",
  "HUMAN_REQUEST_NOT_FOUND",
  "HUMAN_REQUEST_CLOSED",
  "HUMAN_ANSWER_INVALID",
  "INVALID_INPUT",
  "INVALID_OPTION",
  "INPUT_MISMATCH",
  "RUN_NOT_FOUND",
  "RUN_EXISTS",
  "RUN_OWNED",
  "RUN_STILL_RUNNING",
  "FRAME_NOT_FOUND",
  "WORKFLOW_LOAD_FAILED",
  "UNSUPPORTED_SCHEMA",
  "CUSTOM_TABLE_INVALID",
  "INVALID_CRON",
  "CRON_EXISTS",
  "CRON_NOT_FOUND",
  "NODE_NOT_FOUND",
  "RUN_NOT_REWINDABLE",
  // Refusals that a flag overrides: nothing was changed
  "WORKFLOW_CHANGED",
  "SIDE_EFFECT_BOUNDARY",
]);

/** What stops a run from outside: `cancel` (first Ctrl-C), and `abandon` (second: stop waiting for task bodies). */
export type StopSignals = { cancel: AbortSignal; abandon?: AbortSignal };

/**
 * smithers-orchestrator's forms of --resume: `--resume true` (the same as `--resume`), `--resume
 * false` (not resuming), and `--resume <run-id>` (resume that run: `--resume --run-id <run-id>`).
 */
export function peerResume(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (arg !== "--resume" || next === undefined || next.startsWith("-") || /\.(tsx?|jsx?|mdx)$/.test(next)) {
      out.push(arg);
      continue;
    }
    i++;
    if (next === "true") out.push("--resume");
    else if (next !== "false") out.push("--resume", "--run-id", next);
  }
  return out;
}

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
] as const;

async function up(args: string[], io: Io, signals: StopSignals): Promise<RunResult | EnqueuedRun> {
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
    },
  });
  if (positionals.length > 1) throw usageError("up takes exactly one workflow file");
  const withDetach = values.detach ? NOT_WITH_DETACH.filter((flag) => values[flag] !== undefined) : [];
  if (withDetach.length > 0) throw usageError(`--${withDetach[0]} cannot be used with --detach: the worker that runs it uses its own settings`);
  if (values.resume && !values["run-id"]) throw usageError("--resume needs --run-id");
  if ((values["allow-code-change"] || values["accept-workflow-change"]) && !values.resume)
    throw usageError("--allow-code-change is for a resume: add --resume");
  const recorded = positionals[0] === undefined ? await recordedWorkflow(values) : undefined;
  const file = positionals[0] ?? recorded?.file;
  if (!file) throw usageError("up takes exactly one workflow file");
  const maxConcurrency = positiveInt(values["max-concurrency"], "--max-concurrency");
  const graceMs = nonNegativeMs(values["grace-ms"], "--grace-ms");
  const durability = durabilityFlag(values.durability);
  const input = parseInput(values.input);
  const maxCostUsd = nonNegativeNumber(values["max-cost-usd"], "--max-cost-usd");
  const maxTokens = nonNegativeNumber(values["max-tokens"], "--max-tokens", true);
  const pricing = values.pricing === undefined ? undefined : parseJsonFlag(values.pricing, "--pricing");
  const workflow = await loadWorkflowFile(file);
  if (values.detach) {
    return runWorkflow(workflow, {
      enqueue: true,
      input,
      runId: values["run-id"],
      resume: values.resume,
      dbPath: recorded?.dbPath ?? dbPathOption(values.db),
      workflowPath: resolve(file),
    });
  }
  const live = io.tty ? liveProgress(io.tty) : undefined;
  return runWorkflow(workflow, {
    input,
    runId: values["run-id"],
    resume: values.resume,
    dbPath: recorded?.dbPath ?? dbPathOption(values.db),
    maxConcurrency,
    graceMs,
    durability,
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
      const line = formatEvent(event);
      if (line) io.out(line);
    },
  }).finally(() => live?.stop());
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

async function upCommand(args: string[], io: Io, signals: StopSignals): Promise<number> {
  const result = await up(args, io, signals);
  io.out(`run ${result.runId} ${result.status}`);
  if (result.status === "queued") {
    io.out(`a smithers worker on the same database runs it; follow it with smithers events ${result.runId} --follow`);
    return EXIT.ok;
  }
  if (result.usage) io.out(formatUsage(result.usage));
  if (result.status === "finished") {
    io.out(JSON.stringify(result.output ?? null, null, 2));
    return EXIT.ok;
  }
  if (result.status === "cancelled") return EXIT.cancelled;
  if (result.status === "waiting-approval") {
    io.out(
      `the run waits for a person: smithers approve ${result.runId} (or deny) for an approval, smithers human list / answer for a human task; then run this command again with --resume (or let smithers supervise --watch resume it)`,
    );
    return EXIT.waiting;
  }
  if (result.status === "waiting-event") {
    io.out(
      `the run waits for a signal: smithers signal ${result.runId} <name> --data JSON (for a <Subflow>'s child, its run id shown above); smithers supervise --watch then resumes it`,
    );
    return EXIT.waiting;
  }
  if (result.status === "waiting-timer") {
    io.out(`the run waits for a timer: smithers supervise --watch resumes it when due (or run this command again with --resume then)`);
    return EXIT.waiting;
  }
  if (result.error) io.err(`smithers: ${result.error.code}: ${result.error.message}`);
  return EXIT.failed;
}

/** What fork --run, replay and rewind --resume execute the run with: up --resume. */
const resumeWith =
  (io: Io, signals: StopSignals): ResumeRun =>
  (runId, dbPath, extra) =>
    upCommand(["--resume", "--run-id", runId, "--db", dbPath, ...extra], io, signals);

const COMMANDS: Record<string, (args: string[], io: Io, signals: StopSignals) => Promise<number>> = {
  up: upCommand,
  supervise: (args, io, signals) => superviseCommand(args, io, signals.cancel),
  frames: framesCommand,
  timeline: (args, io) => timelineCommand(args, io),
  diff: (args, io) => diffCommand(args, io),
  fork: (args, io, signals) => forkCommand(args, io, resumeWith(io, signals)),
  replay: (args, io, signals) => forkCommand(args, io, resumeWith(io, signals), true),
  rewind: (args, io, signals) => rewindCommand(args, io, resumeWith(io, signals)),
  inspect: inspectCommand,
  approve: (args, io) => decideCommand("approve", args, io),
  deny: (args, io) => decideCommand("deny", args, io),
  cron: (args, io) => cronCommand(args, io),
  signal: (args, io) => signalCommand(args, io),
  human: (args, io) => humanCommand(args, io),
  serve: (args, io, signals) => serveCommand(args, io, signals.cancel),
  worker: workerCommand,
  prune: (args, io) => pruneCommand(args, io),
  ps: (args, io) => psCommand(args, io),
  events: (args, io, signals) => eventsCommand(args, io, signals.cancel),
  cancel: (args, io, signals) => cancelCommand(args, io, signals.cancel),
};

/** The help `smithers <command> --help` prints (deny shares approve's description). */
function helpOf(command: string): string {
  const help = commandHelp(USAGE, command) ?? USAGE;
  if (command !== "deny") return help;
  return `${help}\n\n${(commandHelp(USAGE, "approve") ?? "").split("\n\n")[1] ?? ""}`.trimEnd();
}

/** An unknown option of `command` (parseArgs' ERR_PARSE_ARGS_UNKNOWN_OPTION), with the closest known one. */
function unknownOption(command: string, error: Error): string {
  const flag = /'(-[^']*)'/.exec(error.message)?.[1];
  const known = commandFlags(helpOf(command));
  const close = flag === undefined ? undefined : suggest(flag.split("=")[0]!, [...known, "--help"]);
  return `smithers: USAGE: unknown option ${flag ?? ""} for ${command}${close ? `; did you mean ${close}?` : ""} (see smithers ${command} --help)`;
}

/** Runs the CLI with `argv` (without the runtime and script) and returns the exit code. */
export async function main(
  argv: string[],
  io: Io = { out: console.log, err: console.error },
  signal: AbortSignal | StopSignals = new AbortController().signal,
): Promise<number> {
  const signals: StopSignals = signal instanceof AbortSignal ? { cancel: signal } : signal;
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "--help" || command === "-h" || (command === "help" && rest.length === 0)) {
      io.out(USAGE);
      return command === undefined ? EXIT.usage : EXIT.ok;
    }
    const named = command === "help" ? rest[0]! : command;
    const run = COMMANDS[named];
    if (!run) {
      const close = suggest(named, Object.keys(COMMANDS));
      io.err(`smithers: USAGE: unknown command "${named}"${close ? `; did you mean ${close}?` : ""} (smithers --help lists them)`);
      return EXIT.usage;
    }
    // --help anywhere before a lone "--": the command's part of the usage.
    const beforeDashes = rest.indexOf("--") === -1 ? rest : rest.slice(0, rest.indexOf("--"));
    if (command === "help" || beforeDashes.includes("--help") || beforeDashes.includes("-h")) {
      io.out(helpOf(named));
      return EXIT.ok;
    }
    return await run(rest, io, signals);
  } catch (error) {
    if (error instanceof SmithersError) {
      io.err(`smithers: ${error.code}: ${error.message}`);
      if (error.code === "USAGE") io.err(usageLine(command));
      return BAD_INPUT_CODES.has(error.code) ? EXIT.usage : EXIT.failed;
    }
    if ((error as { code?: string })?.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && command !== undefined) {
      io.err(unknownOption(command, error as Error));
      return EXIT.usage;
    }
    if ((error as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`smithers: USAGE: ${(error as Error).message}`);
      return EXIT.usage;
    }
    io.err(`smithers: ${(error as Error)?.stack ?? String(error)}`);
    return EXIT.failed;
  }
}

if (import.meta.main) {
  // First Ctrl-C cancels: running tasks get their grace period to stop. Second: bodies still
  // running are recorded abandoned at once and the run ends. Third: exit without waiting.
  const cancel = new AbortController();
  const abandon = new AbortController();
  const onStop = () => {
    if (!cancel.signal.aborted) {
      console.error(
        process.argv[2] === "worker"
          ? "smithers worker: taking no more runs; finishing the runs in flight (Ctrl-C again to exit now)"
          : "smithers: cancelling; waiting for running tasks to stop (Ctrl-C again to stop waiting)",
      );
      cancel.abort();
    } else if (!abandon.signal.aborted) {
      console.error(
        process.argv[2] === "worker"
          ? "smithers worker: exiting now; other workers take its runs over once the lease runs out"
          : "smithers: not waiting any longer: task bodies still running are recorded abandoned (Ctrl-C again to exit at once)",
      );
      abandon.abort();
    } else process.exit(EXIT.cancelled);
  };
  process.on("SIGINT", onStop);
  process.on("SIGTERM", onStop);
  const io: Io = { out: console.log, err: console.error, ...(process.stdout.isTTY ? { tty: (text: string) => process.stdout.write(text) } : {}) };
  const code = await main(process.argv.slice(2), io, { cancel: cancel.signal, abandon: abandon.signal });
  // Everything is persisted by now; a task body still sleeping after a cancel must not keep the process alive.
  process.exit(code);
}

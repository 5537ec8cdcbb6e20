/**
 * `smithers fork`, `replay` and `rewind`: going back to a frame of a run (src/engine/history/time-travel.ts).
 * Each loads the run's recorded workflow file (or --workflow): fork needs its schemas, rewind its
 * tools' reverts. `fork --run`, `replay` and `rewind --resume` then execute the run from that file as `up FILE --resume` does.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "./parse-args.ts";
import { history, runs } from "../db/index.ts";
import { DEFAULT_DB_PATH, forkRun, loadWorkflowFile, rewindRun, type CrossedCall } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { dbPathOption, EXIT, frameNumber, openExistingDb, parseInput, usageError, type Io } from "./shared.ts";

/**
 * Executes a run as `smithers up [FILE] --resume --run-id ID` (given by the CLI's entry, which owns
 * `up`): with `file`, the workflow is loaded from it, else from the file the run recorded.
 */
export type ResumeRun = (runId: string, dbPath: string, extra: string[], file?: string) => Promise<number>;

/** The run's workflow file: --workflow, else the one it recorded (which must still exist). */
async function workflowFileOf(dbPath: string, runId: string, given: string | undefined): Promise<string | undefined> {
  const db = openExistingDb(dbPath);
  try {
    const run = await runs.getRun(db, runId);
    if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
    if (given !== undefined) return resolve(given);
    if (run.workflowPath && existsSync(run.workflowPath)) return run.workflowPath;
    return undefined;
  } finally {
    await db.close();
  }
}

function callLines(calls: readonly CrossedCall[]): string[] {
  return calls.map(
    (c) =>
      `  ${c.toolName} ${c.outcome} in ${c.nodeId}${c.iteration > 0 ? `#${c.iteration}` : ""} attempt ${c.attempt}${c.idempotencyKey ? ` key ${c.idempotencyKey}` : ""}${c.revertible ? " (has a revert)" : ""}`,
  );
}

export async function forkCommand(args: string[], io: Io, resume: ResumeRun, replay = false): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      frame: { type: "string", short: "f" },
      "reset-node": { type: "string", short: "n", multiple: true },
      input: { type: "string", short: "i" },
      "run-id": { type: "string" },
      run: { type: "boolean" },
      force: { type: "boolean" },
      workflow: { type: "string" },
      "allow-code-change": { type: "boolean" },
      json: { type: "boolean" },
      db: { type: "string" },
    },
  });
  const command = replay ? "replay" : "fork";
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError(`${command} takes exactly one run id`);
  if (replay && values.input !== undefined) throw usageError("replay runs with the parent's input; use fork --input JSON --run to change it");
  if (replay && values.run) throw usageError("replay always runs the fork; --run is for fork");
  if (values["allow-code-change"]) {
    throw usageError(
      `${command} takes no --allow-code-change: a fork is pinned to the code it is made with (the workflow file it loads: --workflow FILE, else the run's recorded one), so running it never meets a code change`,
    );
  }
  const running = replay || values.run;
  if (values.json && running)
    throw usageError(`${replay ? "replay" : "fork --run"} takes no --json: running the fork prints the run's progress, which is not JSON`);
  const frame = frameNumber(values.frame, "--frame");
  const input = parseInput(values.input);
  const dbPath = dbPathOption(values.db) ?? DEFAULT_DB_PATH;
  const file = await workflowFileOf(dbPath, runId, values.workflow);
  if (!file) throw usageError(`run ${runId} recorded no workflow file that still exists: pass it with --workflow FILE`);
  const workflow = await loadWorkflowFile(file);
  const fork = await forkRun(workflow, {
    runId,
    frame,
    ...(values["reset-node"] ? { resetNodes: values["reset-node"] } : {}),
    ...(input === undefined ? {} : { input }),
    ...(values["run-id"] ? { newRunId: values["run-id"] } : {}),
    force: Boolean(values.force),
    dbPath,
    workflowPath: file,
  });
  if (values.json) io.out(JSON.stringify(fork));
  else {
    io.out(`run ${fork.runId} forked from ${runId} at frame ${frame}: ${fork.copied} task${fork.copied === 1 ? "" : "s"} kept`);
    if (fork.reset.length > 0) io.out(`reset: ${fork.reset.join(", ")}`);
    if (fork.crossed.length > 0) {
      io.out(`side effects of ${runId} the fork may run again (--force):`);
      for (const line of callLines(fork.crossed)) io.out(line);
    }
  }
  if (!running) {
    if (!values.json) io.out(`start it with smithers up --resume --run-id ${fork.runId}`);
    return EXIT.ok;
  }
  return resume(fork.runId, dbPath, [], file);
}

export async function rewindCommand(args: string[], io: Io, resume: ResumeRun): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      resume: { type: "boolean" },
      force: { type: "boolean" },
      "no-revert": { type: "boolean" },
      workflow: { type: "string" },
      "allow-code-change": { type: "boolean" },
      json: { type: "boolean" },
      db: { type: "string" },
    },
  });
  const [runId, frameText] = positionals;
  if (!runId || frameText === undefined || positionals.length > 2) throw usageError("rewind takes a run id and a frame number");
  const frame = frameNumber(frameText, "the frame");
  if (values["allow-code-change"] && !values.resume) throw usageError("--allow-code-change is for continuing the run: add --resume");
  if (values.json && values.resume) throw usageError("rewind --resume takes no --json: continuing the run prints its progress, which is not JSON");
  const dbPath = dbPathOption(values.db) ?? DEFAULT_DB_PATH;
  // Its workflow's module defines its tools, reverts included.
  const file = await workflowFileOf(dbPath, runId, values.workflow);
  if (file) await loadWorkflowFile(file);
  else if (values.resume) throw usageError(`run ${runId} recorded no workflow file that still exists: pass it with --workflow FILE`);
  const db = openExistingDb(dbPath);
  let result: Awaited<ReturnType<typeof rewindRun>>;
  try {
    // Reverts are defined by the workflow's module: without it every side effect would look
    // unrevertible, and --force would discard calls whose revert exists.
    if (!file && !values["no-revert"] && (await db.read("standingSideEffects", (q) => history.standingSideEffects(q, runId))).length > 0) {
      throw usageError(
        `run ${runId} made side-effect calls, whose reverts its workflow defines, and recorded no workflow file that still exists: pass it with --workflow FILE, or --no-revert`,
      );
    }
    result = await rewindRun(db, { runId, frame, force: Boolean(values.force), revert: !values["no-revert"] });
  } finally {
    await db.close();
  }
  if (values.json) io.out(JSON.stringify(result));
  else {
    io.out(
      `run ${runId} rewound from frame ${result.fromFrame} to frame ${frame}: ${result.removedNodes} task${result.removedNodes === 1 ? "" : "s"} reset, ` +
        `${result.removedOutputs} output row${result.removedOutputs === 1 ? "" : "s"} and ${result.removedFrames} frame${result.removedFrames === 1 ? "" : "s"} removed (kept in its RunRewound event); status paused`,
    );
    if (result.reverted.length > 0) {
      io.out("reverted:");
      for (const line of callLines(result.reverted)) io.out(line);
    }
    if (result.crossed.length > 0) {
      io.out("crossed without a revert (--force):");
      for (const line of callLines(result.crossed)) io.out(line);
    }
  }
  if (!values.resume) {
    if (!values.json) io.out(`continue it with smithers up --resume --run-id ${runId}`);
    return EXIT.ok;
  }
  return resume(runId, dbPath, values["allow-code-change"] ? ["--allow-code-change"] : [], file);
}

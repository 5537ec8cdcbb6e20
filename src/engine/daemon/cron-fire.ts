/**
 * Firing due cron slots. A pass reads the schedules whose next_run_at_ms is due (an indexed
 * query), claims each slot by compare-and-swap on that column, then starts the run
 * `cron:<id>:<slotMs>` in this process. Missed slots after downtime: only the latest one runs;
 * the others are counted in the row's skipped_slots. A slot is claimed before its run is
 * created, so a daemon killed between the two loses that slot (at most once, never twice).
 */
import type { Cron } from "croner";
import { cron as cronRows, type Durability, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { CRON_FIRE_BATCH, CRON_SKIP_COUNT_LIMIT } from "../core/index.ts";
import { nextCronSlot, parseCron } from "./cron.ts";
import type { Clock, SmithersEvent } from "../core/index.ts";
import type { RunResult } from "../run/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import { runRoom, workflowRoom } from "./rooms.ts";

export type FireDueCronsOptions = {
  db: SmithersDb;
  now?: () => number;
  onEvent?: (event: SmithersEvent) => void;
  /** The durability the started runs commit with (see RunOptions.durability). */
  durability?: Durability;
  /** How often the started runs heartbeat (RunOptions.heartbeatMs). */
  heartbeatMs?: number;
  /** Fires at most this many schedules in the pass (default CRON_FIRE_BATCH). */
  limit?: number;
  /** The clock the started runs keep time with (RunOptions.clock). */
  clock?: Clock;
  /** The workflow a schedule starts; default: import its workflow file. */
  resolveWorkflow?: (row: cronRows.CronRow) => SmithersWorkflow | Promise<SmithersWorkflow>;
};

type FireBase = { cronId: string; runId: string; slotMs: number };
export type CronFire =
  /** `skipped`: missed slots passed over; `result` settles when the run ends (it never rejects). */
  | (FireBase & { action: "started"; skipped: number; result: Promise<RunResult> })
  /** The slot was claimed but its run could not start; the error is stored on the row. */
  | (FireBase & { action: "failed"; skipped: number; error: SmithersError })
  /** Another scheduler claimed this slot first. */
  | (FireBase & { action: "lost" });

export const cronRunId = (cronId: string, slotMs: number) => `cron:${cronId}:${slotMs}`;

/** The latest slot at or before `nowMs`, starting from the due slot `firstMs`, and how many slots it passes over. */
function latestSlot(pattern: Cron, firstMs: number, nowMs: number): { slotMs: number; skipped: number } {
  let slotMs = firstMs;
  let skipped = 0;
  for (;;) {
    const next = nextCronSlot(pattern, slotMs);
    if (next === null || next > nowMs) return { slotMs, skipped };
    slotMs = next;
    skipped += 1;
    if (skipped >= CRON_SKIP_COUNT_LIMIT) {
      // Counting stops here; the slot is still the latest one.
      const latest = pattern.previousRuns(1, new Date(nowMs + 1))[0]?.getTime() ?? slotMs;
      return { slotMs: Math.max(latest, slotMs), skipped };
    }
  }
}

function asSmithersError(error: unknown): SmithersError {
  return error instanceof SmithersError ? error : new SmithersError("ENGINE_ERROR", String((error as Error)?.message ?? error), { cause: error });
}

async function recordFailure(db: SmithersDb, cronId: string, error: SmithersError): Promise<void> {
  await cronRows.setCronError(db, cronId, JSON.stringify({ code: error.code, message: error.message }));
}

/** Loads the workflow and starts its run; resolves once the run row exists (or rejects with why it could not). */
async function startRun(o: FireDueCronsOptions, row: cronRows.CronRow, runId: string): Promise<{ result: Promise<RunResult> }> {
  const workflow = await (o.resolveWorkflow ?? (async (r: cronRows.CronRow) => (await workflowRoom()).loadWorkflowFile(r.workflowPath)))(row);
  const { runWorkflow } = await runRoom();
  const input = row.inputJson === null ? undefined : JSON.parse(row.inputJson);
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const run = runWorkflow(workflow, {
    runId,
    input,
    dbPath: o.db.target,
    workflowPath: row.workflowPath,
    durability: o.durability,
    heartbeatMs: o.heartbeatMs,
    ...(o.clock ? { clock: o.clock } : {}),
    onEvent: (event) => {
      if (event.type === "RunStarted") markStarted();
      o.onEvent?.(event);
    },
  });
  await Promise.race([started, run]);
  return { result: run.catch((error: unknown): RunResult => ({ runId, status: "failed", error: asSmithersError(error) })) };
}

async function fireOne(o: FireDueCronsOptions, row: cronRows.CronRow, nowMs: number): Promise<CronFire> {
  const dueMs = row.nextRunAtMs!;
  let pattern: Cron;
  try {
    pattern = parseCron(row.pattern, row.timezone ?? "UTC");
  } catch (error) {
    // A stored pattern that no longer parses stops the schedule instead of failing every pass.
    const runId = cronRunId(row.cronId, dueMs);
    const won = await cronRows.claimCronSlot(o.db, { cronId: row.cronId, expectedNextRunAtMs: dueMs, slotMs: dueMs, runId, nextRunAtMs: null, skipped: 0 });
    if (!won) return { cronId: row.cronId, runId, slotMs: dueMs, action: "lost" };
    await recordFailure(o.db, row.cronId, asSmithersError(error));
    return { cronId: row.cronId, runId, slotMs: dueMs, action: "failed", skipped: 0, error: asSmithersError(error) };
  }
  const { slotMs, skipped } = latestSlot(pattern, dueMs, nowMs);
  const runId = cronRunId(row.cronId, slotMs);
  const base = { cronId: row.cronId, runId, slotMs };
  const nextRunAtMs = nextCronSlot(pattern, Math.max(slotMs, nowMs));
  const won = await cronRows.claimCronSlot(o.db, { cronId: row.cronId, expectedNextRunAtMs: dueMs, slotMs, runId, nextRunAtMs, skipped });
  if (!won) return { ...base, action: "lost" };
  try {
    return { ...base, action: "started", skipped, ...(await startRun(o, row, runId)) };
  } catch (caught) {
    const error = asSmithersError(caught);
    // The run id is the slot's de-duplication key: it existing means the slot was already started.
    if (error.code === "RUN_EXISTS") return { ...base, action: "lost" };
    await recordFailure(o.db, row.cronId, error);
    return { ...base, action: "failed", skipped, error };
  }
}

/**
 * One pass: fires every due schedule (up to CRON_FIRE_BATCH) and resolves once each run has
 * started or failed to; a started run goes on in this process (its `result` settles when it ends).
 * @example
 * for (const fire of await fireDueCrons({ db })) if (fire.action === "started") await fire.result;
 */
export async function fireDueCrons(o: FireDueCronsOptions): Promise<CronFire[]> {
  const nowMs = (o.now ?? Date.now)();
  const due = await cronRows.listDueCrons(o.db, nowMs, Math.min(o.limit ?? CRON_FIRE_BATCH, CRON_FIRE_BATCH));
  return Promise.all(due.map((row) => fireOne(o, row, nowMs)));
}

/** What a supervisor pass reports for a cron fire (`runId` is the slot's run id). */
export type CronOutcome =
  | { runId: string; cronId: string; action: "cron-started"; result?: RunResult }
  | { runId: string; cronId: string; action: "cron-skipped"; count: number }
  | { runId: string; cronId: string; action: "cron-failed"; reason: string }
  | { runId: string; cronId: string; action: "cron-lost" };

/** The outcomes of one fire: its skipped slots, then what became of the slot it ran; `result` once the run ended. */
export function cronOutcomes(fire: CronFire, result?: RunResult): CronOutcome[] {
  const { cronId, runId } = fire;
  if (fire.action === "lost") return [{ runId, cronId, action: "cron-lost" }];
  const out: CronOutcome[] = fire.skipped > 0 ? [{ runId, cronId, action: "cron-skipped", count: fire.skipped }] : [];
  if (fire.action === "failed") out.push({ runId, cronId, action: "cron-failed", reason: `${fire.error.code}: ${fire.error.message}` });
  else out.push(result ? { runId, cronId, action: "cron-started", result } : { runId, cronId, action: "cron-started" });
  return out;
}

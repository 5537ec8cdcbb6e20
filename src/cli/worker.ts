/** `smithers worker`: executes queued runs, wakes due ones and takes over stale ones until SIGINT/SIGTERM. */
import { parseArgs } from "./parse-args.ts";
import { DEFAULT_POLL_INTERVAL_MS, DEFAULT_WORKER_CONCURRENCY, loadWorkflowsDir, Worker, type WorkerOutcome } from "../engine/daemon/index.ts";
import { firstContact, STALE_RUN_THRESHOLD_MS } from "../db/index.ts";
import { createLogger, logFormatOption } from "./log.ts";
import { metricsPortFlag, startMetrics } from "./metrics.ts";
import { describeOutcome, logOutcome } from "./supervise.ts";
import { durabilityFlag, durationFlag, EXIT, limitFlags, openExistingDb, positiveInt, unlessStopped, usageError, type Io, type StopSignals } from "./shared.ts";

/** The shortest --lease: a few beats of 250 ms, long enough that a live owner's pause is not taken for its death. */
export const MIN_LEASE_MS = 1_000;

function describe(o: WorkerOutcome): string {
  if (o.action === "ran") return `ran ${o.runId} ${o.result.status}${o.result.error ? ` ${o.result.error.code}` : ""}`;
  if (o.action === "dropped" || o.action === "returned" || o.action === "error") return `${o.action} ${o.runId || "(pass)"}: ${o.reason}`;
  return describeOutcome(o);
}

export async function workerCommand(args: string[], io: Io, signals: StopSignals): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      db: { type: "string" },
      concurrency: { type: "string" },
      workflows: { type: "string" },
      lease: { type: "string" },
      "poll-interval": { type: "string" },
      durability: { type: "string" },
      quiet: { type: "boolean" },
      "log-format": { type: "string" },
      "metrics-port": { type: "string" },
      limit: { type: "string", multiple: true },
    },
    strict: true,
  });
  const limits = limitFlags(values.limit);
  const log = createLogger(io, logFormatOption(values["log-format"]));
  const metricsPort = metricsPortFlag(values["metrics-port"]);
  const concurrency = positiveInt(values.concurrency, "--concurrency") ?? DEFAULT_WORKER_CONCURRENCY;
  const leaseMs = durationFlag(values.lease, "--lease") ?? STALE_RUN_THRESHOLD_MS;
  // A live owner paused longer than the lease (GC, a synchronous task, clock skew between hosts) would be taken over.
  if (leaseMs < MIN_LEASE_MS) throw usageError(`--lease must be at least ${MIN_LEASE_MS / 1000}s`);
  const pollIntervalMs = durationFlag(values["poll-interval"], "--poll-interval") ?? DEFAULT_POLL_INTERVAL_MS;
  if (pollIntervalMs <= 0) throw usageError("--poll-interval must be more than 0");
  const durability = durabilityFlag(values.durability);
  const workflows = values.workflows === undefined ? undefined : await loadWorkflowsDir(values.workflows);
  if (workflows?.length === 0) throw usageError(`--workflows ${values.workflows} holds no *.tsx workflow`);
  const db = openExistingDb(values.db);
  // PostgreSQL down or refusing the login: one line and exit 2 (DB_UNREACHABLE), not a failed pass
  // every poll. Ctrl-C while it does not answer exits: nothing was taken yet.
  const reached =
    db.dialect !== "postgres" ||
    (await unlessStopped(
      firstContact(db).then(() => true),
      signals.cancel,
    ));
  if (!reached) return EXIT.ok;
  let metrics: Awaited<ReturnType<typeof startMetrics>> | undefined;
  try {
    metrics = metricsPort === undefined ? undefined : await startMetrics(db, metricsPort, log, "worker");
    const quiet = values.quiet;
    const worker = new Worker({
      db,
      concurrency,
      leaseMs,
      pollIntervalMs,
      ...(limits ? { limits } : {}),
      ...(workflows ? { workflows } : {}),
      ...(durability ? { durability } : {}),
      onEvent:
        metrics === undefined && quiet
          ? undefined
          : (event) => {
              metrics?.observe(event);
              if (!quiet) log.event(event, true);
            },
      onOutcome: (o) =>
        o.action === "error"
          ? log.err("error", describe(o), { runId: o.runId || undefined }, `smithers worker: ${describe(o)}`)
          : logOutcome(log, o, describe(o)),
    });
    const serving = workflows ? `workflows ${workflows.map((w) => w.name).join(", ")}` : "every workflow file runs recorded";
    log.out(
      "info",
      `smithers worker ${worker.id} on ${db.path}: ${concurrency} at once, lease ${leaseMs} ms, ${serving} (Ctrl-C: finish the runs in flight; twice: exit now)`,
      { workerId: worker.id },
    );
    await worker.run(signals.cancel, signals.abandon);
    return EXIT.ok;
  } finally {
    await metrics?.stop();
    await db.close();
  }
}

/** `smithers serve`: the HTTP API until SIGINT/SIGTERM. */
import { parseArgs } from "node:util";
import { DEFAULT_DB_PATH, pruneRuns } from "../engine/index.ts";
import { createServer, DEFAULT_MAX_CONCURRENT, DEFAULT_QUEUE_CAPACITY } from "../server/index.ts";
import { MIN_LEASE_MS } from "./worker.ts";
import { dbPathOption, durationFlag, EXIT, type Io, nonNegativeNumber, positiveInt, usageError } from "./shared.ts";

/** How often `serve --prune-older-than` prunes (and once at start). */
const SERVE_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

export async function serveCommand(args: string[], io: Io, stop: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      db: { type: "string" },
      workflows: { type: "string" },
      token: { type: "string" },
      "queue-capacity": { type: "string" },
      "max-concurrent": { type: "string" },
      lease: { type: "string" },
      "prune-older-than": { type: "string" },
    },
    strict: true,
  });
  const port = nonNegativeNumber(values.port, "--port", true) ?? 7331;
  const token = values.token ?? (process.env.SMITHERS_TOKEN || undefined);
  const leaseMs = durationFlag(values.lease, "--lease");
  if (leaseMs !== undefined && leaseMs < MIN_LEASE_MS) throw usageError(`--lease must be at least ${MIN_LEASE_MS / 1000}s`);
  if (leaseMs !== undefined && values["max-concurrent"] !== undefined && Number(values["max-concurrent"]) === 0) {
    throw usageError("--lease sets the lease of the server's own worker, and --max-concurrent 0 runs none: give the lease to the smithers worker processes");
  }
  const server = await createServer({
    dbPath: dbPathOption(values.db) ?? DEFAULT_DB_PATH,
    ...(values.workflows ? { workflowsDir: values.workflows } : {}),
    ...(token ? { token } : {}),
    queueCapacity: positiveInt(values["queue-capacity"], "--queue-capacity") ?? DEFAULT_QUEUE_CAPACITY,
    maxConcurrent: nonNegativeNumber(values["max-concurrent"], "--max-concurrent", true) ?? DEFAULT_MAX_CONCURRENT,
    ...(leaseMs === undefined ? {} : { leaseMs }),
  });
  const pruneOlderThanMs = durationFlag(values["prune-older-than"], "--prune-older-than");
  const { url } = await server.start({ port, host: values.host ?? "127.0.0.1" });
  io.out(`smithers serve listening on ${url}`);
  io.out(`dashboard: ${url}/${token ? "#token=<your token>" : ""}`);
  // Retention while serving: at start, then every hour, runs that ended longer ago are pruned.
  let pruning: ReturnType<typeof setInterval> | undefined;
  if (pruneOlderThanMs !== undefined) {
    const prune = () =>
      pruneRuns(server.db, { olderThanMs: pruneOlderThanMs }).then(
        (report) => report.runs.length > 0 && io.out(`smithers serve pruned ${report.runs.length} run(s)`),
        (error: unknown) => io.err(`smithers serve: prune failed: ${(error as Error)?.message ?? String(error)}`),
      );
    void prune();
    pruning = setInterval(() => void prune(), SERVE_PRUNE_INTERVAL_MS);
  }
  await new Promise<void>((done) => (stop.aborted ? done() : stop.addEventListener("abort", () => done(), { once: true })));
  clearInterval(pruning);
  // Runs in flight are left to go stale: the next start (or a worker) takes them over once the lease runs out.
  await server.stop({ drain: false });
  return EXIT.ok;
}

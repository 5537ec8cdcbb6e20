/** `smithers serve`: the HTTP API until SIGINT/SIGTERM. */
import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "./parse-args.ts";
import { DEFAULT_DB_PATH, pruneRuns } from "../engine/index.ts";
import { checkListen, createServer, DEFAULT_MAX_CONCURRENT, DEFAULT_QUEUE_CAPACITY, logText, OutcomeNote } from "../server/index.ts";
import { SmithersError } from "../errors/index.ts";
import { createLogger, logFormatOption, type Logger } from "./log.ts";
import { MIN_LEASE_MS } from "./worker.ts";
import { dbPathOption, durationFlag, EXIT, type Io, limitFlags, nonNegativeNumber, positiveInt, unlessStopped, usageError } from "./shared.ts";

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
      "token-file": { type: "string" },
      "max-body": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "insecure-http": { type: "boolean" },
      "queue-capacity": { type: "string" },
      "max-concurrent": { type: "string" },
      lease: { type: "string" },
      "prune-older-than": { type: "string" },
      "log-format": { type: "string" },
      limit: { type: "string", multiple: true },
      "idempotency-window": { type: "string" },
    },
    strict: true,
  });
  const limits = limitFlags(values.limit);
  if (limits && values["max-concurrent"] !== undefined && Number(values["max-concurrent"]) === 0) {
    throw usageError("--limit sets the limits of the server's own worker, and --max-concurrent 0 runs none: give them to the smithers worker processes");
  }
  const log = createLogger(io, logFormatOption(values["log-format"]));
  const port = nonNegativeNumber(values.port, "--port", true) ?? 7331;
  const token = tokenOption(values.token, values["token-file"], log);
  const maxBodyBytes = byteSize(values["max-body"], "--max-body");
  const tls = tlsOption(values["tls-cert"], values["tls-key"]);
  if (tls && values["insecure-http"])
    throw usageError("--insecure-http says a proxy in front terminates TLS, --tls-cert that this server does: pass one of them");
  const host = values.host ?? "127.0.0.1";
  // Also checked by start(); here too, so a refused address creates no database file first.
  checkListen({ host, token, tls: tls !== undefined, insecureHttp: Boolean(values["insecure-http"]) });
  const leaseMs = durationFlag(values.lease, "--lease");
  if (leaseMs !== undefined && leaseMs < MIN_LEASE_MS) throw usageError(`--lease must be at least ${MIN_LEASE_MS / 1000}s`);
  if (leaseMs !== undefined && values["max-concurrent"] !== undefined && Number(values["max-concurrent"]) === 0) {
    throw usageError("--lease sets the lease of the server's own worker, and --max-concurrent 0 runs none: give the lease to the smithers worker processes");
  }
  const idempotencyWindowMs = durationFlag(values["idempotency-window"], "--idempotency-window");
  if (idempotencyWindowMs === 0) throw usageError("--idempotency-window must be more than 0");
  // On PostgreSQL createServer waits for the server's first answer; Ctrl-C meanwhile exits.
  const server = await unlessStopped(
    createServer({
      dbPath: dbPathOption(values.db) ?? DEFAULT_DB_PATH,
      ...(values.workflows ? { workflowsDir: values.workflows } : {}),
      ...(token === undefined ? {} : { token }),
      ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
      ...(tls ? { tls } : {}),
      ...(values["insecure-http"] ? { insecureHttp: true } : {}),
      queueCapacity: positiveInt(values["queue-capacity"], "--queue-capacity") ?? DEFAULT_QUEUE_CAPACITY,
      maxConcurrent: nonNegativeNumber(values["max-concurrent"], "--max-concurrent", true) ?? DEFAULT_MAX_CONCURRENT,
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(limits ? { limits } : {}),
      ...(idempotencyWindowMs === undefined ? {} : { idempotencyWindowMs }),
      onError: (runId, error) => {
        const text = logText(error);
        const code = error instanceof SmithersError ? error.code : undefined;
        // A worker's note (a run dropped, returned, released) is a warning; a failed run or a bug, an error.
        log.err(
          error instanceof OutcomeNote ? "warn" : "error",
          text,
          { runId: runId || undefined, code },
          `smithers serve: run ${runId || "(queue)"}: ${text}`,
        );
      },
      onReadError: (what, error) => {
        const message = `${what}: ${logText(error)}`;
        log.err("warn", message, error instanceof SmithersError ? { code: error.code } : {}, `smithers serve: ${message}`);
      },
    }),
    stop,
  );
  if (server === undefined) return EXIT.ok;
  const pruneOlderThanMs = durationFlag(values["prune-older-than"], "--prune-older-than");
  const { url } = await server.start({ port, host });
  log.out("info", `smithers serve listening on ${url}`, { url });
  log.out("info", `dashboard: ${url}/${token === undefined ? "" : "#token=<your token>"}`);
  // Retention while serving: at start, then every hour, runs that ended longer ago are pruned.
  let pruning: ReturnType<typeof setInterval> | undefined;
  if (pruneOlderThanMs !== undefined) {
    const prune = () =>
      pruneRuns(server.db, { olderThanMs: pruneOlderThanMs }).then(
        (report) => report.runs.length > 0 && log.out("info", `smithers serve pruned ${report.runs.length} run(s)`),
        (error: unknown) => {
          const message = `prune failed: ${(error as Error)?.message ?? String(error)}`;
          log.err("error", message, error instanceof SmithersError ? { code: error.code } : {}, `smithers serve: ${message}`);
        },
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

/**
 * The bearer token: --token-file's contents (trimmed), else --token, else $SMITHERS_TOKEN. --token
 * still works but is warned about: a command line is readable by every user of the machine (ps, /proc).
 */
function tokenOption(flag: string | undefined, file: string | undefined, log: Logger): string | undefined {
  if (flag !== undefined && file !== undefined) throw usageError("pass the token once: --token-file PATH (or SMITHERS_TOKEN), not also --token");
  if (file !== undefined) {
    const token = readFlagFile(file, "--token-file").trim();
    // Checked after reading, so a missing file is the error reported.
    if ((statSync(file).mode & 0o077) !== 0) warn(log, `${file} is readable by other users; chmod 600 it`);
    return token;
  }
  if (flag === undefined) return process.env.SMITHERS_TOKEN || undefined;
  warn(log, "--token is readable by every user of this machine (ps, /proc/<pid>/cmdline); pass --token-file PATH or SMITHERS_TOKEN instead");
  return flag;
}

/** A warning on stderr; as text, prefixed "smithers serve: warning: " as it always was. */
const warn = (log: Logger, message: string) => log.err("warn", message, {}, `smithers serve: warning: ${message}`);

/** --tls-cert and --tls-key, read now so a missing file fails before anything starts. */
function tlsOption(cert: string | undefined, key: string | undefined): { cert: string; key: string } | undefined {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw usageError("--tls-cert and --tls-key go together: the certificate (PEM) and its private key");
  return { cert: readFlagFile(cert, "--tls-cert"), key: readFlagFile(key, "--tls-key") };
}

function readFlagFile(path: string, flag: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (cause) {
    throw usageError(`${flag}: cannot read ${path}: ${(cause as Error).message}`);
  }
}

const UNITS: Record<string, number> = { "": 1, b: 1, kb: 1e3, kib: 1024, mb: 1e6, mib: 1024 ** 2, gb: 1e9, gib: 1024 ** 3 };

/** A size in bytes: a whole number of bytes, or a number with a unit (512KB, 1MiB, 2GB); USAGE otherwise. */
export function byteSize(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = match ? UNITS[match[2]!.toLowerCase()] : undefined;
  const bytes = match && unit !== undefined ? Math.floor(Number(match[1]) * unit) : Number.NaN;
  if (!(Number.isSafeInteger(bytes) && bytes > 0)) throw usageError(`${flag} must be a size such as 1MiB, 512KB or 65536 (bytes), got "${text}"`);
  return bytes;
}

/**
 * `smithers serve`: the HTTP API (Hono) over one database: start runs of registered workflows
 * through a bounded, durable queue, inspect them, decide their waits, and follow their journals
 * as server-sent events.
 */
import { resolve } from "node:path";
import { Hono } from "hono";
import { firstContact, isPostgresUrl, openSmithersDb, type SmithersDb } from "../db/index.ts";
import { createMetrics, type Limits, loadWorkflowsDir } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { bearerToken, bodyLimitOf, checkListen, checkToken, DEFAULT_MAX_BODY_BYTES, frameGuard, loopbackOnly } from "./access.ts";
import { errorResponse } from "./errors.ts";
import { logText, RunQueue, type RegisteredWorkflow } from "./queue.ts";
import { registerDashboard } from "./dashboard.ts";
import { registerDashboardApi } from "./dashboard-api.ts";
import { registerEvalRoutes } from "./eval-routes.ts";
import { registerRoutes } from "./routes.ts";
import { ANY_RUN } from "./sse.ts";

export { httpStatus } from "./errors.ts";
export { DASHBOARD_DIR } from "./dashboard.ts";
export { checkListen, DEFAULT_MAX_BODY_BYTES, MIN_TOKEN_LENGTH } from "./access.ts";
export type { RegisteredWorkflow } from "./queue.ts";
export { logText, OutcomeNote } from "./queue.ts";
export { loadWorkflowsDir } from "../engine/index.ts";

export const DEFAULT_QUEUE_CAPACITY = 1024;
export const DEFAULT_MAX_CONCURRENT = 4;

export type ServerOptions = {
  dbPath: string;
  /** Every `*.tsx` file here is registered under its file name (without extension). */
  workflowsDir?: string;
  /** Workflows registered directly (tests, embedding). */
  workflows?: RegisteredWorkflow[];
  /** When set, every request needs `Authorization: Bearer <token>`; at least MIN_TOKEN_LENGTH (16) characters (TOKEN_TOO_SHORT). */
  token?: string;
  /** The largest request body, and so run input, in bytes (default 1 MiB); a larger one is 413 BODY_TOO_LARGE. */
  maxBodyBytes?: number;
  /** Serve HTTPS: PEM certificate (chain) and private key, as text or files (Bun.file). */
  tls?: { cert: string | Bun.BunFile; key: string | Bun.BunFile };
  /** Allow plain HTTP on a non-loopback host: a proxy in front terminates TLS. */
  insecureHttp?: boolean;
  /** Runs that may wait to start (default 1024); one more is answered 503. */
  queueCapacity?: number;
  /** Runs executing at once (default 4); 0: accept runs only, for `smithers worker` processes to execute. */
  maxConcurrent?: number;
  /** The in-server worker's lease (WorkerOptions.leaseMs, default 30 s). */
  leaseMs?: number;
  /** Limits by key over the workflows' own, for the runs this server executes (WorkerOptions.limits). */
  limits?: Limits;
  /** Retry-After of a 503 (default 1 s). */
  retryAfterSeconds?: number;
  /** How long POST /runs remembers an Idempotency-Key and the run it started (default 24 h). */
  idempotencyWindowMs?: number;
  /** How often an SSE stream looks for new events when nothing woke it (default 100 ms). */
  pollMs?: number;
  /** Keep-alive comment interval of a quiet SSE stream (default 5 s). */
  heartbeatMs?: number;
  /**
   * Hears each run that failed (its SmithersError) and each note of the queue's worker (an
   * OutcomeNote: a run dropped, returned or released); default: one line on stderr (logText).
   */
  onError?: (runId: string, error: unknown) => void;
  /**
   * Hears a read the server could not make for its clients, which they survive (the runs list of
   * GET /runs/stream: the clients keep the list they have); default: one line on stderr.
   */
  onReadError?: (what: string, error: unknown) => void;
  /** The built dashboard (default dist/dashboard, what scripts/build-dashboard.ts writes). */
  dashboardDir?: string;
};

export type SmithersServer = {
  app: Hono;
  db: SmithersDb;
  queue: RunQueue;
  /**
   * Listens (port 0: any free port); resolves with the URL. A non-loopback host needs a token (USAGE)
   * and TLS or `insecureHttp` (TLS_REQUIRED).
   */
  start(o?: { port?: number; host?: string }): Promise<{ url: string; port: number }>;
  /** Stops listening and starting runs; with `drain` (default) waits for the runs in flight. */
  stop(o?: { drain?: boolean }): Promise<void>;
};

export async function createServer(o: ServerOptions): Promise<SmithersServer> {
  if (o.token !== undefined) checkToken(o.token);
  const maxBodyBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) {
    throw new SmithersError("INVALID_OPTION", `maxBodyBytes must be a positive whole number of bytes, got ${maxBodyBytes}`);
  }
  const dbPath = isPostgresUrl(o.dbPath) ? o.dbPath : resolve(o.dbPath);
  const db = openSmithersDb(dbPath);
  // A PostgreSQL server that does not answer is said now (DB_UNREACHABLE), not after listening.
  if (db.dialect === "postgres") await firstContact(db);
  const registered = [...(o.workflowsDir ? await loadWorkflowsDir(o.workflowsDir) : []), ...(o.workflows ?? [])];
  const workflows = new Map(registered.map((w) => [w.name, w]));
  const waiters = new Map<string, Set<() => void>>();
  const wakeOne = (key: string) => {
    const set = waiters.get(key);
    if (!set) return;
    waiters.delete(key);
    for (const f of set) f();
  };
  // ANY_RUN's waiters (the runs list's stream) hear every run's events.
  const wake = (runId: string) => {
    wakeOne(runId);
    if (runId !== ANY_RUN) wakeOne(ANY_RUN);
  };
  const waitForEvent = (runId: string, ms: number) =>
    new Promise<void>((done) => {
      const set = waiters.get(runId) ?? new Set();
      waiters.set(runId, set);
      const finish = () => {
        clearTimeout(timer);
        set.delete(finish);
        done();
      };
      const timer = setTimeout(finish, ms);
      set.add(finish);
    });
  // Counters hear the runs this server executes; gauges are read from the database at each scrape.
  const metrics = await createMetrics(db);
  const queue = new RunQueue({
    db,
    workflows,
    capacity: o.queueCapacity ?? DEFAULT_QUEUE_CAPACITY,
    maxConcurrent: o.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
    ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
    ...(o.limits === undefined ? {} : { limits: o.limits }),
    retryAfterSeconds: o.retryAfterSeconds ?? 1,
    ...(o.idempotencyWindowMs === undefined ? {} : { idempotencyWindowMs: o.idempotencyWindowMs }),
    onEvent: wake,
    observe: (event) => metrics.observe(event),
    onError: o.onError ?? ((runId, error) => console.error(`smithers serve: run ${runId || "(queue)"}: ${logText(error)}`)),
  });

  const app = new Hono();
  app.onError((error, c) => errorResponse(c, error));
  app.notFound((c) => c.json({ code: "NOT_FOUND", message: `No route ${c.req.method} ${c.req.path}` }, 404));
  app.use(frameGuard);
  registerDashboard(app, o.dashboardDir);
  // With a token, the token decides; the body limit comes after it, so a stranger's body is never read.
  app.use(o.token === undefined ? loopbackOnly : bearerToken(o.token));
  app.use(bodyLimitOf(maxBodyBytes));
  app.get("/health", async (c) => c.json({ ok: true, running: queue.running }));
  app.get("/metrics", async (c) => {
    const { contentType, body } = await metrics.scrape();
    return c.body(body, 200, { "Content-Type": contentType });
  });
  const follow = { db, pollMs: o.pollMs ?? 100, heartbeatMs: o.heartbeatMs ?? 5_000, waitForEvent };
  // Before registerRoutes: GET /runs/stream must not be taken for a run id.
  registerDashboardApi(app, {
    db,
    follow,
    onReadError: o.onReadError ?? ((what, error) => console.error(`smithers serve: ${what}: ${logText(error)}`)),
  });
  registerEvalRoutes(app, db);
  registerRoutes(app, { db, queue, follow });

  let server: ReturnType<typeof Bun.serve> | undefined;
  return {
    app,
    db,
    queue,
    async start(s = {}) {
      const host = s.host ?? "127.0.0.1";
      checkListen({ host, token: o.token, tls: o.tls !== undefined, insecureHttp: Boolean(o.insecureHttp) });
      await queue.start();
      // idleTimeout 0: an SSE stream may be quiet between keep-alives. Bun's own body limit is lifted:
      // its 413 carries no code, and bodyLimitOf judges every body before reading more than the limit.
      const listen = { fetch: app.fetch, port: s.port ?? 0, hostname: host, idleTimeout: 0, maxRequestBodySize: Number.MAX_SAFE_INTEGER };
      try {
        server = Bun.serve(o.tls ? { ...listen, tls: o.tls } : listen);
      } catch (cause) {
        await queue.stop(false);
        const code = (cause as { code?: string })?.code;
        if (code === "EADDRINUSE" || /port \d+ in use/i.test((cause as Error)?.message ?? "")) {
          throw new SmithersError(
            "PORT_IN_USE",
            `Port ${listen.port} on ${host} is in use: stop what listens there, or pass --port another (0 picks a free one)`,
            {
              port: listen.port,
              host,
              cause,
            },
          );
        }
        if (!o.tls) throw cause;
        throw new SmithersError("INVALID_OPTION", `Cannot serve HTTPS with the certificate and key given: ${(cause as Error).message}`, { cause });
      }
      const url = `${o.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
      return { url, port: server.port ?? 0 };
    },
    async stop(s = {}) {
      await server?.stop(true);
      await queue.stop(s.drain ?? true);
      for (const runId of [...waiters.keys()]) wakeOne(runId);
      await db.close();
    },
  };
}

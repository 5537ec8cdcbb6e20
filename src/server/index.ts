/**
 * `smithers serve`: the HTTP API (Hono) over one database: start runs of registered workflows
 * through a bounded, durable queue, inspect them, decide their waits, and follow their journals
 * as server-sent events.
 */
import { resolve } from "node:path";
import { Hono } from "hono";
import { isPostgresUrl, openSmithersDb, type SmithersDb } from "../db/index.ts";
import { loadWorkflowsDir } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { errorResponse } from "./errors.ts";
import { RunQueue, type RegisteredWorkflow } from "./queue.ts";
import { registerDashboard } from "./dashboard.ts";
import { registerDashboardApi } from "./dashboard-api.ts";
import { registerRoutes } from "./routes.ts";
import { ANY_RUN } from "./sse.ts";

export { httpStatus } from "./errors.ts";
export { DASHBOARD_DIR } from "./dashboard.ts";
export type { RegisteredWorkflow } from "./queue.ts";
export { loadWorkflowsDir } from "../engine/index.ts";

export const DEFAULT_QUEUE_CAPACITY = 1024;
export const DEFAULT_MAX_CONCURRENT = 4;

export type ServerOptions = {
  dbPath: string;
  /** Every `*.tsx` file here is registered under its file name (without extension). */
  workflowsDir?: string;
  /** Workflows registered directly (tests, embedding). */
  workflows?: RegisteredWorkflow[];
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** Runs that may wait to start (default 1024); one more is answered 503. */
  queueCapacity?: number;
  /** Runs executing at once (default 4); 0: accept runs only, for `smithers worker` processes to execute. */
  maxConcurrent?: number;
  /** The in-server worker's lease (WorkerOptions.leaseMs, default 30 s). */
  leaseMs?: number;
  /** Retry-After of a 503 (default 1 s). */
  retryAfterSeconds?: number;
  /** How often an SSE stream looks for new events when nothing woke it (default 100 ms). */
  pollMs?: number;
  /** Keep-alive comment interval of a quiet SSE stream (default 5 s). */
  heartbeatMs?: number;
  onError?: (runId: string, error: unknown) => void;
  /** The built dashboard (default dist/dashboard, what scripts/build-dashboard.ts writes). */
  dashboardDir?: string;
};

export type SmithersServer = {
  app: Hono;
  db: SmithersDb;
  queue: RunQueue;
  /** Listens (port 0: any free port); resolves with the URL. Refuses a non-loopback host without a token. */
  start(o?: { port?: number; host?: string }): Promise<{ url: string; port: number }>;
  /** Stops listening and starting runs; with `drain` (default) waits for the runs in flight. */
  stop(o?: { drain?: boolean }): Promise<void>;
};

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

export async function createServer(o: ServerOptions): Promise<SmithersServer> {
  const dbPath = isPostgresUrl(o.dbPath) ? o.dbPath : resolve(o.dbPath);
  const db = openSmithersDb(dbPath);
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
  const queue = new RunQueue({
    db,
    workflows,
    capacity: o.queueCapacity ?? DEFAULT_QUEUE_CAPACITY,
    maxConcurrent: o.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
    ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
    retryAfterSeconds: o.retryAfterSeconds ?? 1,
    onEvent: wake,
    onError: o.onError ?? ((runId, error) => console.error(`smithers serve: run ${runId || "(queue)"}:`, error)),
  });

  const app = new Hono();
  app.onError((error, c) => errorResponse(c, error));
  app.notFound((c) => c.json({ code: "NOT_FOUND", message: `No route ${c.req.method} ${c.req.path}` }, 404));
  registerDashboard(app, o.dashboardDir);
  if (o.token !== undefined) {
    const expected = `Bearer ${o.token}`;
    app.use(async (c, next) => {
      if (!sameText(c.req.header("Authorization") ?? "", expected)) {
        return errorResponse(c, new SmithersError("UNAUTHORIZED", "Missing or wrong bearer token (Authorization: Bearer <token>)"));
      }
      await next();
      return undefined;
    });
  }
  // Browsers may send simple cross-site requests to a loopback port, and a rebinding name can reach
  // it as well: a request must name a loopback host, come from no other origin, and a POST must say
  // it carries JSON (a cross-site form cannot, without a preflight). With a token, the token decides.
  if (o.token === undefined) {
    app.use(async (c, next) => {
      const origin = c.req.header("Origin");
      if (!loopbackHost(c.req.header("Host")) || (origin !== undefined && !loopbackOrigin(origin))) {
        return errorResponse(c, new SmithersError("FORBIDDEN", "Without a token the server answers only requests addressed to and coming from loopback"));
      }
      if (c.req.method === "POST" && !(c.req.header("Content-Type") ?? "").toLowerCase().startsWith("application/json")) {
        return errorResponse(c, new SmithersError("UNSUPPORTED_MEDIA_TYPE", "POST bodies must be application/json"));
      }
      await next();
      return undefined;
    });
  }
  app.get("/health", async (c) => c.json({ ok: true, running: queue.running }));
  const follow = { db, pollMs: o.pollMs ?? 100, heartbeatMs: o.heartbeatMs ?? 5_000, waitForEvent };
  // Before registerRoutes: GET /runs/stream must not be taken for a run id.
  registerDashboardApi(app, { db, follow });
  registerRoutes(app, { db, queue, follow });

  let server: ReturnType<typeof Bun.serve> | undefined;
  return {
    app,
    db,
    queue,
    async start(s = {}) {
      const host = s.host ?? "127.0.0.1";
      if (o.token === undefined && !LOOPBACK.has(host)) {
        throw new SmithersError("USAGE", `Refusing to listen on ${host} without a token: pass --token (or SMITHERS_TOKEN), or listen on 127.0.0.1`);
      }
      await queue.start();
      // idleTimeout 0: an SSE stream may be quiet between keep-alives.
      server = Bun.serve({ fetch: app.fetch, port: s.port ?? 0, hostname: host, idleTimeout: 0 });
      const url = `http://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
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

/** Compares in time independent of where the texts differ (a token check must not leak a prefix). */
function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a.charCodeAt(i) || 0) ^ b.charCodeAt(i);
  return diff === 0;
}

const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** A Host header naming a loopback address (any port). */
function loopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : (host.split(":")[0] ?? "");
  return LOOPBACK_NAMES.has(name.toLowerCase());
}

function loopbackOrigin(origin: string): boolean {
  try {
    return LOOPBACK_NAMES.has(new URL(origin).hostname.toLowerCase());
  } catch {
    return false;
  }
}

/**
 * Prometheus metrics, built from the events the engine already emits (counters, in the process that
 * runs the work) and from the database at scrape time (gauges: runs per status, queue depth, the
 * limits' slots and rate windows per key).
 * prom-client is imported when metrics are made, so a command that serves none never loads it.
 */
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { limits, metrics as metricsDb, type SmithersDb } from "../../db/index.ts";
import { ENDED_RUN_STATUSES, RUN_STATUSES } from "../../contract/index.ts";
import type { SmithersEvent } from "../core/index.ts";
import { SmithersError } from "../../errors/index.ts";

/** The text format's content type, as prom-client writes it. */
export type MetricsScrape = { contentType: string; body: string };

export type SmithersMetrics = {
  /** Hears one engine event; never throws, never waits (a failed read drops that sample). */
  observe(event: SmithersEvent): void;
  /** Waits for the samples still being read, reads the gauges, and writes every metric. */
  scrape(): Promise<MetricsScrape>;
};

/** Attempt durations' bucket bounds in seconds: from a quick compute task to an hour-long agent. */
const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/**
 * The statuses `smithers_runs` counts: those of runs not ended (running, paused, waiting-*), plus
 * `queued` (requests no worker has claimed, as `smithers ps` shows them). Ended runs only grow in
 * number; counting them would make every scrape slower as history piles up, and
 * `smithers_runs_ended_total` already counts them as they end.
 */
const LIVE_STATUSES: readonly string[] = RUN_STATUSES.filter((s) => !(ENDED_RUN_STATUSES as readonly string[]).includes(s));

type Outcome = "finished" | "failed" | "cancelled" | "abandoned";
const OUTCOME_OF: Partial<Record<SmithersEvent["type"], Outcome>> = {
  NodeFinished: "finished",
  NodeFailed: "failed",
  NodeCancelled: "cancelled",
  NodeAbandoned: "abandoned",
};

/** Makes one process's metrics over `db`, in a registry of their own. */
export async function createMetrics(db: SmithersDb): Promise<SmithersMetrics> {
  const prom = await import("prom-client");
  const registry: Registry = new prom.Registry();
  const on = { registers: [registry] };
  const attempts: Counter<"workflow" | "outcome"> = new prom.Counter({
    name: "smithers_task_attempts_total",
    help: "Task attempts ended in this process, by workflow and outcome (finished, failed, cancelled, abandoned)",
    labelNames: ["workflow", "outcome"],
    ...on,
  });
  const duration: Histogram<"workflow" | "outcome"> = new prom.Histogram({
    name: "smithers_task_attempt_duration_seconds",
    help: "How long task attempts ran, by workflow and outcome",
    labelNames: ["workflow", "outcome"],
    buckets: DURATION_BUCKETS,
    ...on,
  });
  const runsStarted: Counter = new prom.Counter({ name: "smithers_runs_started_total", help: "Runs started in this process", ...on });
  const runsEnded: Counter<"status"> = new prom.Counter({
    name: "smithers_runs_ended_total",
    help: "Runs that stopped in this process, by status (finished, failed, cancelled, continued, waiting-*)",
    labelNames: ["status"],
    ...on,
  });
  const retries: Counter = new prom.Counter({ name: "smithers_retries_total", help: "Task attempts that failed and were scheduled again", ...on });
  const tokens: Counter<"model" | "type"> = new prom.Counter({
    name: "smithers_agent_tokens_total",
    help: "Tokens agents consumed, by model and type (input, cached_input, output); input includes cached input",
    labelNames: ["model", "type"],
    ...on,
  });
  const cost: Counter<"model"> = new prom.Counter({
    name: "smithers_agent_cost_usd_total",
    help: "What agents cost in US dollars, by model, where the agent reported or the run priced it",
    labelNames: ["model"],
    ...on,
  });
  const runs: Gauge<"status"> = new prom.Gauge({
    name: "smithers_runs",
    help: "Runs in the database not ended, by status (running, paused, waiting-*, queued)",
    labelNames: ["status"],
    ...on,
  });
  const queueDepth: Gauge = new prom.Gauge({ name: "smithers_queue_depth", help: "Runs queued and not yet claimed by a worker", ...on });
  const keyGauge = (name: string, help: string): Gauge<"key"> => new prom.Gauge({ name, help, labelNames: ["key"], ...on });
  const limitGauges = {
    slotsInUse: keyGauge("smithers_limit_slots_in_use", "Concurrency slots held by running tasks, by concurrencyKey, across every process of the database"),
    slotsWaiting: keyGauge("smithers_limit_slots_waiting", "Tasks waiting for a concurrency slot (waiting-slot), by concurrencyKey"),
    slotLimit: keyGauge("smithers_limit_concurrency", "The concurrency last declared for each key"),
    requests: keyGauge("smithers_limit_requests_last_minute", "Task starts under each rate-limited key in the last minute"),
    tokens: keyGauge("smithers_limit_tokens_last_minute", "Agent tokens counted under each rate-limited key in the last minute"),
  };

  const pending = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    // A sample whose row cannot be read is dropped: metrics observe a run, they never fail it.
    const p = work.catch(() => undefined).finally(() => pending.delete(p));
    pending.add(p);
  };

  const attemptEnded = async (event: SmithersEvent & { nodeId: string; iteration: number; attempt: number }, outcome: Outcome) => {
    const row = await metricsDb.readAttemptUsage(db, event);
    const workflow = row?.workflowName ?? "";
    attempts.inc({ workflow, outcome });
    if ("durationMs" in event && typeof event.durationMs === "number") duration.observe({ workflow, outcome }, event.durationMs / 1000);
    if (!row) return;
    const model = row.agentModel ?? "";
    if (row.inputTokens) tokens.inc({ model, type: "input" }, row.inputTokens);
    if (row.cachedInputTokens) tokens.inc({ model, type: "cached_input" }, row.cachedInputTokens);
    if (row.outputTokens) tokens.inc({ model, type: "output" }, row.outputTokens);
    if (row.costUsd) cost.inc({ model }, row.costUsd);
  };

  return {
    observe(event) {
      const outcome = OUTCOME_OF[event.type];
      if (outcome && "attempt" in event) {
        track(attemptEnded(event, outcome));
        return;
      }
      switch (event.type) {
        case "RunStarted":
          runsStarted.inc();
          return;
        case "RunFinished":
        case "RunFailed":
        case "RunCancelled":
        case "RunWaiting":
        case "RunContinuedAsNew":
          runsEnded.inc({ status: event.status });
          return;
        case "NodeRetrying":
          retries.inc();
          return;
        default:
          return;
      }
    },
    async scrape() {
      await Promise.all([...pending]);
      const snapshot = await metricsDb.readMetricsSnapshot(db, LIVE_STATUSES);
      // Every status is written, 0 when none: a query over a status that empties sees 0, not a gap.
      for (const status of LIVE_STATUSES) runs.set({ status }, snapshot.runsByStatus.get(status) ?? 0);
      runs.set({ status: "queued" }, snapshot.queueDepth);
      queueDepth.set(snapshot.queueDepth);
      // The keys now, not the keys ever seen: a key no longer declared or used drops out.
      for (const gauge of Object.values(limitGauges)) gauge.reset();
      for (const u of await db.read("readLimitUse", (q) => limits.readUse(q, Date.now()))) {
        limitGauges.slotsInUse.set({ key: u.key }, u.held);
        limitGauges.slotsWaiting.set({ key: u.key }, u.waiting);
        if (u.concurrency !== null) limitGauges.slotLimit.set({ key: u.key }, u.concurrency);
        if (u.perMinute !== null) limitGauges.requests.set({ key: u.key }, u.requestsLastMinute);
        if (u.tokensPerMinute !== null) limitGauges.tokens.set({ key: u.key }, u.tokensLastMinute);
      }
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export type MetricsListener = { url: string; port: number; stop(): Promise<void> };

/**
 * Serves `GET /metrics` alone on `host:port` (port 0: any free one), for processes that run work
 * without the HTTP API (`worker`, `supervise --watch`). Loopback only: it has no token, so it is
 * for a Prometheus on the same host (or a sidecar) to scrape.
 */
export function listenMetrics(metrics: SmithersMetrics, o: { port: number; host?: string }): MetricsListener {
  const host = o.host ?? "127.0.0.1";
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      hostname: host,
      port: o.port,
      fetch: async (req) => {
        if (new URL(req.url).pathname !== "/metrics" || req.method !== "GET")
          return new Response("Not found: only GET /metrics is served here\n", { status: 404 });
        try {
          const { contentType, body } = await metrics.scrape();
          return new Response(body, { headers: { "Content-Type": contentType } });
        } catch (error) {
          return new Response(`Cannot read the metrics: ${(error as Error)?.message ?? String(error)}\n`, { status: 503 });
        }
      },
    });
  } catch (cause) {
    if ((cause as { code?: string })?.code === "EADDRINUSE" || /port \d+ in use/i.test((cause as Error)?.message ?? "")) {
      throw new SmithersError(
        "PORT_IN_USE",
        `Port ${o.port} on ${host} is in use: stop what listens there, or pass --metrics-port another (0 picks a free one)`,
        {
          port: o.port,
          host,
          cause,
        },
      );
    }
    throw cause;
  }
  const port = server.port ?? o.port;
  return { url: `http://${host}:${port}/metrics`, port, stop: () => server.stop(true) };
}

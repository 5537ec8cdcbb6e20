/** `--metrics-port N` of `worker` and `supervise --watch`: their metrics on a loopback port of their own. */
import type { SmithersDb } from "../db/index.ts";
import { createMetrics, listenMetrics, type SmithersMetrics } from "../engine/telemetry/index.ts";
import type { Logger } from "./log.ts";
import { nonNegativeNumber, usageError } from "./shared.ts";

export const metricsPortFlag = (text: string | undefined): number | undefined => {
  const port = nonNegativeNumber(text, "--metrics-port", true);
  if (port !== undefined && port > 65_535) throw usageError(`--metrics-port must be a port number, 0 to 65535 (0: any free one), got ${port}`);
  return port;
};

/** Makes the process's metrics (loading prom-client) and serves them on 127.0.0.1:`port`; says where. */
export async function startMetrics(db: SmithersDb, port: number, log: Logger, command: string): Promise<SmithersMetrics & { stop(): Promise<void> }> {
  const metrics = await createMetrics(db);
  const listener = listenMetrics(metrics, { port });
  log.out("info", `smithers ${command}: metrics on ${listener.url}`, { metricsUrl: listener.url });
  return { observe: metrics.observe, scrape: metrics.scrape, stop: listener.stop };
}

/** Observers of the engine's events: Prometheus metrics (prom-client, imported when metrics are made). */
export { createMetrics, listenMetrics, type MetricsListener, type MetricsScrape, type SmithersMetrics } from "./metrics.ts";

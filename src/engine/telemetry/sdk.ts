/**
 * The OpenTelemetry SDK a traced command registers: a batch span processor and an OTLP/HTTP
 * exporter (protobuf or JSON). Imported only when an OTLP endpoint is set (index.ts), so an
 * untraced process loads none of it.
 *
 * A collector that is down, refusing or slow never holds a run: spans are batched off the run's
 * path, each export gives up after EXPORT_TIMEOUT_MS, failures are reported once, and the flush at
 * exit is cut at FLUSH_BOUND_MS.
 */
import { trace } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import type { TracingConfig } from "./config.ts";

/** How long one export may take before its spans are dropped. */
export const EXPORT_TIMEOUT_MS = 2_000;
/** The most a process exit waits for the last spans to leave. */
export const FLUSH_BOUND_MS = 2_000;

export type Tracing = {
  /** Sends what is buffered (at most FLUSH_BOUND_MS) and unregisters the provider. */
  shutdown(): Promise<void>;
};

/**
 * Every span of a run shares a trace id derived from the run id, under a parent that stands for
 * the run (trace-ids.ts); a parent-based sampler would follow that parent's flag and sample
 * everything, so each sampler is applied by trace id instead, which keeps a run's spans all in or
 * all out across processes.
 */
function samplerOf(config: TracingConfig): Sampler {
  switch (config.sampler) {
    case "always_off":
    case "parentbased_always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
    case "parentbased_traceidratio":
      return new TraceIdRatioBasedSampler(config.ratio);
    default:
      return new AlwaysOnSampler();
  }
}

/** Passes batches on; the first failure prints one line, later ones drop their spans silently. */
class WarnOnceExporter implements SpanExporter {
  private warned = false;
  constructor(
    private readonly inner: SpanExporter,
    private readonly url: string,
    private readonly warn: (line: string) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && !this.warned) {
        this.warned = true;
        const why = result.error?.message ?? "export failed";
        this.warn(`smithers: traces: could not send spans to ${this.url} (${why}); spans are dropped while it fails (shown once)`);
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

const bounded = (work: Promise<unknown>, ms: number): Promise<void> =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref?.();
    work.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });

/**
 * Registers a global tracer provider exporting to `config.url`.
 * @example
 * const tracing = startSdk(config, console.error);
 * await tracing.shutdown();
 */
export function startSdk(config: TracingConfig, warn: (line: string) => void): Tracing {
  const options = { url: config.url, headers: config.headers, timeoutMillis: EXPORT_TIMEOUT_MS };
  const exporter = config.protocol === "http/json" ? new JsonExporter(options) : new ProtoExporter(options);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ ...config.resourceAttributes, "service.name": config.serviceName }),
    sampler: samplerOf(config),
    spanProcessors: [
      new BatchSpanProcessor(new WarnOnceExporter(exporter, config.url, warn), {
        scheduledDelayMillis: 1_000,
        exportTimeoutMillis: EXPORT_TIMEOUT_MS,
        maxQueueSize: 4_096,
        maxExportBatchSize: 512,
      }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    shutdown: async () => {
      await bounded(provider.shutdown(), FLUSH_BOUND_MS);
      trace.disable();
    },
  };
}

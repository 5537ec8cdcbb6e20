/**
 * The OTEL_* variables a traced command honours, read and checked without loading anything: with
 * no endpoint set, tracing is off and no OpenTelemetry package is imported. Problems are returned
 * as sentences (what was given, what was expected) for one warning at start; the command then runs
 * untraced.
 */

export const OTLP_PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export const TRACE_SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export type TracingConfig = {
  /** The full traces URL (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: TraceSampler;
  /** traceidratio's ratio, 0..1. */
  ratio: number;
};

export type TracingSetting = { off: true } | { off: false; config: TracingConfig } | { off: true; problems: string[] };

type Env = Record<string, string | undefined>;

/** `k=v,k2=v2` with percent-encoded values (the OTEL list format); undefined when an entry has no `=` or an empty key. */
function parseList(text: string | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  if (!text?.trim()) return out;
  for (const entry of text.split(",")) {
    if (!entry.trim()) continue;
    const eq = entry.indexOf("=");
    const key = eq === -1 ? "" : entry.slice(0, eq).trim();
    if (!key) return undefined;
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return out;
}

function checkUrl(name: string, text: string, problems: string[]): URL | undefined {
  try {
    const url = new URL(text);
    if (url.protocol === "http:" || url.protocol === "https:") return url;
  } catch {
    // reported below
  }
  problems.push(`${name}=${JSON.stringify(text)} is not an http:// or https:// URL`);
  return undefined;
}

/**
 * Reads the tracing settings from the environment.
 * @example
 * const setting = tracingFromEnv(process.env);
 * if (!setting.off) console.log(setting.config.url);
 */
export function tracingFromEnv(env: Env): TracingSetting {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!traces && !base) return { off: true };
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true" || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return { off: true };
  const problems: string[] = [];
  // The signal-specific endpoint is used as given; the general one gets the traces path appended.
  const url = traces ? checkUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces, problems) : checkUrl("OTEL_EXPORTER_OTLP_ENDPOINT", base!, problems);
  const fullUrl = url && !traces ? `${url.href.replace(/\/$/, "")}/v1/traces` : url?.href;
  const protocolName = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = (env[protocolName]?.trim() || "http/protobuf") as OtlpProtocol;
  if (!OTLP_PROTOCOLS.includes(protocol)) problems.push(`${protocolName}=${JSON.stringify(protocol)} is not one of ${OTLP_PROTOCOLS.join(", ")}`);
  const headersName = env.OTEL_EXPORTER_OTLP_TRACES_HEADERS?.trim() ? "OTEL_EXPORTER_OTLP_TRACES_HEADERS" : "OTEL_EXPORTER_OTLP_HEADERS";
  const headers = parseList(env[headersName]);
  if (!headers) problems.push(`${headersName} must be a comma-separated list of key=value (values percent-encoded)`);
  const resourceAttributes = parseList(env.OTEL_RESOURCE_ATTRIBUTES);
  if (!resourceAttributes) problems.push("OTEL_RESOURCE_ATTRIBUTES must be a comma-separated list of key=value (values percent-encoded)");
  const sampler = (env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on") as TraceSampler;
  if (!TRACE_SAMPLERS.includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER=${JSON.stringify(sampler)} is not one of ${TRACE_SAMPLERS.join(", ")}`);
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = arg ? Number(arg) : 1;
  if (sampler.endsWith("traceidratio") && !(ratio >= 0 && ratio <= 1))
    problems.push(`OTEL_TRACES_SAMPLER_ARG=${JSON.stringify(arg)} is not a ratio between 0 and 1`);
  if (problems.length > 0 || !fullUrl || !headers || !resourceAttributes) return { off: true, problems };
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceAttributes["service.name"] || "smithers";
  return { off: false, config: { url: fullUrl, protocol, headers, serviceName, resourceAttributes, sampler, ratio } };
}

/**
 * The log lines of the long-running commands (`up`, `worker`, `serve`, `supervise`): as text, the
 * lines they always printed; with `--log-format json` (or SMITHERS_LOG_FORMAT=json), one JSON object
 * per line with `time`, `level`, `msg` and, when the line is about one, `runId`, `nodeId`,
 * `iteration`, `attempt`, the error `code`, and `traceId`/`spanId` while tracing is on.
 *
 * Each line keeps its stream: the caller says stdout (`out`) or stderr (`err`), in both formats.
 */
import type { SmithersEvent } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { formatEvent } from "./progress.ts";
import type { Io } from "./shared.ts";

export type LogFormat = "text" | "json";
export type LogLevel = "debug" | "info" | "warn" | "error";
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** What a line is about; every field is optional and left out of the JSON object when absent. */
export type LogFields = {
  runId?: string;
  nodeId?: string;
  iteration?: number;
  attempt?: number;
  code?: string;
  /** The engine event the line reports (NodeStarted, NodeFailed …). */
  event?: string;
  [key: string]: unknown;
};

/** The active trace and span, for logs and traces to join. */
export type TraceIds = { traceId: string; spanId: string };

let traceIdsOf: (about: LogFields) => TraceIds | undefined = () => undefined;

/**
 * Where log lines get their trace and span ids. It is handed what the line is about (runId, nodeId,
 * iteration, attempt …): telemetry builds its spans from the engine's events rather than running
 * the engine inside them, so the span of a line is found by those ids, the run's span for a line
 * about a run, the attempt's for one about an attempt. Whoever starts tracing in a command passes it
 * (e.g. `setTraceIdsProvider((about) => telemetry.spanIdsOf(about))`); a provider may also read the
 * active context (with @opentelemetry/api, `trace.getActiveSpan()?.spanContext()`). Until then, and
 * with tracing off, it returns nothing and no line carries them.
 */
export function setTraceIdsProvider(provider: (about: LogFields) => TraceIds | undefined): void {
  traceIdsOf = provider;
}

/** --log-format, else SMITHERS_LOG_FORMAT, else text; anything else is a USAGE error naming the values. */
export function logFormatOption(flag: string | undefined, env: Record<string, string | undefined> = process.env): LogFormat {
  const [value, from] = flag !== undefined ? [flag, "--log-format"] : [env.SMITHERS_LOG_FORMAT || undefined, "SMITHERS_LOG_FORMAT"];
  if (value === undefined) return "text";
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new SmithersError("USAGE", `${from} must be ${LOG_FORMATS.join(" or ")}, got "${value}"`);
}

/** The commands that take --log-format. */
export const LOGGING_COMMANDS = new Set(["up", "worker", "serve", "supervise"]);

/**
 * Whether a command line asks for JSON lines, read without failing (for the error that ends a
 * command before its logger exists): a logging command with --log-format json, or without the flag
 * and SMITHERS_LOG_FORMAT=json.
 */
export function wantsJsonLog(command: string | undefined, args: string[], env: Record<string, string | undefined> = process.env): boolean {
  if (command === undefined || !LOGGING_COMMANDS.has(command)) return false;
  const at = args.findIndex((a) => a === "--log-format" || a.startsWith("--log-format="));
  if (at === -1) return env.SMITHERS_LOG_FORMAT === "json";
  return (args[at]!.includes("=") ? args[at]!.slice("--log-format=".length) : args[at + 1]) === "json";
}

export type Logger = {
  format: LogFormat;
  /** A line on stdout. `text` replaces `msg` in the text format (the line as it always read, with its prefixes). */
  out: (level: LogLevel, msg: string, fields?: LogFields, text?: string) => void;
  /** A line on stderr, the same way. */
  err: (level: LogLevel, msg: string, fields?: LogFields, text?: string) => void;
  /** An engine event as a progress line on stdout (nothing for events that have none); `prefixRunId`: text lines start with the run id's first 8 characters. */
  event: (e: SmithersEvent, prefixRunId?: boolean) => void;
};

/** The JSON line: time, level, msg, then the fields that are set, then the trace ids when there are any. */
export function jsonLine(level: LogLevel, msg: string, fields: LogFields = {}, now = new Date()): string {
  const record: Record<string, unknown> = { time: now.toISOString(), level, msg };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) record[key] = value;
  const ids = traceIdsOf(fields);
  if (ids) Object.assign(record, { traceId: ids.traceId, spanId: ids.spanId });
  return JSON.stringify(record);
}

const EVENT_LEVEL: Partial<Record<SmithersEvent["type"], LogLevel>> = {
  NodeFailed: "error",
  NodeRetrying: "warn",
  AgentFallback: "warn",
  NodeCancelled: "warn",
  NodeAbandoned: "warn",
  SignalRejected: "warn",
  WaitTimedOut: "warn",
  NodeOutput: "debug",
};

/** The fields of an event's line: its run, node, iteration and attempt, and a failure's code. */
export function eventFields(e: SmithersEvent): LogFields {
  const f: LogFields = { event: e.type, runId: e.runId };
  if ("nodeId" in e && typeof e.nodeId === "string") f.nodeId = e.nodeId;
  if ("iteration" in e && typeof e.iteration === "number") f.iteration = e.iteration;
  if ("attempt" in e && typeof e.attempt === "number") f.attempt = e.attempt;
  if ("error" in e && e.error && typeof e.error === "object" && typeof (e.error as { code?: unknown }).code === "string")
    f.code = (e.error as { code: string }).code;
  return f;
}

export function createLogger(io: Io, format: LogFormat): Logger {
  const write = (to: (line: string) => void) => (level: LogLevel, msg: string, fields?: LogFields, text?: string) =>
    to(format === "json" ? jsonLine(level, msg, fields) : (text ?? msg));
  const out = write(io.out);
  return {
    format,
    out,
    err: write(io.err),
    event: (e, prefixRunId = false) => {
      const line = formatEvent(e);
      if (line === null) return;
      // The text line's padding (aligned columns) is dropped from the message.
      out(EVENT_LEVEL[e.type] ?? "info", line.replace(/^(\S+) +/, "$1 "), eventFields(e), prefixRunId ? `${e.runId.slice(0, 8)} ${line}` : line);
    },
  };
}

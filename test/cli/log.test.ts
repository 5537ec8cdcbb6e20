/** The logger of the long-running commands: text as it was, JSON lines with their fields, the trace-ids hook. */
import { afterEach, expect, test } from "bun:test";
import type { SmithersEvent } from "../../src/engine/index.ts";
import { createLogger, logFormatOption, setTraceIdsProvider, wantsJsonLog } from "../../src/cli/log.ts";

function capture(format: "text" | "json") {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, log: createLogger({ out: (l) => out.push(l), err: (l) => err.push(l) }, format) };
}

const failed = {
  type: "NodeFailed",
  runId: "run-12345678",
  nodeId: "c",
  iteration: 2,
  attempt: 3,
  durationMs: 5,
  error: { code: "TASK_FAILED", message: "boom" },
  timestampMs: 0,
} as unknown as SmithersEvent;

afterEach(() => setTraceIdsProvider(() => undefined));

test("text: the line as the commands always printed it, with the run-id prefix when asked, on the stream chosen", () => {
  const { out, err, log } = capture("text");
  log.event(failed, true);
  log.err("warn", "careful", { runId: "r" }, "smithers serve: warning: careful");
  expect(out).toEqual(["run-1234 fail    c iter=2 attempt=3 5ms TASK_FAILED: boom"]);
  expect(err).toEqual(["smithers serve: warning: careful"]);
});

test("json: one object per line with time, level, msg and the event's run, node, iteration, attempt and code", () => {
  const { out, err, log } = capture("json");
  log.event(failed, true);
  log.err("warn", "careful", { runId: undefined }, "smithers serve: warning: careful");
  const line = JSON.parse(out[0]!);
  expect(line).toEqual({
    time: expect.any(String),
    level: "error",
    msg: "fail c iter=2 attempt=3 5ms TASK_FAILED: boom",
    event: "NodeFailed",
    runId: "run-12345678",
    nodeId: "c",
    iteration: 2,
    attempt: 3,
    code: "TASK_FAILED",
  });
  expect(new Date(line.time).toISOString()).toBe(line.time);
  expect(Object.keys(JSON.parse(err[0]!))).toEqual(["time", "level", "msg"]);
});

test("the trace-ids provider is asked with what the line is about and adds traceId and spanId while it answers", () => {
  const { out, log } = capture("json");
  const asked: unknown[] = [];
  setTraceIdsProvider((about) => {
    asked.push(about);
    return { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" };
  });
  log.out("info", "with ids", { runId: "r1", nodeId: "a", attempt: 1 });
  expect(asked).toEqual([{ runId: "r1", nodeId: "a", attempt: 1 }]);
  setTraceIdsProvider(() => undefined);
  log.out("info", "without");
  expect(out.map((l) => [JSON.parse(l).traceId, JSON.parse(l).spanId])).toEqual([
    ["4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"],
    [undefined, undefined],
  ]);
});

test("the format: the flag, else SMITHERS_LOG_FORMAT, else text; another value is USAGE naming both", () => {
  expect(logFormatOption(undefined, {})).toBe("text");
  expect(logFormatOption(undefined, { SMITHERS_LOG_FORMAT: "json" })).toBe("json");
  expect(logFormatOption("text", { SMITHERS_LOG_FORMAT: "json" })).toBe("text");
  expect(() => logFormatOption("xml", {})).toThrow('--log-format must be text or json, got "xml"');
  expect(() => logFormatOption(undefined, { SMITHERS_LOG_FORMAT: "yaml" })).toThrow('SMITHERS_LOG_FORMAT must be text or json, got "yaml"');
  expect(wantsJsonLog("worker", ["--log-format=json"], {})).toBe(true);
  expect(wantsJsonLog("worker", ["--log-format", "text"], { SMITHERS_LOG_FORMAT: "json" })).toBe(false);
  expect(wantsJsonLog("ps", [], { SMITHERS_LOG_FORMAT: "json" })).toBe(false);
});

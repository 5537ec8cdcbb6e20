/** `smithers up` exporting traces over OTLP as a real process: one trace across processes, and a collector that fails never holds a run or its exit. */
import { afterEach, describe, expect, test } from "bun:test";
import { traceIdOf } from "../../src/engine/index.ts";
import { query, tempDbPath } from "../helpers.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { cli, root, smithersAsync } from "./cli-helpers.ts";

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.stop();
});

const traceLines = (stderr: string) => stderr.split("\n").filter((l) => l.includes("traces"));

async function timedUp(dbPath: string, env: Record<string, string>) {
  const started = performance.now();
  const result = await smithersAsync(["up", "examples/hello.tsx", "--db", dbPath, "--input", '{"name":"Ada"}'], env);
  return { ...result, ms: performance.now() - started };
}

/** A loopback port nothing listens on. */
function closedPort(): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const { port } = server;
  void server.stop(true);
  return port as number;
}

describe("smithers up with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  test("a run that waits for approval and is resumed by another process stays one trace: both processes' run spans share the trace id, the first ends waiting with its approval wait pending, the second is marked resumed", async () => {
    const r = startOtlpReceiver();
    receivers.push(r);
    const dbPath = tempDbPath();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_SERVICE_NAME: "deploys" };
    const up = ["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "gate-t"];
    const first = await smithersAsync(up, env);
    expect(first.code).toBe(3);
    expect((await smithersAsync(["approve", "gate-t", "--yes", "--db", dbPath], env)).code).toBe(0);
    const second = await smithersAsync([...up, "--resume"], env);
    expect(second.code).toBe(0);
    expect(traceLines(first.stderr + second.stderr)).toEqual([]);

    const runs = r.spans.filter((s) => s.name === "smithers.run gated-deploy");
    expect(runs.map((s) => [s.attributes["smithers.resumed"], s.attributes["smithers.run.status"], s.traceId, s.resource["service.name"]])).toEqual([
      [false, "waiting-approval", traceIdOf("gate-t"), "deploys"],
      [true, "finished", traceIdOf("gate-t"), "deploys"],
    ]);
    const [wait] = r.spans.filter((s) => s.name === "smithers.wait approval");
    expect(wait!.parentSpanId).toBe(runs[0]!.spanId);
    expect(wait!.attributes).toMatchObject({ "smithers.node_id": "ship-it", "smithers.wait.pending": true });
    expect(r.spans.find((s) => s.name === "smithers.attempt build")!.parentSpanId).toBe(runs[0]!.spanId);
    expect(r.spans.find((s) => s.name === "smithers.attempt deploy")!.parentSpanId).toBe(runs[1]!.spanId);
  });

  test("supervise resuming an approved run continues the run's trace", async () => {
    const r = startOtlpReceiver();
    receivers.push(r);
    const dbPath = tempDbPath();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    expect((await smithersAsync(["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "gate-s"], env)).code).toBe(3);
    expect((await smithersAsync(["approve", "gate-s", "--yes", "--db", dbPath])).code).toBe(0);
    const supervised = await smithersAsync(["supervise", "--db", dbPath], env);
    expect(supervised.stdout).toContain("resumed gate-s finished");
    const runs = r.spans.filter((s) => s.name === "smithers.run gated-deploy");
    expect(runs.map((s) => [s.attributes["smithers.resumed"], s.attributes["smithers.run.status"], s.traceId])).toEqual([
      [false, "waiting-approval", traceIdOf("gate-s")],
      [true, "finished", traceIdOf("gate-s")],
    ]);
  });

  test("a collector that is not listening costs the run nothing and the exit at most the bounded flush, with one warning line", async () => {
    const baseline = await timedUp(tempDbPath(), {});
    const dead = await timedUp(tempDbPath(), { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closedPort()}` });
    expect(dead.code).toBe(0);
    expect(dead.stdout).toContain("finished");
    expect(dead.ms).toBeLessThan(baseline.ms + 2_500);
    expect(traceLines(dead.stderr)).toHaveLength(1);
    expect(traceLines(dead.stderr)[0]).toContain("could not send spans");
  });

  test("a collector that answers 500 gets one warning line; one that never answers holds the exit at most ~2 s", async () => {
    const broken = startOtlpReceiver("error");
    const slow = startOtlpReceiver("slow", 30_000);
    receivers.push(broken, slow);
    const baseline = await timedUp(tempDbPath(), {});
    const erroring = await timedUp(tempDbPath(), { OTEL_EXPORTER_OTLP_ENDPOINT: broken.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
    expect(erroring.code).toBe(0);
    expect(broken.contentTypes.length).toBeGreaterThan(0);
    expect(traceLines(erroring.stderr)).toHaveLength(1);
    const stalled = await timedUp(tempDbPath(), { OTEL_EXPORTER_OTLP_ENDPOINT: slow.url });
    expect(stalled.code).toBe(0);
    expect(slow.contentTypes.length).toBeGreaterThan(0);
    expect(stalled.ms).toBeLessThan(baseline.ms + 3_000);
    expect(traceLines(stalled.stderr).length).toBeLessThanOrEqual(1);
  });

  test("an unknown protocol is reported once with the expected values and the run goes on untraced", async () => {
    const result = await timedUp(tempDbPath(), { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("finished");
    expect(traceLines(result.stderr)).toEqual(['smithers: traces are off: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not one of http/protobuf, http/json']);
  });

  test("with no endpoint set, `smithers up` loads no OpenTelemetry module", async () => {
    const probe = (env: Record<string, string | undefined>) => {
      const script = `const { main } = await import(${JSON.stringify(cli)});
const code = await main(["up", "examples/hello.tsx", "--db", ${JSON.stringify(tempDbPath())}], { out: () => {}, err: () => {} });
console.log(code, Object.keys(require.cache).filter((k) => k.includes("@opentelemetry")).length);`;
      const proc = Bun.spawnSync([process.execPath, "-e", script], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
      return proc.stdout.toString().trim();
    };
    expect(probe({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined })).toBe("0 0");
  });
});

/** A long-running `smithers` process whose stdout is read as it comes, until a line matches. */
function startCollecting(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let out = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stdout) out += decoder.decode(chunk);
  })();
  const until = async (pattern: RegExp): Promise<RegExpExecArray> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const m = pattern.exec(out);
      if (m) return m;
      if (Date.now() > deadline) throw new Error(`never printed ${pattern}: ${out}`);
      await Bun.sleep(20);
    }
  };
  const stop = async () => {
    proc.kill("SIGINT");
    const code = await proc.exited;
    await reading;
    return { code, stdout: out, stderr: await new Response(proc.stderr).text() };
  };
  return { until, stop };
}

type JsonLine = { msg: string; event?: string; runId?: string; nodeId?: string; traceId?: string; spanId?: string };
const jsonLines = (text: string): JsonLine[] =>
  text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as JsonLine);

describe("worker and serve with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  test("a worker exports the spans of a queued run it executes, in the run's trace; its JSON log lines carry the trace id and the span they are about", async () => {
    const r = startOtlpReceiver();
    receivers.push(r);
    const dbPath = tempDbPath();
    expect((await smithersAsync(["up", "test/fixtures/metrics/metered.tsx", "--detach", "--run-id", "wk-1", "--db", dbPath])).code).toBe(0);
    const worker = startCollecting(["worker", "--db", dbPath, "--log-format", "json"], { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_SERVICE_NAME: "workers" });
    await worker.until(/"msg":"[^"]*wk-1[^"]*finished/);
    const { code, stdout, stderr } = await worker.stop();
    expect(code).toBe(0);
    expect(stderr).not.toContain("traces");

    const [run] = r.spans.filter((s) => s.name === "smithers.run metered");
    expect([run!.traceId, run!.attributes["smithers.run.status"], run!.resource["service.name"]]).toEqual([traceIdOf("wk-1"), "finished", "workers"]);
    const attempts = r.spans.filter((s) => s.name.startsWith("smithers.attempt "));
    expect(attempts.map((s) => [s.name, s.attributes["smithers.attempt"], s.parentSpanId])).toEqual([
      ["smithers.attempt note", 1, run!.spanId],
      ["smithers.attempt flaky", 1, run!.spanId],
      ["smithers.attempt flaky", 2, run!.spanId],
    ]);
    const chat = r.spans.find((s) => s.name === "chat metered-1")!;
    expect(chat.parentSpanId).toBe(attempts[0]!.spanId);
    expect(chat.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20, "smithers.cost_usd": 0.01 });

    // Logs and traces join: a line about an attempt that ended names that attempt's span; one about the run as it starts, the run's span.
    const lines = jsonLines(stdout).filter((l) => l.runId === "wk-1" && l.event !== undefined);
    const failed = lines.find((l) => l.event === "NodeFailed")!;
    expect([failed.nodeId, failed.traceId, failed.spanId]).toEqual(["flaky", run!.traceId, attempts[1]!.spanId]);
    const noteFinished = lines.find((l) => l.event === "NodeFinished" && l.nodeId === "note")!;
    expect([noteFinished.traceId, noteFinished.spanId]).toEqual([run!.traceId, attempts[0]!.spanId]);
    const noteStarted = lines.find((l) => l.event === "NodeStarted" && l.nodeId === "note")!;
    expect([noteStarted.traceId, noteStarted.spanId]).toEqual([run!.traceId, run!.spanId]);
    const ended = jsonLines(stdout).find((l) => l.runId === "wk-1" && l.event === undefined && l.msg.includes("finished"))!;
    expect([ended.traceId, ended.spanId]).toEqual([run!.traceId, run!.spanId]);
  });

  test("serve exports the spans of a run started by POST /runs, and flushes them when stopped", async () => {
    const r = startOtlpReceiver();
    receivers.push(r);
    const token = "a-token-of-enough-length";
    const serve = startCollecting(["serve", "--port", "0", "--db", tempDbPath(), "--workflows", "test/fixtures/metrics", "--token", token], {
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    const url = (await serve.until(/listening on (http:\/\/\S+)/))[1]!;
    const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    expect((await fetch(`${url}/runs`, { method: "POST", headers: auth, body: JSON.stringify({ workflow: "metered", runId: "sv-1" }) })).status).toBe(202);
    const deadline = Date.now() + 15_000;
    while (((await (await fetch(`${url}/runs/sv-1`, { headers: auth })).json()) as { status?: string }).status !== "finished") {
      if (Date.now() > deadline) throw new Error("run sv-1 did not finish");
      await Bun.sleep(50);
    }
    expect((await serve.stop()).code).toBe(0);
    const [run] = r.spans.filter((s) => s.name === "smithers.run metered");
    expect([run!.traceId, run!.attributes["smithers.run_id"], run!.attributes["smithers.run.status"]]).toEqual([traceIdOf("sv-1"), "sv-1", "finished"]);
    const failedAttempt = r.spans.find((s) => s.name === "smithers.attempt flaky" && s.attributes["smithers.attempt"] === 1)!;
    expect([failedAttempt.parentSpanId, failedAttempt.status]).toEqual([run!.spanId, 2]);
  });

  test("a POST /runs with a traceparent header puts the run in the caller's trace, under the caller's span; a malformed one is ignored", async () => {
    const r = startOtlpReceiver();
    receivers.push(r);
    const token = "a-token-of-enough-length";
    const db = tempDbPath();
    const serve = startCollecting(["serve", "--port", "0", "--db", db, "--workflows", "test/fixtures/metrics", "--token", token], {
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    const url = (await serve.until(/listening on (http:\/\/\S+)/))[1]!;
    const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const start = (runId: string, traceparent: string) =>
      fetch(`${url}/runs`, { method: "POST", headers: { ...auth, traceparent }, body: JSON.stringify({ workflow: "metered", runId }) });
    expect((await start("tp-1", `00-${callerTrace}-${callerSpan}-01`)).status).toBe(202);
    expect((await start("tp-2", "00-not-a-trace-01")).status).toBe(202);
    const deadline = Date.now() + 15_000;
    for (const id of ["tp-1", "tp-2"]) {
      while (((await (await fetch(`${url}/runs/${id}`, { headers: auth })).json()) as { status?: string }).status !== "finished") {
        if (Date.now() > deadline) throw new Error(`run ${id} did not finish`);
        await Bun.sleep(50);
      }
    }
    expect((await serve.stop()).code).toBe(0);
    const runSpan = (id: string) => r.spans.find((s) => s.name === "smithers.run metered" && s.attributes["smithers.run_id"] === id)!;
    expect([runSpan("tp-1").traceId, runSpan("tp-1").parentSpanId]).toEqual([callerTrace, callerSpan]);
    expect(runSpan("tp-2").traceId).toBe(traceIdOf("tp-2"));
    // Stored with the run, so a later process (a resume, a worker) continues the caller's trace too.
    expect(await query<{ trace_parent: string }>(db, "SELECT trace_parent FROM _smithers_runs WHERE run_id = 'tp-1'")).toEqual([
      { trace_parent: `00-${callerTrace}-${callerSpan}-01` },
    ]);
  });
});

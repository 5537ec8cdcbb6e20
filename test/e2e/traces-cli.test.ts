/** `smithers up` exporting traces over OTLP as a real process: one trace across processes, and a collector that fails never holds a run or its exit. */
import { afterEach, describe, expect, test } from "bun:test";
import { traceIdOf } from "../../src/engine/index.ts";
import { tempDbPath } from "../helpers.ts";
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

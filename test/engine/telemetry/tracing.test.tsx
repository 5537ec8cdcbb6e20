/** @jsxImportSource smithers-workflows */
import { afterEach, describe, expect, test } from "bun:test";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";
import { approve, createSmithers, runWorkflow } from "../../../src/index.ts";
import { ClaudeCodeAgent } from "../../../src/agents/index.ts";
import { fakeCli } from "../../agents/cli/fake-cli.ts";
import { startTracingFromEnv, traceIdOf, tracerRegistered, tracingFromEnv } from "../../../src/engine/index.ts";
import { runAnchorSpanIdOf } from "../../../src/engine/telemetry/index.ts";
import subflowWorkflow from "../../fixtures/subflow.tsx";
import { query, tempDbPath } from "../../helpers.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.stop();
});

function receiver(): OtlpReceiver {
  const r = startOtlpReceiver();
  receivers.push(r);
  return r;
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traceRunIfEnabled (through startTracingFromEnv)", () => {
  test("a run with a retry exports a run span, one attempt span per attempt under it (the failed one ERROR with an exception event) and tool-call spans under their attempt, over http/json with the configured resource and headers", async () => {
    const r = receiver();
    const warnings: string[] = [];
    const tracing = await startTracingFromEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "billing-workflows",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=ops%20one",
        OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=acme",
      },
      (line) => warnings.push(line),
    );
    expect(tracing).toBeDefined();
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    let tries = 0;
    const wf = smithers(() => (
      <Workflow name="traced">
        <Sequence>
          <Task id="tools" output={outputs.out}>
            {async (t) => {
              await t.sideEffect("charge-card", () => 1);
              return { n: 1 };
            }}
          </Task>
          <Task id="flaky" output={outputs.out} retries={1} retryPolicy={{ initialDelayMs: 1, maxDelayMs: 2 }}>
            {() => {
              if (tries++ === 0) throw new Error("first try fails");
              return { n: 2 };
            }}
          </Task>
        </Sequence>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "traced-1" })).status).toBe("finished");
    await tracing!.shutdown();
    expect(tracerRegistered()).toBe(false);
    expect(warnings).toEqual([]);
    expect(r.contentTypes[0]).toContain("application/json");
    expect(r.headers[0]!.get("x-tenant")).toBe("acme");

    const [run, ...moreRuns] = byName(r.spans, "smithers.run traced");
    expect(moreRuns).toEqual([]);
    expect(run!.traceId).toBe(traceIdOf("traced-1"));
    expect(run!.parentSpanId).toBe(runAnchorSpanIdOf("traced-1"));
    expect(run!.attributes).toMatchObject({ "smithers.run_id": "traced-1", "smithers.workflow": "traced", "smithers.run.status": "finished" });
    expect(run!.resource).toMatchObject({ "service.name": "billing-workflows", "deployment.environment": "test", team: "ops one" });
    expect(run!.events.map((e) => e.name)).toEqual(["smithers.retry_scheduled"]);

    const flaky = byName(r.spans, "smithers.attempt flaky").sort((a, b) => Number(a.attributes["smithers.attempt"]) - Number(b.attributes["smithers.attempt"]));
    expect(flaky.map((s) => [s.attributes["smithers.attempt"], s.attributes["smithers.outcome"], s.status, s.parentSpanId, s.traceId])).toEqual([
      [1, "failed", 2, run!.spanId, run!.traceId],
      [2, "finished", 0, run!.spanId, run!.traceId],
    ]);
    expect(flaky[0]!.attributes).toMatchObject({ "smithers.run_id": "traced-1", "smithers.node_id": "flaky", "smithers.iteration": 0 });
    expect(flaky[0]!.events).toEqual([
      {
        name: "exception",
        attributes: expect.objectContaining({ "exception.type": "TASK_FAILED", "exception.message": 'Task "flaky" failed: first try fails' }),
      },
    ]);

    const [toolsAttempt] = byName(r.spans, "smithers.attempt tools");
    const [tool] = byName(r.spans, "execute_tool charge-card");
    expect(tool!.parentSpanId).toBe(toolsAttempt!.spanId);
    expect(tool!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "charge-card", "smithers.tool.status": "succeeded" });
  });

  test("a subflow's run is in its parent's trace, its run span a child of the parent's Subflow attempt span (http/protobuf, the default)", async () => {
    const r = receiver();
    const tracing = await startTracingFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${r.url}/v1/traces` }, () => undefined);
    const result = await runWorkflow(subflowWorkflow, { runId: "parent-1", input: { label: "x" }, dbPath: tempDbPath() });
    expect(result.status).toBe("finished");
    await tracing!.shutdown();
    expect(r.contentTypes[0]).toBe("application/x-protobuf");

    const [parentRun] = byName(r.spans, "smithers.run subflow-parent");
    const [childAttempt] = byName(r.spans, "smithers.attempt child");
    const [childRun] = byName(r.spans, "smithers.run subflow-child");
    expect(childAttempt!.parentSpanId).toBe(parentRun!.spanId);
    expect(childRun!.parentSpanId).toBe(childAttempt!.spanId);
    expect(childRun!.attributes["smithers.run_id"]).toBe("parent-1/child#0");
    expect(new Set(r.spans.map((s) => s.traceId))).toEqual(new Set([traceIdOf("parent-1")]));
    expect(byName(r.spans, "smithers.attempt fetch")[0]!.parentSpanId).toBe(childRun!.spanId);
  });

  test("a coding-agent CLI called by an attempt gets TRACEPARENT naming that attempt's span, and the call is a GenAI chat span under it with models, tokens and cost", async () => {
    const r = receiver();
    const tracing = await startTracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: r.url }, () => undefined);
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: '{"n":7}' });
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const wf = smithers(() => (
      <Workflow name="agentic">
        <Task id="ask" output={outputs.out} agent={new ClaudeCodeAgent({ env: fake.env, model: "claude-opus-asked" })}>
          Give n.
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "agentic-1" })).status).toBe("finished");
    await tracing!.shutdown();
    const [attempt] = byName(r.spans, "smithers.attempt ask");
    expect(fake.record().env.TRACEPARENT).toBe(`00-${attempt!.traceId}-${attempt!.spanId}-01`);
    const [chat, ...more] = r.spans.filter((s) => s.name.startsWith("chat"));
    expect(more).toEqual([]);
    expect(chat!.name).toBe("chat claude-opus-asked");
    expect(chat!.parentSpanId).toBe(attempt!.spanId);
    expect(chat!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "claude-opus-asked",
      "gen_ai.response.model": "claude-sonnet-4-5",
      "gen_ai.agent.name": "claude",
      "gen_ai.usage.input_tokens": 115,
      "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.cache_read.input_tokens": 100,
      "smithers.cost_usd": 0.0123,
    });
  });

  test("a library user's own SDK receives the run's spans through @opentelemetry/api", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    try {
      const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
      const wf = smithers(() => (
        <Workflow name="library">
          <Task id="only" output={outputs.out}>
            {{ n: 1 }}
          </Task>
        </Workflow>
      ));
      expect((await runWorkflow(wf, { runId: "lib-1" })).status).toBe("finished");
      const spans = exporter.getFinishedSpans();
      const run = spans.find((s) => s.name === "smithers.run library")!;
      const attempt = spans.find((s) => s.name === "smithers.attempt only")!;
      expect(run.instrumentationScope.name).toBe("smithers-workflows");
      expect(attempt.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
      expect(run.spanContext().traceId).toBe(traceIdOf("lib-1"));
    } finally {
      await provider.shutdown();
      trace.disable();
    }
  });

  test("a run started inside a library user's active span stores that span as its trace context: its run span is a child of it, and so is the run span of its resume after an approval", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const contexts = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contexts);
    trace.setGlobalTracerProvider(provider);
    try {
      const dbPath = tempDbPath();
      const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
      const wf = kit.smithers(() => (
        <kit.Workflow name="gated">
          <kit.Task id="ship" output={kit.outputs.out} needsApproval>
            {{ n: 1 }}
          </kit.Task>
        </kit.Workflow>
      ));
      const request = trace.getTracer("the-users-app").startSpan("POST /deploy");
      const first = await context.with(trace.setSpan(context.active(), request), () => runWorkflow(wf, { runId: "caller-1" }));
      request.end();
      expect(first.status).toBe("waiting-approval");
      const { traceId, spanId } = request.spanContext();
      expect(await query(dbPath, "SELECT trace_parent FROM _smithers_runs WHERE run_id = 'caller-1'")).toEqual([
        { trace_parent: `00-${traceId}-${spanId}-01` },
      ]);

      // The resume runs outside the request's context (as another process would): the stored context carries it.
      await approve(kit.smithersDb, { runId: "caller-1", nodeId: "ship" });
      expect((await runWorkflow(wf, { runId: "caller-1", resume: true })).status).toBe("finished");
      const runSpans = exporter.getFinishedSpans().filter((s) => s.name === "smithers.run gated");
      expect(runSpans.map((s) => s.attributes["smithers.resumed"])).toEqual([false, true]);
      for (const run of runSpans) {
        expect(run.spanContext().traceId).toBe(traceId);
        expect(run.parentSpanContext?.spanId).toBe(spanId);
      }
      const attempt = exporter.getFinishedSpans().find((s) => s.name === "smithers.attempt ship")!;
      expect(attempt.parentSpanContext?.spanId).toBe(runSpans[1]!.spanContext().spanId);
    } finally {
      await provider.shutdown();
      trace.disable();
      context.disable();
    }
  });

  test("a run created with no tracer registered stores no trace context; resumed under a tracer, it continues the trace derived from its run id", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="late">
        <kit.Task id="ship" output={kit.outputs.out} needsApproval>
          {{ n: 1 }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "late-1" })).status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT trace_parent FROM _smithers_runs WHERE run_id = 'late-1'")).toEqual([{ trace_parent: null }]);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    try {
      await approve(kit.smithersDb, { runId: "late-1", nodeId: "ship" });
      expect((await runWorkflow(wf, { runId: "late-1", resume: true })).status).toBe("finished");
      const run = exporter.getFinishedSpans().find((s) => s.name === "smithers.run late")!;
      expect(run.spanContext().traceId).toBe(traceIdOf("late-1"));
      expect(run.parentSpanContext?.spanId).toBe(runAnchorSpanIdOf("late-1"));
    } finally {
      await provider.shutdown();
      trace.disable();
    }
  });

  test("with no endpoint set nothing is registered and runs export nothing", async () => {
    expect(await startTracingFromEnv({}, () => undefined)).toBeUndefined();
    expect(tracerRegistered()).toBe(false);
  });
});

describe("tracingFromEnv", () => {
  test("the general endpoint gets /v1/traces; the traces endpoint is used as given; defaults are http/protobuf, parentbased_always_on, service smithers", () => {
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual({
      off: false,
      config: {
        url: "http://collector:4318/v1/traces",
        protocol: "http/protobuf",
        headers: {},
        serviceName: "smithers",
        resourceAttributes: {},
        sampler: "parentbased_always_on",
        ratio: 1,
      },
    });
    const custom = tracingFromEnv({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://x.example/otlp",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
    });
    expect(custom.off === false && [custom.config.url, custom.config.sampler, custom.config.ratio]).toEqual(["https://x.example/otlp", "traceidratio", 0.25]);
  });

  test("a bad URL, an unknown protocol, an unknown sampler and a malformed header list are each named with what was expected, and tracing is off", () => {
    expect(
      tracingFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_TRACES_SAMPLER: "sometimes",
        OTEL_EXPORTER_OTLP_HEADERS: "novalue",
      }),
    ).toEqual({
      off: true,
      problems: [
        'OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is not an http:// or https:// URL',
        'OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not one of http/protobuf, http/json',
        "OTEL_EXPORTER_OTLP_HEADERS must be a comma-separated list of key=value (values percent-encoded)",
        'OTEL_TRACES_SAMPLER="sometimes" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio',
      ],
    });
  });

  test("no endpoint, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none: off without a problem", () => {
    expect(tracingFromEnv({ OTEL_SERVICE_NAME: "x" })).toEqual({ off: true });
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toEqual({ off: true });
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toEqual({ off: true });
  });
});

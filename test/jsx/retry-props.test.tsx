/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, render, Subflow } from "../../src/index.ts";
import { errorOf } from "../helpers.ts";

const { Workflow, Task, outputs, smithers } = createSmithers({ out: z.object({ n: z.number() }) });
const child = smithers(() => (
  <Workflow name="child">
    <Task id="c" output={outputs.out}>
      {{ n: 1 }}
    </Task>
  </Workflow>
));
const spread = (props: Record<string, unknown>) => props as object;

const taskWith = (props: Record<string, unknown>) =>
  render(
    <Workflow name="w">
      <Task id="t" output={outputs.out} {...spread(props)}>
        {() => ({ n: 1 })}
      </Task>
    </Workflow>,
  ).tasks[0]!;

const subflowWith = (props: Record<string, unknown>) =>
  render(
    <Workflow name="w">
      <Subflow id="s" workflow={child} output={outputs.out} {...spread(props)} />
    </Workflow>,
  ).tasks[0]!;

describe("retryPropsOf", () => {
  test("retries, retryPolicy and maxSchemaRetries reach the plan as given; Infinity is a count", () => {
    const task = taskWith({ retries: 5, retryPolicy: { backoff: "linear", initialDelayMs: 250, maxDelayMs: 2_000 }, maxSchemaRetries: 0 });
    expect(task).toMatchObject({ retries: 5, retryPolicy: { backoff: "linear", initialDelayMs: 250, maxDelayMs: 2_000 }, maxSchemaRetries: 0 });
    expect(taskWith({ retries: Infinity }).retries).toBe(Infinity);
  });

  test("noRetry makes retries 0, and wins over retries when both are given", () => {
    expect(taskWith({ noRetry: true }).retries).toBe(0);
    expect(taskWith({ noRetry: true, retries: 5 }).retries).toBe(0);
    expect(taskWith({ noRetry: false, retries: 5 }).retries).toBe(5);
    expect(subflowWith({ noRetry: true, retries: 2 }).retries).toBe(0);
  });

  test("the plan holds its own copy of the policy, without the fields given as undefined", () => {
    const policy = { backoff: "fixed" as const, initialDelayMs: 10, maxDelayMs: undefined };
    const task = taskWith({ retryPolicy: policy });
    policy.initialDelayMs = 99;
    expect(task.retryPolicy).toEqual({ backoff: "fixed", initialDelayMs: 10 });
  });

  test("a retries count that is negative, fractional, NaN or not a number fails the render with INVALID_WORKFLOW naming retries", () => {
    for (const retries of [-1, 2.5, Number.NaN, -Infinity, "3"]) {
      const error = errorOf(() => taskWith({ retries }));
      expect(error.code).toBe("INVALID_WORKFLOW");
      expect(error.details).toMatchObject({ nodeId: "t", prop: "retries" });
      expect(error.message).toContain('<Task id="t"> retries must be a whole number >= 0 or Infinity');
    }
    expect(errorOf(() => subflowWith({ retries: -2 })).details).toMatchObject({ nodeId: "s", prop: "retries" });
  });

  test("an unknown backoff, a negative or NaN delay, a factor below 1 or an unknown field fail the render naming the field", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ backoff: "random" }, "retryPolicy.backoff"],
      [{ backoff: "Exponential" }, "retryPolicy.backoff"],
      [{ initialDelayMs: -1 }, "retryPolicy.initialDelayMs"],
      [{ initialDelayMs: Number.NaN }, "retryPolicy.initialDelayMs"],
      [{ initialDelayMs: Infinity }, "retryPolicy.initialDelayMs"],
      [{ initialDelayMs: "1s" }, "retryPolicy.initialDelayMs"],
      [{ maxDelayMs: -5 }, "retryPolicy.maxDelayMs"],
      [{ factor: 0.5 }, "retryPolicy.factor"],
      [{ backoff: "linear", factor: 3 }, "retryPolicy.factor"],
      [{ maxAttempts: 3 }, "retryPolicy.maxAttempts"],
    ];
    for (const [retryPolicy, prop] of cases) {
      const error = errorOf(() => taskWith({ retryPolicy }));
      expect([error.code, error.details?.prop]).toEqual(["INVALID_WORKFLOW", prop]);
      expect(error.message).toStartWith(`<Task id="t"> ${prop} must be`);
    }
    expect(errorOf(() => taskWith({ retryPolicy: { backoff: "random" } })).message).toContain('"fixed", "linear" or "exponential", got "random"');
    for (const retryPolicy of [null, 1000, ["exponential"]]) {
      expect(errorOf(() => taskWith({ retryPolicy })).details).toMatchObject({ prop: "retryPolicy" });
    }
    expect(errorOf(() => subflowWith({ retryPolicy: { backoff: "sometimes" } })).message).toStartWith('<Subflow id="s"> retryPolicy.backoff must be');
  });

  test("noRetry that is not a boolean, and a maxSchemaRetries that is negative, fractional or infinite, fail the render naming them", () => {
    expect(errorOf(() => taskWith({ noRetry: "yes" })).details).toMatchObject({ prop: "noRetry" });
    for (const maxSchemaRetries of [-1, 1.5, Infinity, Number.NaN]) {
      const error = errorOf(() => taskWith({ maxSchemaRetries }));
      expect([error.code, error.details?.prop]).toEqual(["INVALID_WORKFLOW", "maxSchemaRetries"]);
    }
  });

  test("maxSchemaRetries is a Task prop: a Subflow refuses it with UNSUPPORTED_PROP", () => {
    const error = errorOf(() => subflowWith({ maxSchemaRetries: 1 }));
    expect([error.code, error.details?.prop, error.details?.peerOnly]).toEqual(["UNSUPPORTED_PROP", "maxSchemaRetries", false]);
  });
});

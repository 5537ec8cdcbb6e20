/** The cases of `smithers eval --cases` and the grading of a run against one: pure, no run needed. */
import { describe, expect, test } from "bun:test";
import { grade, parseCases } from "../../src/cli/eval-cases.ts";
import { errorOf } from "../helpers.ts";

const lines = (...values: unknown[]) => values.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join("\n");
const finished = (output: unknown) => ({ status: "finished", output, error: null });

describe("parseCases", () => {
  test("each non-blank line is a case labelled by its id, else its name, else its line", () => {
    const cases = parseCases(lines({ id: "one", input: { a: 1 } }, "", { name: "two", input: {} }, { input: null, expected: { status: "failed" } }));
    expect(cases.map((c) => [c.label, c.line])).toEqual([
      ["one", 1],
      ["two", 3],
      ["line 4", 4],
    ]);
    expect(cases[2]!.expected).toEqual({ status: "failed" });
  });

  test("an expected value that is not an assertion object is the output the run must contain", () => {
    expect(parseCases(lines({ input: {}, expected: { label: "bug" } }))[0]!.expected).toEqual({ outputContains: { label: "bug" } });
    expect(parseCases(lines({ input: {}, expected: [1, 2] }))[0]!.expected).toEqual({ outputContains: [1, 2] });
  });

  test("a line that is not JSON is INVALID_EVAL_CASE naming its line", () => {
    const e = errorOf<{ code: string; message: string }>(() => parseCases(lines({ input: {} }, "{not json")));
    expect(e.code).toBe("INVALID_EVAL_CASE");
    expect(e.message).toStartWith("line 2: not JSON");
  });

  test("an unknown field, a malformed assertion or a repeated id is INVALID_EVAL_CASE naming the line", () => {
    const message = (text: string) => errorOf<{ code: string; message: string }>(() => parseCases(text));
    expect(message(lines({ input: {}, expect: {} })).message).toBe('line 1: unknown field "expect" (a case has input, expected, id, name)');
    expect(message(lines({ input: {}, expected: { status: "done" } })).message).toStartWith("line 1: expected.status must be one of running, finished");
    expect(message(lines({ input: {}, expected: { errorContains: 3 } })).message).toBe("line 1: expected.errorContains must be a string");
    expect(message(lines({ id: "x", input: {} }, { id: "x", input: {} })).message).toBe('line 2: case "x" is also on line 1');
    expect(message(lines([1, 2])).code).toBe("INVALID_EVAL_CASE");
  });

  test("a file with no case is INVALID_EVAL_CASE", () => {
    expect(errorOf<{ code: string }>(() => parseCases("\n  \n")).code).toBe("INVALID_EVAL_CASE");
  });
});

describe("grade", () => {
  test("with no assertion a finished run passes and any other status fails, naming the run's error", () => {
    expect(grade({}, finished({}))).toEqual({ pass: true, why: "" });
    expect(grade({}, { status: "failed", output: undefined, error: "TASK_FAILED: boom" })).toEqual({
      pass: false,
      why: "status failed, expected finished (TASK_FAILED: boom)",
    });
  });

  test("outputContains is a deep subset: extra keys pass, an array's expected element may match any actual one", () => {
    const output = {
      label: "bug",
      tags: [
        { k: "a", v: 1 },
        { k: "b", v: 2 },
      ],
      words: 4,
    };
    expect(grade({ outputContains: { label: "bug", tags: [{ k: "b" }] } }, finished(output)).pass).toBe(true);
    expect(grade({ outputContains: { tags: [{ k: "c" }] } }, finished(output))).toEqual({ pass: false, why: 'output.tags: no element matches {"k":"c"}' });
    expect(grade({ outputContains: { label: "feature" } }, finished(output))).toEqual({ pass: false, why: 'output.label: expected "feature", got "bug"' });
    expect(grade({ outputContains: { missing: 1 } }, finished(output))).toEqual({ pass: false, why: "output.missing: missing" });
  });

  test("output is an exact match: an extra key or element fails", () => {
    expect(grade({ output: { a: 1, b: [1, 2] } }, finished({ a: 1, b: [1, 2] })).pass).toBe(true);
    expect(grade({ output: { a: 1 } }, finished({ a: 1, b: 2 }))).toEqual({ pass: false, why: "output.b: not expected (2)" });
    expect(grade({ output: { b: [1] } }, finished({ b: [1, 2] }))).toEqual({ pass: false, why: "output.b: expected 1 element(s), got 2" });
  });

  test("errorContains asks for a failed (or refused) run whose error contains the text", () => {
    const failed = { status: "failed", output: undefined, error: "TASK_FAILED: nothing to triage" };
    expect(grade({ errorContains: "nothing to triage" }, failed).pass).toBe(true);
    expect(grade({ errorContains: "INVALID_INPUT" }, { status: "refused", output: undefined, error: "INVALID_INPUT: text is required" }).pass).toBe(true);
    expect(grade({ errorContains: "other" }, failed)).toEqual({ pass: false, why: 'error "TASK_FAILED: nothing to triage" does not contain "other"' });
    expect(grade({ errorContains: "x" }, finished({}))).toEqual({ pass: false, why: "status finished, expected failed or refused" });
  });

  test("status names the status the run must end in", () => {
    expect(grade({ status: "waiting-approval" }, { status: "waiting-approval", output: undefined, error: null }).pass).toBe(true);
    expect(grade({ status: "failed" }, finished({})).pass).toBe(false);
  });
});

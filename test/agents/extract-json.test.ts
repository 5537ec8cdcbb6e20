import { describe, expect, test } from "bun:test";
import { extractJson } from "../../src/agents/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { errorOf } from "../helpers.ts";

describe("extractJson", () => {
  test("parses a bare JSON reply, surrounding whitespace included", () => {
    expect(extractJson('  {"a": 1, "b": [true, null]}\n')).toEqual({ a: 1, b: [true, null] });
  });

  test("parses a bare JSON primitive when that is the whole reply", () => {
    expect(extractJson("42")).toBe(42);
  });

  test("takes the JSON out of a ```json fenced block surrounded by prose", () => {
    const reply = 'Sure! Here is the review:\n```json\n{"approved": false, "notes": ["typo"]}\n```\nLet me know.';
    expect(extractJson(reply)).toEqual({ approved: false, notes: ["typo"] });
  });

  test("takes the JSON out of a fenced block without a language tag", () => {
    expect(extractJson("Result:\n```\n[1, 2, 3]\n```")).toEqual([1, 2, 3]);
  });

  test("prefers the last parseable json block over earlier ones", () => {
    const reply = '```json\n{"draft": true}\n```\nCorrected:\n```json\n{"draft": false}\n```';
    expect(extractJson(reply)).toEqual({ draft: false });
  });

  test("prefers a json-tagged block over an untagged one that also parses", () => {
    const reply = '```json\n{"pick": "tagged"}\n```\n```\n{"pick": "untagged"}\n```';
    expect(extractJson(reply)).toEqual({ pick: "tagged" });
  });

  test("skips a json block that does not parse and uses another that does", () => {
    const reply = '```json\n{"ok": true}\n```\n```json\n{oops}\n```';
    expect(extractJson(reply)).toEqual({ ok: true });
  });

  test("finds an object embedded in prose without fences", () => {
    expect(extractJson('I think the answer is {"score": 7, "reason": "solid"} overall.')).toEqual({
      score: 7,
      reason: "solid",
    });
  });

  test("keeps braces and brackets inside strings from ending the object early", () => {
    const reply = 'Output: {"code": "if (x) { return [a]; }", "quote": "say \\"}\\""} done';
    expect(extractJson(reply)).toEqual({ code: "if (x) { return [a]; }", quote: 'say "}"' });
  });

  test("returns the whole outer object rather than a nested one", () => {
    expect(extractJson('Answer: {"outer": {"inner": [1, {"deep": true}]}}.')).toEqual({
      outer: { inner: [1, { deep: true }] },
    });
  });

  test("ignores small bracketed citations in favour of the larger JSON value", () => {
    const reply = 'Per the docs [1], the result is {"status": "ok", "items": [1, 2]} as shown in [2].';
    expect(extractJson(reply)).toEqual({ status: "ok", items: [1, 2] });
  });

  test("finds an object after an unbalanced opening bracket in the prose", () => {
    expect(extractJson('Note (see [above: {"a": 1}')).toEqual({ a: 1 });
  });

  test("throws AGENT_REPLY_NOT_JSON quoting the reply when nothing parses", () => {
    const error = errorOf(() => extractJson("I cannot help with {that} request."));
    expect(SmithersError.is(error, "AGENT_REPLY_NOT_JSON")).toBe(true);
    expect((error as SmithersError).message).toContain('"I cannot help with {that} request."');
  });

  test("quotes only the first 200 characters of a long unparseable reply", () => {
    const reply = `${"a".repeat(200)}TAIL${"b".repeat(500)}`;
    const error = errorOf(() => extractJson(reply)) as SmithersError;
    expect(error.code).toBe("AGENT_REPLY_NOT_JSON");
    expect(error.message).toContain("a".repeat(200));
    expect(error.message).not.toContain("TAIL");
  });

  test("throws AGENT_REPLY_NOT_JSON for an empty reply", () => {
    expect(
      SmithersError.is(
        errorOf(() => extractJson("")),
        "AGENT_REPLY_NOT_JSON",
      ),
    ).toBe(true);
  });

  test("gives up in reasonable time on thousands of unclosed brackets", () => {
    const started = performance.now();
    const error = errorOf(() => extractJson("{[".repeat(20_000)));
    expect(SmithersError.is(error, "AGENT_REPLY_NOT_JSON")).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

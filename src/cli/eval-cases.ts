/**
 * The cases of `smithers eval WORKFLOW --cases FILE.jsonl` and how a run is graded against one.
 * Pure: text in, cases out; a run's result in, pass or fail with why out.
 *
 * A line is `{"input": …, "expected": …, "id"?: "…", "name"?: "…"}`. `expected` is either an
 * assertion object (only the keys status, output, outputContains, errorContains) or, anything
 * else, the output itself, matched as a deep subset of the run's output of a finished run.
 */
import { RUN_STATUSES } from "../contract/index.ts";
import { SmithersError } from "../errors/index.ts";

const ASSERTION_KEYS = ["status", "output", "outputContains", "errorContains"] as const;
const CASE_KEYS = new Set(["input", "expected", "id", "name"]);
/** A run whose start was refused (its input failed the schema, say): no run was made. */
export const REFUSED = "refused";
const STATUSES: readonly string[] = [...RUN_STATUSES, REFUSED];

export type Assertion = { status?: string; output?: unknown; outputContains?: unknown; errorContains?: string };

export type EvalCase = {
  /** The case's id, else its name, else `line N`. */
  label: string;
  /** Its line in the file (1-based). */
  line: number;
  input: unknown;
  expected: Assertion;
};

/** What a case's run ended as: its status, output and error (`CODE: message`). */
export type CaseOutcome = { status: string; output: unknown; error: string | null };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const invalid = (line: number, message: string) => new SmithersError("INVALID_EVAL_CASE", `line ${line}: ${message}`, { line });

/** `expected` as an assertion: an object of assertion keys as it is, any other value the output to contain. */
function assertionOf(expected: unknown, line: number): Assertion {
  if (expected === undefined) return {};
  const keys = isPlainObject(expected) ? Object.keys(expected) : [];
  if (keys.length === 0 || !keys.every((k) => (ASSERTION_KEYS as readonly string[]).includes(k))) return { outputContains: expected };
  const a = expected as Assertion;
  if (a.status !== undefined && !(typeof a.status === "string" && STATUSES.includes(a.status))) {
    throw invalid(line, `expected.status must be one of ${STATUSES.join(", ")}, got ${JSON.stringify(a.status)}`);
  }
  if (a.errorContains !== undefined && typeof a.errorContains !== "string") throw invalid(line, "expected.errorContains must be a string");
  if (a.output !== undefined && a.outputContains !== undefined) throw invalid(line, "expected has both output and outputContains: give one");
  return a;
}

/**
 * The cases of a JSONL text; INVALID_EVAL_CASE naming the line for a line that is not a JSON
 * object of the known fields, for two cases with the same id, and for a file with no case.
 */
export function parseCases(text: string): EvalCase[] {
  const cases: EvalCase[] = [];
  const labels = new Map<string, number>();
  for (const [i, raw] of text.split("\n").entries()) {
    const line = i + 1;
    if (raw.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (cause) {
      throw invalid(line, `not JSON: ${(cause as Error).message}`);
    }
    if (!isPlainObject(value)) throw invalid(line, 'a case is a JSON object: {"input": …, "expected": …}');
    const unknown = Object.keys(value).filter((k) => !CASE_KEYS.has(k));
    if (unknown.length > 0) throw invalid(line, `unknown field ${JSON.stringify(unknown[0])} (a case has input, expected, id, name)`);
    for (const k of ["id", "name"] as const) {
      if (value[k] !== undefined && (typeof value[k] !== "string" || value[k] === "")) throw invalid(line, `${k} must be a non-empty string`);
    }
    const label = (value.id ?? value.name ?? `line ${line}`) as string;
    const earlier = labels.get(label);
    if (earlier !== undefined) throw invalid(line, `case "${label}" is also on line ${earlier}`);
    labels.set(label, line);
    cases.push({ label, line, input: value.input, expected: assertionOf(value.expected, line) });
  }
  if (cases.length === 0) throw new SmithersError("INVALID_EVAL_CASE", "the cases file holds no case (one JSON object per line)");
  return cases;
}

const show = (v: unknown) => {
  const json = JSON.stringify(v) ?? "undefined";
  return json.length > 80 ? `${json.slice(0, 79)}…` : json;
};

/**
 * Where `actual` differs from `expected` (null when it matches): exactly, or as a deep subset
 * (every key of an expected object present and matching; every element of an expected array
 * matching some element of the actual one; other values equal).
 */
export function mismatch(expected: unknown, actual: unknown, subset: boolean, path = "output"): string | null {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`;
    if (!subset) {
      if (expected.length !== actual.length) return `${path}: expected ${expected.length} element(s), got ${actual.length}`;
      for (const [i, e] of expected.entries()) {
        const m = mismatch(e, actual[i], false, `${path}[${i}]`);
        if (m) return m;
      }
      return null;
    }
    for (const e of expected) if (!actual.some((a) => mismatch(e, a, true) === null)) return `${path}: no element matches ${show(e)}`;
    return null;
  }
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return `${path}: expected an object, got ${show(actual)}`;
    for (const [k, e] of Object.entries(expected)) {
      if (!(k in actual)) return `${path}.${k}: missing`;
      const m = mismatch(e, actual[k], subset, `${path}.${k}`);
      if (m) return m;
    }
    if (!subset) {
      const extra = Object.keys(actual).find((k) => !(k in expected));
      if (extra !== undefined) return `${path}.${extra}: not expected (${show(actual[extra])})`;
    }
    return null;
  }
  return Object.is(expected, actual) ? null : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

/**
 * Whether a case's run passes its assertion, and why not. The status asked for defaults to
 * finished; with errorContains and no status, to failed (or refused: a start the workflow refused).
 */
export function grade(expected: Assertion, outcome: CaseOutcome): { pass: boolean; why: string } {
  const statuses = expected.status !== undefined ? [expected.status] : expected.errorContains !== undefined ? ["failed", REFUSED] : ["finished"];
  if (!statuses.includes(outcome.status)) {
    return { pass: false, why: `status ${outcome.status}, expected ${statuses.join(" or ")}${outcome.error ? ` (${outcome.error})` : ""}` };
  }
  if (expected.errorContains !== undefined && !(outcome.error ?? "").includes(expected.errorContains)) {
    return {
      pass: false,
      why: `error ${outcome.error === null ? "none" : JSON.stringify(outcome.error)} does not contain ${JSON.stringify(expected.errorContains)}`,
    };
  }
  const m =
    expected.output !== undefined
      ? mismatch(expected.output, outcome.output, false)
      : expected.outputContains !== undefined
        ? mismatch(expected.outputContains, outcome.output, true)
        : null;
  return m === null ? { pass: true, why: "" } : { pass: false, why: m };
}

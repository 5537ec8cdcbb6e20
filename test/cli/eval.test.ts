/** `smithers eval` as a real process: a dataset of cases over a compute-only workflow, and `eval compare` of two of its runs. */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { smithers } from "../e2e/cli-helpers.ts";
import { databaseExists, query, tempDbPath, tempDir } from "../helpers.ts";

type CaseResult = {
  case: string;
  runId: string | null;
  status: string;
  pass: boolean;
  why: string;
  scores: { scorerName: string; mean: number | null; pending: number }[];
};

function casesFile(...cases: unknown[]): string {
  const file = join(tempDir(), "cases.jsonl");
  writeFileSync(file, cases.map((c) => (typeof c === "string" ? c : JSON.stringify(c))).join("\n"));
  return file;
}

/** The table's rows (header and summary left out), as cells split on runs of two or more spaces. */
const tableRows = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .slice(1, -1)
    .map((l) => l.split(/ {2,}/));

describe("smithers eval <workflow> --cases", () => {
  test("every case of examples/triage.cases.jsonl passes: exit 0, a PASS row per case naming the run it made on the database", async () => {
    const db = tempDbPath();
    const r = smithers(["eval", "examples/triage.tsx", "--cases", "examples/triage.cases.jsonl", "--db", db]);
    expect(r.code).toBe(0);
    const rows = tableRows(r.stdout);
    expect(rows.map((row) => [row[0], row[2], row[3]])).toEqual([
      ["crash-is-a-bug", "finished", "PASS"],
      ["ask-for-export", "finished", "PASS"],
      ["plain-question", "finished", "PASS"],
      ["empty-text-fails", "failed", "PASS"],
    ]);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("4 passed, 0 failed");
    const stored = await query<{ run_id: string; status: string }>(db, "SELECT run_id, status FROM _smithers_runs");
    expect(new Set(stored.map((s) => `${s.run_id} ${s.status}`))).toEqual(new Set(rows.map((row) => `${row[1]} ${row[2]}`)));
  });

  test("a case that fails its assertion: the table says why, the other cases still run, and it exits 1 with EVAL_FAILED", () => {
    const cases = casesFile(
      { id: "right", input: { text: "it crashed" }, expected: { label: "bug" } },
      { id: "wrong", input: { text: "please add dark mode" }, expected: { output: { label: "bug", words: 4 } } },
      { id: "no-text", input: {}, expected: { status: "finished" } },
    );
    const r = smithers(["eval", "examples/triage.tsx", "--cases", cases, "--db", tempDbPath()]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("smithers: EVAL_FAILED: 2 of 3 case(s) failed");
    const rows = tableRows(r.stdout);
    expect(rows.map((row) => [row[0], row[3], row.at(-1)])).toEqual([
      ["right", "PASS", "PASS"],
      ["wrong", "FAIL", 'output.label: expected "bug", got "feature"'],
      ["no-text", "FAIL", expect.stringContaining("status refused, expected finished (INVALID_INPUT:")],
    ]);
    expect(rows[2]![1]).toBe("-"); // a refused start made no run
  });

  test("a line that is not a case: exit 2 with INVALID_EVAL_CASE naming the line, and no case runs", async () => {
    const db = tempDbPath();
    const r = smithers(["eval", "examples/triage.tsx", "--cases", casesFile({ input: { text: "a" } }, '{"input": {"text": "b"}, "expect": {}}'), "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('smithers: INVALID_EVAL_CASE: line 2: unknown field "expect" (a case has input, expected, id, name)');
    expect(await databaseExists(db)).toBe(false); // the workflow was never loaded, its database never opened
  });

  test("--json with --concurrency 2: every case's result in the file's order, each scorer's mean per case, pending scores counted as pending", () => {
    const env = { SCORED_DB: tempDbPath() }; // the workflow's own database: no --db
    const cases = casesFile(
      { id: "five", input: { text: "one two three four five" } },
      { id: "two", input: { text: "one two" } },
      { id: "one", input: { text: "x" } },
    );
    const r = smithers(["eval", "test/fixtures/scored-words.tsx", "--cases", cases, "--concurrency", "2", "--json"], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { cases: CaseResult[]; passed: number; failed: number };
    expect([out.passed, out.failed]).toEqual([3, 0]);
    expect(out.cases.map((c) => [c.case, c.status, c.pass, c.scores.map((s) => [s.scorerName, s.mean, s.pending])])).toEqual([
      [
        "five",
        "finished",
        true,
        [
          ["Judge", null, 1],
          ["Length", 0.5, 0],
        ],
      ],
      [
        "two",
        "finished",
        true,
        [
          ["Judge", null, 1],
          ["Length", 0.2, 0],
        ],
      ],
      [
        "one",
        "finished",
        true,
        [
          ["Judge", null, 1],
          ["Length", 0.1, 0],
        ],
      ],
    ]);
    const text = smithers(["eval", "test/fixtures/scored-words.tsx", "--cases", cases], env);
    expect(text.stdout.split("\n")[0]!.split(/ {2,}/)).toEqual(["case", "run", "status", "result", "Judge", "Length", "why"]);
    expect(tableRows(text.stdout).map((row) => row.slice(4))).toEqual([
      ["pending", "0.500"],
      ["pending", "0.200"],
      ["pending", "0.100"],
    ]);
  });
});

describe("smithers eval compare", () => {
  test("two runs task by task: outputs side by side, only-in-one tasks, and the totals; --json the same as one object", () => {
    const db = tempDbPath();
    const cases = casesFile({ id: "bug", input: { text: "it crashed" } }, { id: "empty", input: { text: " " }, expected: { errorContains: "nothing" } });
    const runs = (JSON.parse(smithers(["eval", "examples/triage.tsx", "--cases", cases, "--db", db, "--json"]).stdout) as { cases: CaseResult[] }).cases;
    const [a, b] = [runs[0]!.runId!, runs[1]!.runId!];
    const r = smithers(["eval", "compare", a, b, "--db", db]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toBe(`compare A ${a} (triage, finished) with B ${b} (triage, failed)`);
    expect(lines.filter((l) => !/^ {2}(tokens|task time)/.test(l)).slice(1)).toEqual([
      "task stats iter=0: A finished | B failed",
      '  output A {"words":2}',
      '  error B TASK_FAILED: Task "stats" failed: nothing to triage: the text is empty',
      "task label iter=0: only in A (finished)",
      '  output A {"label":"bug","words":2}',
      "totals: A | B",
      "  tasks 2 | 1 (finished 2 | 0)",
    ]);
    const json = JSON.parse(smithers(["eval", "compare", a, b, "--db", db, "--json"]).stdout) as {
      tasks: { nodeId: string; presence: string }[];
      warnings: string[];
    };
    expect(json.tasks.map((t) => [t.nodeId, t.presence])).toEqual([
      ["stats", "both"],
      ["label", "only-a"],
    ]);
    expect(json.warnings).toEqual([]);
  });

  test("an unknown run: exit 2 with RUN_NOT_FOUND", () => {
    const db = tempDbPath();
    smithers(["up", "examples/hello.tsx", "--run-id", "h1", "--db", db]);
    const r = smithers(["eval", "compare", "h1", "nope", "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('smithers: RUN_NOT_FOUND: No run "nope"');
  });
});

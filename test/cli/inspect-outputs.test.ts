/** `smithers inspect` shows each task's output row: a compact line under the task, `output` per node with --json. */
import { describe, expect, test } from "bun:test";
import { smithers } from "../e2e/cli-helpers.ts";
import { tempDbPath } from "../helpers.ts";

type Node = { nodeId: string; state: string; output: Record<string, unknown> | null };

describe("smithers inspect", () => {
  test("each task that wrote a row shows it under its line; a failed task shows none; --json has it as each node's output", () => {
    const db = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--run-id", "r1", "--db", db], { STEP_C: "fail" }).code).toBe(1);

    const r = smithers(["inspect", "r1", "--db", db]);
    expect(r.code).toBe(0);
    const tasks = r.stdout.split("\n").slice(r.stdout.split("\n").indexOf("tasks:") + 1);
    expect(tasks.slice(0, 5).map((line) => line.replace(/, \d+ ms.*$/, ""))).toEqual([
      "  a iter=0 finished, 1 attempt(s)",
      '    output {"label":"x","order":1}',
      "  b iter=0 finished, 1 attempt(s)",
      '    output {"label":"x","order":2}',
      "  c iter=0 failed, 1 attempt(s)",
    ]);
    expect(tasks[5] ?? "").not.toContain("output");

    const report = JSON.parse(smithers(["inspect", "r1", "--db", db, "--json"]).stdout) as { nodes: Node[] };
    expect(report.nodes.map((n) => [n.nodeId, n.state, n.output])).toEqual([
      ["a", "finished", { label: "x", order: 1 }],
      ["b", "finished", { label: "x", order: 2 }],
      ["c", "failed", null],
    ]);
  });

  test("a long row is cut at 200 characters in the human view and whole in --json", () => {
    const db = tempDbPath();
    const label = "y".repeat(500);
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", JSON.stringify({ label }), "--run-id", "long", "--db", db]).code).toBe(0);
    const line = smithers(["inspect", "long", "--db", db])
      .stdout.split("\n")
      .find((l) => l.startsWith("    output "))!;
    expect(line).toBe(`    output {"label":"${"y".repeat(189)}… (--json for all of it)`);
    const report = JSON.parse(smithers(["inspect", "long", "--db", db, "--json"]).stdout) as { nodes: Node[] };
    expect(report.nodes[0]!.output).toEqual({ label, order: 1 });
  });
});

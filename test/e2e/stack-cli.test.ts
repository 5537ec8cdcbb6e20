/** Where a task's error came from, as the CLI shows it: `up` names the author's line, `inspect` each failed attempt's stack. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql, tempDbPath } from "../helpers.ts";
import { root, smithers } from "./cli-helpers.ts";

const FIXTURE = "test/fixtures/throws.tsx"; // relative to the CLI's cwd, the repository root
const LINE =
  readFileSync(join(root, FIXTURE), "utf8")
    .split("\n")
    .findIndex((l) => l.includes("// THROWS HERE")) + 1;

/** Runs the fixture to its failure; its run id and what `up` printed. */
function failedRun() {
  const dbPath = tempDbPath();
  const up = smithers(["up", FIXTURE, "--db", dbPath]);
  const runId = /^run (\S+) failed$/m.exec(up.stdout)?.[1];
  return { dbPath, up, runId: runId! };
}

describe("smithers up and inspect on a task that throws", () => {
  test("up prints, with the failure, the first frame of the author's code, its path relative to the cwd", () => {
    const { up, runId } = failedRun();
    expect(up.code).toBe(1);
    expect(runId).toBeDefined();
    const lines = up.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe('smithers: TASK_FAILED: Task "total" failed: not a number: twelve');
    expect(lines[1]).toMatch(new RegExp(`^  at ${FIXTURE}:${LINE}:\\d+$`));
  });

  test("the stored error_json's stack starts at that file and line, internal frames counted", () => {
    const { dbPath } = failedRun();
    const [row] = sql<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts");
    const stack = JSON.parse(row!.error_json).cause.stack as string[];
    expect(stack[0]).toStartWith(`at parseTotal (${join(root, FIXTURE)}:${LINE}:`);
    expect(stack.at(-1)).toMatch(/^… \d+ internal frames?$/);
  });

  test("inspect shows the failed attempt's stack under it; inspect --json has it in the attempt's error", () => {
    const { dbPath, runId } = failedRun();
    const text = smithers(["inspect", runId, "--db", dbPath]);
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n");
    const at = lines.indexOf("failed attempts:");
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe('  total iter=0 attempt 1: TASK_FAILED: Task "total" failed: not a number: twelve');
    expect(lines[at + 2]).toMatch(new RegExp(`^    at parseTotal \\(${FIXTURE}:${LINE}:\\d+\\)$`));
    expect(lines.slice(at + 2).find((l) => l.includes("internal frame"))).toMatch(/^ {4}… \d+ internal frames?$/);

    const json = smithers(["inspect", runId, "--db", dbPath, "--json"]);
    const report = JSON.parse(json.stdout) as { nodes: { nodeId: string; failedAttempts: { attempt: number; error: { code: string; stack: string[] } }[] }[] };
    const [failed] = report.nodes.find((n) => n.nodeId === "total")!.failedAttempts;
    expect([failed?.attempt, failed?.error.code]).toEqual([1, "TASK_FAILED"]);
    expect(failed?.error.stack[0]).toStartWith(`at parseTotal (${join(root, FIXTURE)}:${LINE}:`);
  });
});

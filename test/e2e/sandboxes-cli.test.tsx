/** `smithers sandboxes RUN`: a run's sandbox sessions as a table and as JSON, read back from the rows real bubblewrap sessions wrote. */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers } from "./cli-helpers.ts";

const dbPath = tempDbPath();
let runId: string;

beforeAll(async () => {
  const { smithers: build, Workflow, Task, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  // Rebuilt from their source text inside the sandbox: no closure.
  const wf = build(() => (
    <Workflow name="cli-sandboxed">
      <Task id="ok" output={outputs.out} sandbox={{ network: true, cpuSeconds: 30 }}>
        {(() => ({ v: 1 })) as never}
      </Task>
      <Task id="throws" output={outputs.out} sandbox continueOnFail noRetry>
        {
          (() => {
            throw new Error("no good");
          }) as never
        }
      </Task>
    </Workflow>
  ));
  runId = (await runWorkflow(wf, { input: {}, rootDir: mkdtempSync(join(tmpdir(), "sandboxes-cli-")) })).runId;
});

describe("smithers sandboxes", () => {
  test("--json prints each session with node, attempt, policy, pid, start, end, exit and root, as stored", () => {
    const out = smithers(["sandboxes", runId, "--json", "--db", dbPath]);
    expect(out.code).toBe(0);
    const stored = sql<{ sandbox_id: string; pid: number; started_at_ms: number; completed_at_ms: number; root_dir: string }>(
      dbPath,
      "SELECT sandbox_id, pid, started_at_ms, completed_at_ms, root_dir FROM _smithers_sandboxes ORDER BY sandbox_id",
    );
    const byId = new Map(stored.map((r) => [r.sandbox_id, r]));
    const sessions = JSON.parse(out.stdout) as Record<string, unknown>[];
    expect(sessions.map((s) => [s.nodeId, s.iteration, s.attempt, s.policy, s.status, s.exitCode])).toEqual([
      ["ok", 0, 1, { network: true, cpuSeconds: 30 }, "finished", 0],
      ["throws", 0, 1, {}, "failed", 0],
    ]);
    for (const s of sessions) {
      const row = byId.get(s.sandboxId as string)!;
      expect([s.pid, s.startedAtMs, s.completedAtMs, s.rootDir, s.runtime]).toEqual([
        row.pid,
        row.started_at_ms,
        row.completed_at_ms,
        row.root_dir,
        "bubblewrap",
      ]);
    }
    expect(String(sessions[1]!.error)).toContain("no good");
  });

  test("prints a table, one line per session, a failure's reason under its line", () => {
    const out = smithers(["sandboxes", runId, "--db", dbPath]);
    expect(out.code).toBe(0);
    const lines = out.stdout.trimEnd().split("\n");
    expect(lines[0]!.split(/\s+/)).toEqual(["NODE", "ITER", "ATTEMPT", "STATUS", "EXIT", "PID", "POLICY", "STARTED", "ENDED", "ROOT"]);
    expect(lines[1]!.split(/\s+/).slice(0, 5)).toEqual(["ok", "0", "1", "finished", "0"]);
    expect(lines[1]).toContain("network=true,cpuSeconds=30");
    expect(lines[2]!.split(/\s+/).slice(0, 5)).toEqual(["throws", "0", "1", "failed", "0"]);
    expect(lines[3]).toMatch(/^ {2}SANDBOX_FAILED: .*no good/);
  });

  test("an unknown run exits 2 with RUN_NOT_FOUND", () => {
    const out = smithers(["sandboxes", "nope", "--db", dbPath]);
    expect([out.code, out.stderr.split(":")[1]?.trim()]).toEqual([2, "RUN_NOT_FOUND"]);
  });
});

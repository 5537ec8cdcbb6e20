/** Code pinning across a kill -9, and fork / replay / rewind / timeline from the CLI. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execute, sql, tempDbPath, tempDir } from "../helpers.ts";
import { root, smithers } from "./cli-helpers.ts";

/** A workflow whose agent task `draft` echoes its prompt; with HANG=1 it writes $MARKER and never answers. */
const workflowText = (prompt: string) => `/** @jsxImportSource smithers-workflows */
import { writeFileSync } from "node:fs";
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ text: z.string() }) });

const writer = {
  id: "writer",
  generate: async ({ prompt }: { prompt: string }) => {
    if (process.env.HANG === "1") {
      writeFileSync(process.env.MARKER!, "started");
      await new Promise(() => undefined);
    }
    return { text: JSON.stringify({ text: prompt.split("\\n")[0] }) };
  },
};

export default smithers(() => (
  <Workflow name="pinned">
    <Task id="first" output={outputs.out}>{{ text: "kept" }}</Task>
    <Task id="draft" output={outputs.out} agent={writer}>${prompt}</Task>
  </Workflow>
));
`;

/** A project directory outside the repository that depends on smithers and zod (symlinked, as an install would place them). */
function project(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules", "smithers-workflows"));
  symlinkSync(join(root, "node_modules", "zod"), join(dir, "node_modules", "zod"));
  return dir;
}

describe("code pinning", () => {
  test("a prompt changed between a kill -9 and the resume is reported and needs --allow-code-change; finished tasks are kept", async () => {
    const dir = project();
    const wf = join(dir, "wf.tsx");
    const db = tempDbPath();
    const marker = join(dir, "marker");
    writeFileSync(wf, workflowText("Write a haiku about rivers."));
    const proc = Bun.spawn([process.execPath, join(root, "src/cli/index.ts"), "up", wf, "--run-id", "pin", "--db", db], {
      cwd: dir,
      env: { ...process.env, HANG: "1", MARKER: marker },
      stdout: "ignore",
      stderr: "ignore",
    });
    const deadline = Date.now() + 15_000;
    while (!existsSync(marker)) {
      if (Date.now() > deadline) throw new Error("the agent never started");
      await Bun.sleep(20);
    }
    proc.kill("SIGKILL");
    await proc.exited;
    const hash = sql<{ workflow_hash: string }>(db, "SELECT workflow_hash FROM _smithers_runs WHERE run_id = 'pin'")[0]?.workflow_hash;
    expect(hash).toMatch(/^[0-9a-f]{64}$/);

    writeFileSync(wf, workflowText("Write a sonnet about rivers."));
    const refused = smithers(["up", wf, "--resume", "--run-id", "pin", "--db", db]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("WORKFLOW_CHANGED");
    expect(refused.stderr).toContain("Tasks whose definition changed: draft;");
    // Nothing changed: the run is as the crash left it.
    expect(sql(db, "SELECT status, workflow_hash FROM _smithers_runs WHERE run_id = 'pin'")).toEqual([{ status: "running", workflow_hash: hash }]);

    const allowed = smithers(["up", wf, "--resume", "--run-id", "pin", "--db", db, "--allow-code-change"]);
    expect(allowed.code).toBe(0);
    expect(sql(db, "SELECT node_id, text FROM out WHERE run_id = 'pin' ORDER BY node_id")).toEqual([
      { node_id: "draft", text: "Write a sonnet about rivers." },
      { node_id: "first", text: "kept" },
    ]);
    expect(sql(db, "SELECT count(*) AS n FROM _smithers_attempts WHERE run_id = 'pin' AND node_id = 'first'")).toEqual([{ n: 1 }]);
    const [event] = sql<{ payload_json: string }>(db, "SELECT payload_json FROM _smithers_events WHERE run_id = 'pin' AND type = 'WorkflowCodeChanged'");
    const payload = JSON.parse(event!.payload_json) as { oldHash: string; newHash: string; changed: { nodeId: string }[] };
    expect([payload.oldHash, payload.changed.map((c) => c.nodeId)]).toEqual([hash!, ["draft"]]);
    expect(sql(db, "SELECT workflow_hash FROM _smithers_runs WHERE run_id = 'pin'")).toEqual([{ workflow_hash: payload.newHash }]);
  }, 30_000);
});

describe("fork, replay, rewind and timeline from the CLI", () => {
  test("bad input is exit 2 and changes nothing", () => {
    const db = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--run-id", "base", "--db", db]).code).toBe(0);
    expect(smithers(["up", "test/fixtures/approval.tsx", "--run-id", "waits", "--db", db]).code).toBe(3);
    const before = sql(db, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id");
    const framesBefore = sql(db, "SELECT run_id, count(*) AS n FROM _smithers_frames GROUP BY run_id ORDER BY run_id");
    const cases: [string[], string][] = [
      [["fork", "nope", "--frame", "0"], "RUN_NOT_FOUND"],
      [["fork", "base", "--frame", "999"], "FRAME_NOT_FOUND"],
      [["fork", "base", "--frame", "x"], "USAGE"],
      [["fork", "base"], "USAGE"],
      [["fork", "base", "--frame", "1", "--reset-node", "zzz"], "NODE_NOT_FOUND"],
      [["fork", "base", "--frame", "1", "--input", '{"label":5}'], "INVALID_INPUT"],
      [["replay", "base", "--frame", "1", "--input", "{}"], "USAGE"],
      // A fork is pinned to the code it is made with: --allow-code-change could do nothing.
      [["fork", "base", "--frame", "1", "--allow-code-change"], "USAGE"],
      [["fork", "base", "--frame", "1", "--run", "--allow-code-change"], "USAGE"],
      [["replay", "base", "--frame", "1", "--allow-code-change"], "USAGE"],
      // Running prints the run's progress, which is not JSON.
      [["fork", "base", "--frame", "1", "--run", "--json"], "USAGE"],
      [["replay", "base", "--frame", "1", "--json"], "USAGE"],
      [["rewind", "base", "0", "--resume", "--json"], "USAGE"],
      [["rewind", "base", "0", "--allow-code-change"], "USAGE"],
      [["up", "test/fixtures/steps.tsx", "--allow-code-change"], "USAGE"],
      [["rewind", "base", "999"], "FRAME_NOT_FOUND"],
      [["rewind", "nope", "0"], "RUN_NOT_FOUND"],
      [["rewind", "waits", "0"], "RUN_NOT_REWINDABLE"],
    ];
    for (const [args, code] of cases) {
      const r = smithers([...args, "--db", db]);
      expect([args.join(" "), r.code, r.stderr.includes(code)]).toEqual([args.join(" "), 2, true]);
    }
    expect(sql(db, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual(before);
    expect(sql(db, "SELECT run_id, count(*) AS n FROM _smithers_frames GROUP BY run_id ORDER BY run_id")).toEqual(framesBefore);
  }, 45_000); // twenty-one CLI processes: more than the default 5 s on a busy 2-core machine

  test("fork --run re-executes the reset node and what follows it; timeline shows the fork; rewind --resume finishes again", () => {
    const db = tempDbPath();
    const calls = join(tempDir(), "calls");
    const env = { CALLS_FILE: calls };
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--run-id", "base", "--db", db], env).code).toBe(0);
    const frames = sql<{ frame_no: number }>(db, "SELECT frame_no FROM _smithers_frames WHERE run_id = 'base' ORDER BY frame_no").map((r) => r.frame_no);
    const last = frames[frames.length - 1]!;
    writeFileSync(calls, "");
    const fork = smithers(["fork", "base", "--frame", String(last), "--reset-node", "b", "--run-id", "f1", "--run", "--db", db], env);
    expect(fork.code).toBe(0);
    expect(fork.stdout).toContain("run f1 forked from base");
    expect(fork.stdout).toContain("run f1 finished");
    // b, and c after it in the sequence, ran again; a was kept.
    expect(readFileSync(calls, "utf8").trim().split("\n").sort()).toEqual(["b", "c"]);
    const timeline = smithers(["timeline", "base", "--db", db]);
    expect(timeline.stdout).toContain(`⑂ forked as run f1 (finished)`);
    const json = smithers(["timeline", "base", "--json", "--db", db])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { frameNo: number; forks: { runId: string }[] });
    expect(json.find((f) => f.forks.length > 0)?.frameNo).toBe(last);

    writeFileSync(calls, "");
    const rewind = smithers(["rewind", "base", "0", "--resume", "--db", db], env);
    expect(rewind.code).toBe(0);
    expect(rewind.stdout).toContain(`run base rewound from frame ${last} to frame 0`);
    expect(rewind.stdout).toContain("run base finished");
    expect(readFileSync(calls, "utf8").trim().split("\n").sort()).toEqual(["a", "b", "c"]);
    expect(sql(db, "SELECT type FROM _smithers_events WHERE run_id = 'base' AND type = 'RunRewound'").length).toBe(1);

    writeFileSync(calls, "");
    const replay = smithers(["replay", "base", "--frame", "0", "--run-id", "r1", "--db", db], env);
    expect(replay.code).toBe(0);
    expect(readFileSync(calls, "utf8").trim().split("\n").sort()).toEqual(["a", "b", "c"]);
  });

  test("rewind --resume of a run whose recorded workflow file was moved runs the --workflow file given", () => {
    const dir = project();
    const db = tempDbPath();
    writeFileSync(join(dir, "wf.tsx"), workflowText("Write a haiku about rivers."));
    expect(smithers(["up", join(dir, "wf.tsx"), "--run-id", "moved", "--db", db]).code).toBe(0);
    // Moved as is (same name and content, so the same code hash): the path the run recorded is gone.
    mkdirSync(join(dir, "moved"));
    renameSync(join(dir, "wf.tsx"), join(dir, "moved", "wf.tsx"));
    const rewind = smithers(["rewind", "moved", "0", "--workflow", join(dir, "moved", "wf.tsx"), "--resume", "--db", db]);
    expect([rewind.code, rewind.stderr]).toEqual([0, ""]);
    expect(rewind.stdout).toContain("run moved finished");
    expect(sql(db, "SELECT status FROM _smithers_runs WHERE run_id = 'moved'")).toEqual([{ status: "finished" }]);
    expect(sql(db, "SELECT node_id, text FROM out WHERE run_id = 'moved' ORDER BY node_id")).toEqual([
      { node_id: "draft", text: "Write a haiku about rivers." },
      { node_id: "first", text: "kept" },
    ]);
  }, 30_000);

  test("rewind of a run whose side effects' reverts live in a workflow file that is gone is a usage error, not a silent loss of the reverts", async () => {
    const db = tempDbPath();
    const dir = tempDir();
    const env = { EFFECT_FILE: join(dir, "effects.log"), HANG: "0" };
    expect(smithers(["up", "test/fixtures/tool-crash.tsx", "--run-id", "paid", "--db", db], env).code).toBe(0);
    // As if the file had moved since the run.
    await execute(db, "UPDATE _smithers_runs SET workflow_path = ? WHERE run_id = 'paid'", join(dir, "moved.tsx"));
    const asked = smithers(["rewind", "paid", "0", "--db", db], env);
    expect([asked.code, asked.stderr.includes("USAGE"), asked.stderr.includes("--workflow FILE")]).toEqual([2, true, true]);
    // --no-revert says the reverts are not wanted: the rewind reaches the side-effect guard, which --force passes.
    const guarded = smithers(["rewind", "paid", "0", "--no-revert", "--db", db], env);
    expect([guarded.code, guarded.stderr.includes("SIDE_EFFECT_BOUNDARY")]).toEqual([2, true]);
    expect(smithers(["rewind", "paid", "0", "--no-revert", "--force", "--db", db], env).code).toBe(0);
    expect(sql(db, "SELECT status FROM _smithers_runs WHERE run_id = 'paid'")).toEqual([{ status: "paused" }]);
  }, 30_000);
});

/** @jsxImportSource smithers-workflows */
/** Sandboxed compute tasks: real bubblewrap, a real child `bun`, a real loopback server. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow, scriptedAgent, type SandboxPolicy } from "../../src/index.ts";
import { execute, query, tempDbPath } from "../helpers.ts";

const schemas = { out: z.object({ text: z.string() }) };
type Body = (ctx: { input: unknown; cwd: string }) => unknown;

/** One compute task `box` with `sandbox={policy}` (no retries), its body `body`, run with `input` in `rootDir`. */
async function runBox(body: Body, policy: true | SandboxPolicy, input: Record<string, unknown>, rootDir: string) {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
  const wf = smithers(() => (
    <Workflow name="sandboxed">
      <Task id="box" output={outputs.out} sandbox={policy} noRetry>
        {body as never}
      </Task>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input, rootDir });
  const rows = await query(dbPath, "SELECT * FROM _smithers_sandboxes");
  return { result, rows, dbPath };
}

// The bodies below are rebuilt from their source text in the sandbox: they reach modules by import(), never by closure.
const writeTo: Body = async ({ input }) => {
  const fs = await import("node:fs");
  fs.writeFileSync((input as { path: string }).path, "escaped");
  return { text: "wrote" };
};

const fetchPort: Body = async ({ input }) => {
  const res = await fetch(`http://127.0.0.1:${(input as { port: number }).port}/`);
  return { text: await res.text() };
};

let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("hello from the host") });
});
afterAll(() => server.stop(true));

const freshDir = () => mkdtempSync(join(tmpdir(), "sandbox-root-"));

describe("sandboxed compute task", () => {
  test("cannot write outside its work dir: the run's root is read-only, the file does not exist, and the error says EROFS", async () => {
    const root = freshDir();
    const target = join(root, "escape.txt");
    const { result, rows } = await runBox(writeTo, true, { path: target }, root);
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(result.error?.message).toContain("EROFS");
    expect(existsSync(target)).toBe(false);
    expect(rows.map((r) => [r.status, r.exit_code])).toEqual([["failed", 0]]);
    expect(String(rows[0]?.error_text)).toContain("EROFS");
  });

  test("writes in its own work dir (ctx.cwd) and returns the row; the session is recorded with its dir, policy, pid, start, end and exit", async () => {
    const inside: Body = async ({ cwd }) => {
      const fs = await import("node:fs");
      fs.writeFileSync(`${cwd}/note.txt`, "kept inside");
      return { text: `${fs.readFileSync(`${cwd}/note.txt`, "utf8")} at ${cwd}` };
    };
    const { result, rows, dbPath } = await runBox(inside, { cpuSeconds: 30 }, {}, freshDir());
    expect(result.status).toBe("finished");
    const [out] = await query<{ text: string }>(dbPath, "SELECT text FROM out");
    const row = rows[0]!;
    expect(out?.text).toBe(`kept inside at ${String(row.root_dir)}/work`);
    expect([row.run_id, row.sandbox_id, row.node_id, row.iteration, row.attempt, row.runtime, row.status, row.exit_code]).toEqual([
      result.runId,
      "box:0:1",
      "box",
      0,
      1,
      "bubblewrap",
      "finished",
      0,
    ]);
    expect(JSON.parse(String(row.config_json))).toEqual({ cpuSeconds: 30 });
    expect(Number(row.pid)).toBeGreaterThan(0);
    expect(Number(row.completed_at_ms)).toBeGreaterThanOrEqual(Number(row.started_at_ms));
    expect(row.error_text).toBeNull();
    // The fresh dir is removed when the attempt ends.
    expect(existsSync(String(row.root_dir))).toBe(false);
  });

  test("sees none of the engine's environment but PATH, with HOME and TMPDIR its own", async () => {
    process.env.SANDBOX_TEST_SECRET = "do-not-leak";
    try {
      const env: Body = () => ({ text: JSON.stringify([process.env.SANDBOX_TEST_SECRET ?? null, Object.keys(process.env).sort(), process.env.TMPDIR]) });
      const { result, dbPath } = await runBox(env, true, {}, freshDir());
      expect(result.status).toBe("finished");
      const [out] = await query<{ text: string }>(dbPath, "SELECT text FROM out");
      const [secret, keys, tmp] = JSON.parse(out!.text) as [string | null, string[], string];
      expect([secret, keys.includes("PATH"), keys.includes("HOME"), tmp]).toEqual([null, true, true, "/tmp"]);
    } finally {
      delete process.env.SANDBOX_TEST_SECRET;
    }
  });

  test("with writableRoot the run's root directory is writable", async () => {
    const root = freshDir();
    const target = join(root, "allowed.txt");
    const { result } = await runBox(writeTo, { writableRoot: true }, { path: target }, root);
    expect(result.status).toBe("finished");
    expect(readFileSync(target, "utf8")).toBe("escaped");
  });

  test("cannot reach a loopback server without network, and can with network: true", async () => {
    const denied = await runBox(fetchPort, true, { port: server.port }, freshDir());
    expect([denied.result.status, denied.result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(denied.result.error?.message).toMatch(/connect|ECONNREFUSED|network/i);

    const allowed = await runBox(fetchPort, { network: true }, { port: server.port }, freshDir());
    expect(allowed.result.status).toBe("finished");
    const [out] = await query<{ text: string }>(allowed.dbPath, "SELECT text FROM out");
    expect(out?.text).toBe("hello from the host");
  });

  test("a body over its cpuSeconds is killed, and one over memoryBytes cannot allocate", async () => {
    const spin: Body = () => {
      for (;;);
    };
    const cpu = await runBox(spin, { cpuSeconds: 1 }, {}, freshDir());
    expect([cpu.result.status, cpu.result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(cpu.result.error?.message).toContain("SIGXCPU");

    const hog: Body = () => {
      const held: Uint8Array[] = [];
      for (let i = 0; i < 64; i++) held.push(new Uint8Array(64 * 1024 * 1024).fill(1));
      return { text: String(held.length) };
    };
    const mem = await runBox(hog, { memoryBytes: 2 * 1024 * 1024 * 1024 }, {}, freshDir());
    expect([mem.result.status, mem.result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(mem.result.error?.message).toMatch(/memory/i);
  });

  test("when bubblewrap is missing (SMITHERS_BWRAP names no file) the task fails SANDBOX_UNAVAILABLE and the body never runs", async () => {
    const root = freshDir();
    const target = join(root, "ran-unsandboxed.txt");
    const saved = process.env.SMITHERS_BWRAP;
    process.env.SMITHERS_BWRAP = join(root, "no-such-bwrap");
    try {
      const { result, rows } = await runBox(writeTo, { writableRoot: true }, { path: target }, root);
      expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_UNAVAILABLE"]);
      expect(result.error?.message).toContain("no-such-bwrap");
      expect(existsSync(target)).toBe(false);
      expect(rows.map((r) => [r.status, String(r.error_text).split(":")[0]])).toEqual([["failed", "SANDBOX_UNAVAILABLE"]]);
    } finally {
      if (saved === undefined) delete process.env.SMITHERS_BWRAP;
      else process.env.SMITHERS_BWRAP = saved;
    }
  });

  test("when bwrap cannot set up (it reports no user namespaces) the task fails SANDBOX_UNAVAILABLE with bwrap's words", async () => {
    const root = freshDir();
    // A bwrap that fails the way a kernel without user namespaces makes the real one fail.
    const refusing = join(root, "bwrap-no-userns");
    writeFileSync(refusing, "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n");
    chmodSync(refusing, 0o755);
    const saved = process.env.SMITHERS_BWRAP;
    process.env.SMITHERS_BWRAP = refusing;
    try {
      const { result, rows } = await runBox(writeTo, { writableRoot: true }, { path: join(root, "never.txt") }, root);
      expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_UNAVAILABLE"]);
      expect(result.error?.message).toContain("No permissions to creating new namespace");
      expect(existsSync(join(root, "never.txt"))).toBe(false);
      expect(rows.map((r) => [r.status, r.exit_code])).toEqual([["failed", 1]]);
    } finally {
      if (saved === undefined) delete process.env.SMITHERS_BWRAP;
      else process.env.SMITHERS_BWRAP = saved;
    }
  });

  test("a memoryBytes too small for bun to start fails SANDBOX_FAILED, not as if bubblewrap were missing", async () => {
    const { result } = await runBox(() => ({ text: "never" }), { memoryBytes: 100 * 1024 * 1024 }, {}, freshDir());
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(result.error?.message).toContain("did not start");
  });

  test("a policy field Smithers cannot enforce fails the run before the task starts with SANDBOX_POLICY_UNSUPPORTED", async () => {
    const root = freshDir();
    const target = join(root, "never.txt");
    const { result, rows } = await runBox(writeTo, { maxProcesses: 4 } as SandboxPolicy, { path: target }, root);
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_POLICY_UNSUPPORTED"]);
    expect(result.error?.message).toContain("maxProcesses");
    expect(existsSync(target)).toBe(false);
    expect(rows).toEqual([]);
  });
});

describe("<Sandbox>", () => {
  test("runs each compute task inside under its policy, a task's own sandbox prop wins, and a task outside runs unsandboxed", async () => {
    const root = freshDir();
    const dbPath = tempDbPath();
    const { Workflow, Task, Sandbox, smithers, outputs } = createSmithers(schemas, { dbPath });
    const tryFetch: Body = async ({ input }) => {
      try {
        await fetch(`http://127.0.0.1:${(input as { port: number }).port}/`);
        return { text: "reached" };
      } catch {
        return { text: "unreachable" };
      }
    };
    const wf = smithers(() => (
      <Workflow name="sandboxes">
        <Sandbox cpuSeconds={20}>
          <Task id="strict" output={outputs.out} noRetry>
            {tryFetch as never}
          </Task>
          <Task id="networked" output={outputs.out} sandbox={{ network: true }} noRetry>
            {tryFetch as never}
          </Task>
        </Sandbox>
        <Task id="outside" output={outputs.out} noRetry>
          {tryFetch as never}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: { port: server.port }, rootDir: root });
    expect(result.status).toBe("finished");
    const outs = await query<{ node_id: string; text: string }>(dbPath, "SELECT node_id, text FROM out ORDER BY node_id");
    expect(outs.map((o) => [o.node_id, o.text])).toEqual([
      ["networked", "reached"],
      ["outside", "reached"],
      ["strict", "unreachable"],
    ]);
    const rows = await query<{ sandbox_id: string; config_json: string }>(
      dbPath,
      "SELECT sandbox_id, config_json FROM _smithers_sandboxes ORDER BY sandbox_id",
    );
    expect(rows.map((r) => [r.sandbox_id, JSON.parse(r.config_json)])).toEqual([
      ["networked:0:1", { network: true }],
      ["strict:0:1", { cpuSeconds: 20 }],
    ]);
  });

  test("a sandbox on an in-process agent (not a CLI agent) fails the task before it starts with SANDBOX_POLICY_UNSUPPORTED, and the agent is never called", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sandbox, smithers, outputs } = createSmithers(schemas, { dbPath });
    let calls = 0;
    const agent = scriptedAgent(() => {
      calls++;
      return { text: "hi" };
    });
    const wf = smithers(() => (
      <Workflow name="agent-in-sandbox">
        <Sandbox>
          <Task id="ask" output={outputs.out} agent={agent} noRetry>
            say hi
          </Task>
        </Sandbox>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, rootDir: freshDir() });
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_POLICY_UNSUPPORTED"]);
    expect(calls).toBe(0);
  });

  test("a bad value on <Sandbox> fails the run with SANDBOX_POLICY_UNSUPPORTED", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sandbox, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="bad-policy">
        <Sandbox cpuSeconds={1.5}>
          <Task id="x" output={outputs.out}>
            {() => ({ text: "never" })}
          </Task>
        </Sandbox>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, rootDir: freshDir() });
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_POLICY_UNSUPPORTED"]);
    expect(await query(dbPath, "SELECT * FROM out")).toEqual([]);
  });

  test("a task's timeout kills its sandbox: the run fails TASK_TIMEOUT and the session ends failed, killed", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="timeout">
        <Task id="spin" output={outputs.out} sandbox timeoutMs={300} noRetry>
          {
            (() => {
              for (;;);
            }) as never
          }
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, rootDir: freshDir() });
    expect([result.status, result.error?.code]).toEqual(["failed", "TASK_TIMEOUT"]);
    const [row] = await query<{ status: string; error_text: string; pid: number }>(dbPath, "SELECT status, error_text, pid FROM _smithers_sandboxes");
    expect(row?.status).toBe("failed");
    expect(row?.error_text).toContain("SIGKILL");
    expect(() => process.kill(row!.pid, 0)).toThrow();
  });

  test("a session a dead process left running is closed as abandoned on resume, its directory removed", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="stale">
        <Task id="box" output={outputs.out} sandbox>
          {(() => ({ text: "boxed" })) as never}
        </Task>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, rootDir: freshDir() });
    // Rewound to how a kill -9 while the body ran leaves it (test/e2e/sandbox-crash.test.ts does it for real on SQLite).
    const leftDir = freshDir();
    await execute(dbPath, `UPDATE _smithers_runs SET status = 'running', runtime_owner_id = 'elsewhere:999999:x', heartbeat_at_ms = 0`);
    await execute(dbPath, `UPDATE _smithers_nodes SET state = 'running'`);
    await execute(dbPath, `UPDATE _smithers_attempts SET state = 'running', finished_at_ms = NULL`);
    await execute(dbPath, `UPDATE _smithers_sandboxes SET status = 'running', completed_at_ms = NULL, exit_code = NULL, root_dir = '${leftDir}'`);
    await execute(dbPath, `DELETE FROM out`);
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true, rootDir: freshDir() });
    expect(resumed.status).toBe("finished");
    const rows = await query<{ sandbox_id: string; status: string; exit_code: number | null; error_text: string | null }>(
      dbPath,
      "SELECT sandbox_id, status, exit_code, error_text FROM _smithers_sandboxes ORDER BY sandbox_id",
    );
    expect(rows.map((r) => [r.sandbox_id, r.status, r.exit_code])).toEqual([
      ["box:0:1", "abandoned", null],
      ["box:0:2", "finished", 0],
    ]);
    expect(rows[0]?.error_text).toContain("TASK_ABANDONED");
    expect(existsSync(leftDir)).toBe(false);
  });
});

import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { processAlive } from "../../src/agents/cli/index.ts";
import { bash, grep } from "../../src/tools/index.ts";
import { until } from "../agents/cli/fake-cli.ts";
import { rejection, sql, waitFor } from "../helpers.ts";
import { callIn, closeScopes, tempRoot, toolScope } from "./helpers.ts";

afterEach(closeScopes);

/** A root with src/a.ts and notes.md, beside an outside directory that also matches "needle". */
function scene() {
  const scope = toolScope();
  const root = scope.ctx.rootDir;
  mkdirSync(join(root, "src"));
  writeFileSync(join(root, "src/a.ts"), "const x = 1;\n// needle here\nconst y = 2;\n");
  writeFileSync(join(root, "notes.md"), "a needle\nnothing\n");
  const outside = tempRoot();
  writeFileSync(join(outside, "secret.txt"), "needle outside\n");
  symlinkSync(outside, join(root, "link"));
  return { ...scope, root, outside };
}

/** Whether a process is gone (or a zombie waiting for a reaper that may not exist in a container). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

describe("grep", () => {
  test("returns path:line:text for each matching line, paths relative to the root", async () => {
    const { ctx } = scene();
    const found = String(await callIn(ctx, grep, { pattern: "needle" }))
      .trim()
      .split("\n")
      .sort();
    expect(found).toEqual(["notes.md:1:a needle", "src/a.ts:2:// needle here"]);
  });

  test("searches only the given file or directory, with an extended regular expression", async () => {
    const { ctx } = scene();
    expect(await callIn(ctx, grep, { pattern: "const (x|y)", path: "src" })).toBe("src/a.ts:1:const x = 1;\nsrc/a.ts:3:const y = 2;\n");
    expect(await callIn(ctx, grep, { pattern: "needle", path: "notes.md" })).toBe("notes.md:1:a needle\n");
  });

  test("returns an empty string when nothing matches", async () => {
    const { ctx } = scene();
    expect(await callIn(ctx, grep, { pattern: "haystack" })).toBe("");
  });

  test("a pattern that looks like an option is searched for, not obeyed", async () => {
    const { ctx, root } = scene();
    writeFileSync(join(root, "flags.txt"), "use --version here\n");
    expect(await callIn(ctx, grep, { pattern: "--version" })).toBe("flags.txt:1:use --version here\n");
  });

  test("refuses ../, an absolute path outside and a symlink outside with TOOL_PATH_OUTSIDE_ROOT", async () => {
    const { ctx, outside } = scene();
    for (const path of [`../${basename(outside)}`, outside, "link", "link/secret.txt"]) {
      expect({ path, code: (await rejection(callIn(ctx, grep, { pattern: "needle", path }))).code }).toEqual({ path, code: "TOOL_PATH_OUTSIDE_ROOT" });
    }
  });

  test("an invalid regular expression fails with TOOL_FAILED", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn(ctx, grep, { pattern: "a(" }))).code).toBe("TOOL_FAILED");
  });
});

describe("bash", () => {
  test("runs an executable with arguments, without a shell, in the root, and returns its output", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, bash, { cmd: "echo", args: ["$HOME", "a;b"] })).toBe("$HOME a;b\n");
    expect(await callIn(ctx, bash, { cmd: "pwd" })).toBe(`${root}\n`);
  });

  test("runs in opts.cwd, a directory inside the root", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, bash, { cmd: "pwd", opts: { cwd: "src" } })).toBe(`${join(root, "src")}\n`);
  });

  test("captures stdout and stderr together", async () => {
    const { ctx } = scene();
    expect(await callIn(ctx, bash, { cmd: "sh", args: ["-c", "echo out; echo err >&2"] })).toBe("out\nerr\n");
  });

  test("a non-zero exit fails with TOOL_FAILED carrying the exit code and the output", async () => {
    const { ctx, dbPath } = scene();
    const error = await rejection(callIn(ctx, bash, { cmd: "sh", args: ["-c", "echo broken; exit 3"] }));
    expect(error.code).toBe("TOOL_FAILED");
    expect(error.message).toContain("exited with 3");
    expect(error.message).toContain("broken");
    expect(error.details?.exitCode).toBe(3);
    expect(sql(dbPath, "SELECT tool_name, status FROM _smithers_tool_calls")).toEqual([{ tool_name: "bash", status: "failed" }]);
  });

  test("an executable that does not exist fails with TOOL_FAILED", async () => {
    const { ctx } = scene();
    expect((await rejection(callIn(ctx, bash, { cmd: "no-such-program-smithers" }))).code).toBe("TOOL_FAILED");
  });

  test("output beyond maxOutputBytes is cut and says so", async () => {
    const { ctx } = scene();
    const out = String(await callIn({ ...ctx, maxOutputBytes: 5 }, bash, { cmd: "echo", args: ["abcdefghij"] }));
    expect(out).toBe("abcde\n[output truncated: 5 of 11 bytes shown]");
  });

  test("past toolTimeoutMs the whole process group is killed, grandchildren included, with TOOL_TIMEOUT", async () => {
    const { ctx, root } = scene();
    const started = Date.now();
    const script = "sleep 30 & echo $! > grandchild.pid; wait";
    const error = await rejection(callIn({ ...ctx, toolTimeoutMs: 300 }, bash, { cmd: "sh", args: ["-c", script] }));
    expect(error.code).toBe("TOOL_TIMEOUT");
    expect(Date.now() - started).toBeLessThan(5_000);
    const grandchild = Number(readFileSync(join(root, "grandchild.pid"), "utf8"));
    expect(grandchild).toBeGreaterThan(0);
    // The group's SIGKILL is sent before the error; on a loaded machine the grandchild may take a moment to die.
    await waitFor(() => gone(grandchild), 3_000);
  });

  test("a background process left behind is killed when the command exits", async () => {
    const { ctx, root } = scene();
    expect(await callIn(ctx, bash, { cmd: "sh", args: ["-c", "sleep 30 > /dev/null 2>&1 & echo $! > bg.pid; echo started"] })).toBe("started\n");
    // SIGKILL is delivered asynchronously: the process is gone within moments of the command's exit.
    const pid = Number(readFileSync(join(root, "bg.pid"), "utf8"));
    await waitFor(() => gone(pid), 2_000);
    expect(gone(pid)).toBe(true);
  });

  test("a stop of the attempt kills the running command", async () => {
    const { ctx } = scene();
    const controller = new AbortController();
    const running = callIn({ ...ctx, signal: controller.signal }, bash, { cmd: "sleep", args: ["30"] });
    setTimeout(() => controller.abort(), 100);
    expect((await rejection(running)).code).toBe("TASK_CANCELLED");
  });

  test("refuses a cwd reached by ../, an absolute path outside, or a symlink outside, with TOOL_PATH_OUTSIDE_ROOT", async () => {
    const { ctx, outside } = scene();
    for (const cwd of [`../${basename(outside)}`, outside, "link"]) {
      expect({ cwd, code: (await rejection(callIn(ctx, bash, { cmd: "pwd", opts: { cwd } }))).code }).toEqual({ cwd, code: "TOOL_PATH_OUTSIDE_ROOT" });
    }
  });
});

test("a tool's process still running when this process exits is killed with it", async () => {
  const module = join(import.meta.dir, "../../src/tools/process.ts");
  const pidFile = join(tempRoot(), "pid");
  const script = `import { runProcess } from ${JSON.stringify(module)};
    runProcess("sh", ["-c", "echo $$ > ${pidFile}; exec sleep 1000"], { toolName: "bash", cwd: "/", timeoutMs: 60000, maxOutputBytes: 1000 });
    setTimeout(() => process.exit(0), 300);`;
  expect(Bun.spawnSync([process.execPath, "-e", script]).exitCode).toBe(0);
  const pid = Number(readFileSync(pidFile, "utf8"));
  expect(pid).toBeGreaterThan(1);
  expect(await until(() => !processAlive(pid))).toBe(true);
});

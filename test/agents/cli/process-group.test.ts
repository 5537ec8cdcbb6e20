import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { endGroup, groupMembers, killLeftoverGroup, processAlive, processStartTime, spawnGroup } from "../../../src/agents/cli/index.ts";
import { until } from "./fake-cli.ts";

const MODULE = join(import.meta.dir, "../../../src/agents/cli/process-group.ts");

function stat(pid: number): string[] {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** A shell leading its own group with a `sleep` grandchild; resolves with both pids. */
async function groupWithGrandchild(script = "sleep 1000 & echo $!; wait") {
  const group = spawnGroup("sh", ["-c", script], { cwd: "/", env: { PATH: process.env.PATH ?? "" } });
  const grandchild = await new Promise<number>((resolve) => group.child.stdout.once("data", (d) => resolve(Number(String(d).trim()))));
  return { ...group, grandchild };
}

describe("spawnGroup", () => {
  test("starts the command as the leader of a new process group and session, with its start time", async () => {
    const { pid, grandchild, startTime } = await groupWithGrandchild();
    expect(stat(pid)[2]).toBe(String(pid)); // process group id
    expect(stat(pid)[3]).toBe(String(pid)); // session id
    expect(stat(grandchild)[2]).toBe(String(pid));
    expect(stat(process.pid)[2]).not.toBe(String(pid));
    expect(startTime).toBe(stat(pid)[19]);
    await endGroup(pid);
  });

  test("a group still running when this process exits is SIGKILLed then", async () => {
    const script = `import { spawnGroup } from ${JSON.stringify(MODULE)};
      const g = spawnGroup("sh", ["-c", "sleep 1000 & echo $!; wait"], { cwd: "/", env: { PATH: process.env.PATH } });
      g.child.stdout.once("data", (d) => { console.log(g.pid, String(d).trim()); process.exit(0); });`;
    const result = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 5000 });
    const [leader, grandchild] = result.stdout.trim().split(" ").map(Number);
    expect(leader).toBeGreaterThan(1);
    expect(await until(() => !processAlive(leader!) && !processAlive(grandchild!))).toBe(true);
  });
});

describe("endGroup", () => {
  test("ends every member with SIGTERM", async () => {
    const { pid, grandchild } = await groupWithGrandchild();
    await endGroup(pid);
    expect(processAlive(pid)).toBe(false);
    expect(processAlive(grandchild)).toBe(false);
  });

  test("SIGKILLs members that ignore SIGTERM once the grace has passed", async () => {
    const { pid, grandchild } = await groupWithGrandchild("trap '' TERM; sleep 1000 & echo $!; wait");
    const started = performance.now();
    await endGroup(pid, 200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(processAlive(grandchild)).toBe(false);
    expect(groupMembers(pid)).toEqual([]);
  });
});

describe("processStartTime", () => {
  test("reads field 22 of /proc/<pid>/stat, and undefined for no such process", () => {
    expect(processStartTime(process.pid)).toBe(stat(process.pid)[19]);
    expect(processStartTime(2 ** 30)).toBeUndefined();
  });
});

describe("killLeftoverGroup", () => {
  test("kills a live group whose leader has the recorded start time", async () => {
    const { pid, grandchild, startTime } = await groupWithGrandchild();
    expect(killLeftoverGroup(pid, startTime)).toBe(true);
    expect(await until(() => !processAlive(pid) && !processAlive(grandchild))).toBe(true);
    await endGroup(pid);
  });

  test("refuses a pid whose start time differs from the recorded one (a reused pid)", async () => {
    const { pid, grandchild, startTime } = await groupWithGrandchild();
    expect(killLeftoverGroup(pid, String(Number(startTime) - 1))).toBe(false);
    expect(processAlive(pid)).toBe(true);
    expect(processAlive(grandchild)).toBe(true);
    await endGroup(pid);
  });

  test("refuses a process that does not lead its group, a pid that does not exist, and this process", async () => {
    const { pid, grandchild } = await groupWithGrandchild();
    expect(killLeftoverGroup(grandchild, processStartTime(grandchild))).toBe(false);
    expect(processAlive(grandchild)).toBe(true);
    expect(killLeftoverGroup(2 ** 30, undefined)).toBe(false);
    expect(killLeftoverGroup(process.pid, undefined)).toBe(false);
    await endGroup(pid);
  });

  test("kills what is left of a group whose leader exited and was reaped (its grandchild runs on)", async () => {
    const { pid, grandchild, startTime, child } = await groupWithGrandchild("sleep 1000 & echo $!; exit 0");
    if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    expect(await until(() => !existsSync(`/proc/${pid}`))).toBe(true);
    expect(processAlive(grandchild)).toBe(true);
    expect(killLeftoverGroup(pid, startTime)).toBe(true);
    expect(await until(() => !processAlive(grandchild))).toBe(true);
  });

  test("refuses a group when no start time was recorded: a pid alone may name another process by now", async () => {
    const { pid, grandchild } = await groupWithGrandchild();
    expect(killLeftoverGroup(pid, undefined)).toBe(false);
    expect(processAlive(pid) && processAlive(grandchild)).toBe(true);
    await endGroup(pid);
  });
});

import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { newOwnerId, ownerAlive, ownerIdOf, ownerProcessAlive } from "../../src/engine/core/owner.ts";

/** `ownerId` with its process start time replaced (what a reused pid looks like). */
const withStart = (ownerId: string, start: string) => ownerId.slice(0, ownerId.lastIndexOf(".") + 1) + start;

describe("ownerProcessAlive", () => {
  test("a live process here with the owner's start time owns the run; once dead it does not", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    await Bun.sleep(50);
    const id = ownerIdOf(child.pid, "test");
    expect(ownerProcessAlive(id)).toBe(true);
    expect(ownerAlive(id, Date.now(), Date.now() + 3_600_000)).toBe(true); // an hour late, the heartbeat does not make it dead
    child.kill("SIGKILL");
    await child.exited;
    expect(ownerProcessAlive(id)).toBe(false);
    expect(ownerAlive(id, Date.now(), Date.now())).toBe(false); // a fresh heartbeat does not make it alive
  });

  test("a live process with the owner's pid but another start time reused the pid: not the owner", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    await Bun.sleep(50);
    try {
      expect(ownerProcessAlive(withStart(ownerIdOf(child.pid, "test"), "1"))).toBe(false);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  });

  test("this process owns only the runs it executes", () => {
    expect(ownerProcessAlive(newOwnerId())).toBe(false);
  });

  test("an owner with this hostname in another boot or namespace is judged by its heartbeat, even if its pid is alive here", () => {
    // pid 1 is alive in every pid namespace: in another container with this hostname it means another process.
    const elsewhere = `${hostname()}:1:test:0123456789abcdef.1`;
    expect(ownerProcessAlive(elsewhere)).toBeUndefined();
    expect(ownerAlive(elsewhere, Date.now() - 60_000, Date.now())).toBe(false);
  });

  test("an owner id without a place (host:pid:random, from an earlier version) is judged by its heartbeat", () => {
    const old = `${hostname()}:1:old`;
    expect(ownerProcessAlive(old)).toBeUndefined();
    expect(ownerAlive(old, Date.now(), Date.now())).toBe(true);
    expect(ownerAlive(old, Date.now() - 86_400_000, Date.now())).toBe(false);
  });

  test("an owner on another host is alive until it misses 4 of its own heartbeats", () => {
    const now = Date.now();
    expect(ownerProcessAlive("elsewhere:123:x")).toBeUndefined();
    expect(ownerAlive("elsewhere:123:x", now - 15_000, now)).toBe(true); // 5 s beats by default: 20 s
    expect(ownerAlive("elsewhere:123:x", now - 25_000, now)).toBe(false);
    expect(ownerAlive("elsewhere:123:x", now - 3_000, now, 500)).toBe(false); // 500 ms beats: 2 s
    expect(ownerAlive("elsewhere:123:x", now - 1_000, now, 500)).toBe(true);
    expect(ownerAlive(null, now, now)).toBe(false);
  });
});

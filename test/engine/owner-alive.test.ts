import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { ownerAlive, ownerProcessAlive } from "../../src/engine/run-setup.ts";

describe("ownerProcessAlive", () => {
  test("a live process on this host that started before the run's heartbeat owns it; a dead one does not", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    await Bun.sleep(50);
    const id = `${hostname()}:${child.pid}:test`;
    expect(ownerProcessAlive(id, Date.now())).toBe(true);
    expect(ownerAlive(id, Date.now(), Date.now() + 3_600_000)).toBe(true); // an hour late, the heartbeat does not make it dead
    child.kill("SIGKILL");
    await child.exited;
    expect(ownerProcessAlive(id, Date.now())).toBe(false);
    expect(ownerAlive(id, Date.now(), Date.now())).toBe(false); // a fresh heartbeat does not make it alive
  });

  test("a live process that started after the run's last heartbeat reused the pid: not the owner", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    await Bun.sleep(50);
    try {
      expect(ownerProcessAlive(`${hostname()}:${child.pid}:test`, Date.now() - 60_000)).toBe(false);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
  });

  test("an owner on another host cannot be judged here: the heartbeat's age decides", () => {
    expect(ownerProcessAlive("elsewhere:123:x", Date.now())).toBeUndefined();
    expect(ownerAlive("elsewhere:123:x", Date.now(), Date.now())).toBe(true);
    expect(ownerAlive("elsewhere:123:x", Date.now() - 60_000, Date.now())).toBe(false);
    expect(ownerAlive(null, Date.now(), Date.now())).toBe(false);
  });
});

import { describe, expect, test } from "bun:test";
import { abandonOpenSandboxes, getSandbox, listSandboxes, upsertSandbox } from "../../src/db/adapters/sandboxes.ts";
import { forEachBackend } from "./backends.ts";

forEachBackend((db) => {
  describe("upsertSandbox", () => {
    test("inserts a sandbox with the default runtime and status", async () => {
      await upsertSandbox(db(), { runId: "r1", sandboxId: "sb1", configJson: '{"net":false}' });
      expect(await getSandbox(db(), "r1", "sb1")).toEqual({
        runId: "r1",
        sandboxId: "sb1",
        runtime: "bubblewrap",
        remoteRunId: null,
        workspaceId: null,
        containerId: null,
        configJson: '{"net":false}',
        status: "pending",
        heartbeatAtMs: null,
        shippedAtMs: null,
        completedAtMs: null,
        bundlePath: null,
        nodeId: null,
        iteration: null,
        attempt: null,
        rootDir: null,
        pid: null,
        startedAtMs: null,
        exitCode: null,
        errorText: null,
      });
    });

    test("updates by (runId, sandboxId), keeping fields left undefined", async () => {
      await upsertSandbox(db(), { runId: "r1", sandboxId: "sb1", runtime: "docker", configJson: "{}", containerId: "c-1" });
      await upsertSandbox(db(), { runId: "r1", sandboxId: "sb1", configJson: "{}", status: "shipped", shippedAtMs: 50, bundlePath: "/b.tar" });
      await upsertSandbox(db(), { runId: "r1", sandboxId: "sb1", configJson: "{}", status: "completed", completedAtMs: 90 });
      const row = await getSandbox(db(), "r1", "sb1");
      expect([row?.runtime, row?.containerId, row?.status, row?.shippedAtMs, row?.completedAtMs, row?.bundlePath]).toEqual([
        "docker",
        "c-1",
        "completed",
        50,
        90,
        "/b.tar",
      ]);
      expect(await listSandboxes(db(), "r1")).toHaveLength(1);
    });

    test("the same sandbox id in two runs is two sandboxes", async () => {
      await upsertSandbox(db(), { runId: "r1", sandboxId: "sb1", configJson: "{}", status: "running" });
      await upsertSandbox(db(), { runId: "r2", sandboxId: "sb1", configJson: "{}" });
      expect((await getSandbox(db(), "r1", "sb1"))?.status).toBe("running");
      expect((await getSandbox(db(), "r2", "sb1"))?.status).toBe("pending");
    });
  });

  describe("getSandbox", () => {
    test("is undefined for an unknown sandbox", async () => {
      expect(await getSandbox(db(), "r1", "nope")).toBeUndefined();
    });
  });

  describe("listSandboxes", () => {
    test("lists one run's sandboxes by id", async () => {
      await upsertSandbox(db(), { runId: "r1", sandboxId: "b", configJson: "{}" });
      await upsertSandbox(db(), { runId: "r1", sandboxId: "a", configJson: "{}" });
      await upsertSandbox(db(), { runId: "r2", sandboxId: "c", configJson: "{}" });
      expect((await listSandboxes(db(), "r1")).map((s) => s.sandboxId)).toEqual(["a", "b"]);
    });
  });

  describe("abandonOpenSandboxes", () => {
    test("closes only the run's running sessions as abandoned with the reason and returns their dirs", async () => {
      await upsertSandbox(db(), { runId: "r1", sandboxId: "a", configJson: "{}", status: "running", rootDir: "/tmp/a", pid: 7 });
      await upsertSandbox(db(), { runId: "r1", sandboxId: "b", configJson: "{}", status: "finished", exitCode: 0, completedAtMs: 5 });
      await upsertSandbox(db(), { runId: "r2", sandboxId: "c", configJson: "{}", status: "running" });
      const closed = await db().write("test", (q) => abandonOpenSandboxes(q, "r1", 99, "TASK_ABANDONED: gone"));
      expect(closed).toEqual([{ sandboxId: "a", rootDir: "/tmp/a" }]);
      const a = await getSandbox(db(), "r1", "a");
      expect([a?.status, a?.completedAtMs, a?.exitCode, a?.errorText, a?.pid]).toEqual(["abandoned", 99, null, "TASK_ABANDONED: gone", 7]);
      expect((await getSandbox(db(), "r1", "b"))?.status).toBe("finished");
      expect((await getSandbox(db(), "r2", "c"))?.status).toBe("running");
    });
  });
});

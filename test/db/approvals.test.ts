import { describe, expect, test } from "bun:test";
import { decideApproval, getApproval, listApprovals, requestApproval } from "../../src/db/adapters/approvals.ts";
import { forEachBackend } from "./backends.ts";

forEachBackend((db) => {
  describe("requestApproval", () => {
    test("opens the gate as requested and returns the row", async () => {
      const row = await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10, request: { env: "prod" } });
      expect(row).toEqual({
        runId: "r1",
        nodeId: "deploy",
        iteration: 0,
        status: "requested",
        requestedAtMs: 10,
        decidedAtMs: null,
        note: null,
        decidedBy: null,
        requestJson: '{"env":"prod"}',
        decisionJson: null,
        autoApproved: false,
      });
    });

    test("requesting again keeps the first request", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10 });
      const again = await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 99 });
      expect(again.requestedAtMs).toBe(10);
    });

    test("a decided gate is not reopened by a later request", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10 });
      await decideApproval(db(), { runId: "r1", nodeId: "deploy", approved: true, decidedAtMs: 20 });
      const again = await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 30 });
      expect(again.status).toBe("approved");
    });

    test("each loop iteration has its own gate", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", iteration: 0, requestedAtMs: 10 });
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", iteration: 1, requestedAtMs: 11 });
      expect((await listApprovals(db(), { runId: "r1" })).map((r) => r.iteration)).toEqual([0, 1]);
    });
  });

  describe("getApproval", () => {
    test("is undefined when no gate was requested", async () => {
      expect(await getApproval(db(), { runId: "r1", nodeId: "x" })).toBeUndefined();
    });
  });

  describe("decideApproval", () => {
    test("approves a requested gate with who, when, note and decision payload", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10 });
      const changed = await decideApproval(db(), {
        runId: "r1",
        nodeId: "deploy",
        approved: true,
        decidedAtMs: 20,
        decidedBy: "ana",
        note: "ship it",
        decision: { ticket: 7 },
      });
      expect(changed).toBe(true);
      const row = await getApproval(db(), { runId: "r1", nodeId: "deploy" });
      expect([row?.status, row?.decidedAtMs, row?.decidedBy, row?.note, row?.decisionJson, row?.autoApproved]).toEqual([
        "approved",
        20,
        "ana",
        "ship it",
        '{"ticket":7}',
        false,
      ]);
    });

    test("a denial records status denied", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10 });
      await decideApproval(db(), { runId: "r1", nodeId: "deploy", approved: false, decidedAtMs: 20, autoApproved: true });
      const row = await getApproval(db(), { runId: "r1", nodeId: "deploy" });
      expect([row?.status, row?.autoApproved]).toEqual(["denied", true]);
    });

    test("a gate is decided once: a second decision changes nothing", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "deploy", requestedAtMs: 10 });
      expect(await decideApproval(db(), { runId: "r1", nodeId: "deploy", approved: false, decidedAtMs: 20 })).toBe(true);
      expect(await decideApproval(db(), { runId: "r1", nodeId: "deploy", approved: true, decidedAtMs: 30 })).toBe(false);
      expect((await getApproval(db(), { runId: "r1", nodeId: "deploy" }))?.status).toBe("denied");
    });

    test("deciding a gate that was never requested changes nothing", async () => {
      expect(await decideApproval(db(), { runId: "r1", nodeId: "deploy", approved: true, decidedAtMs: 1 })).toBe(false);
    });
  });

  describe("listApprovals", () => {
    test("filters by run and by status", async () => {
      await requestApproval(db(), { runId: "r1", nodeId: "a", requestedAtMs: 1 });
      await requestApproval(db(), { runId: "r1", nodeId: "b", requestedAtMs: 1 });
      await requestApproval(db(), { runId: "r2", nodeId: "a", requestedAtMs: 1 });
      await decideApproval(db(), { runId: "r1", nodeId: "b", approved: true, decidedAtMs: 2 });
      const key = (r: { runId: string; nodeId: string }) => `${r.runId}/${r.nodeId}`;
      expect((await listApprovals(db())).map(key)).toEqual(["r1/a", "r1/b", "r2/a"]);
      expect((await listApprovals(db(), { status: "requested" })).map(key)).toEqual(["r1/a", "r2/a"]);
      expect((await listApprovals(db(), { runId: "r1", status: "approved" })).map(key)).toEqual(["r1/b"]);
    });
  });
});

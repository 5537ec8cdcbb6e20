import { describe, expect, test } from "bun:test";
import {
  answerHumanRequest,
  cancelHumanRequest,
  createHumanRequest,
  expireHumanRequests,
  getHumanRequest,
  listHumanRequestsForRun,
  listPendingHumanRequests,
  type NewHumanRequest,
} from "../../src/db/adapters/human-requests.ts";
import { insertRun } from "../../src/db/adapters/runs.ts";
import { smithersNodes } from "../../src/db/index.ts";
import { forEachBackend } from "./backends.ts";

const request = (requestId: string, overrides: Partial<NewHumanRequest> = {}): NewHumanRequest => ({
  requestId,
  runId: "r1",
  nodeId: "review",
  iteration: 0,
  kind: "confirm",
  prompt: `Approve ${requestId}?`,
  requestedAtMs: 1_000,
  ...overrides,
});

forEachBackend((db) => {
  describe("createHumanRequest", () => {
    test("stores the request as pending with no answer", async () => {
      await createHumanRequest(db(), request("h1", { schemaJson: '{"type":"object"}', timeoutAtMs: 5_000 }));
      expect(await getHumanRequest(db(), "h1")).toEqual({
        requestId: "h1",
        runId: "r1",
        nodeId: "review",
        iteration: 0,
        kind: "confirm",
        status: "pending",
        prompt: "Approve h1?",
        schemaJson: '{"type":"object"}',
        optionsJson: null,
        responseJson: null,
        requestedAtMs: 1_000,
        answeredAtMs: null,
        answeredBy: null,
        timeoutAtMs: 5_000,
      });
    });
  });

  describe("getHumanRequest", () => {
    test("is undefined for an unknown id", async () => {
      expect(await getHumanRequest(db(), "nope")).toBeUndefined();
    });
  });

  describe("listHumanRequestsForRun", () => {
    test("lists a run's requests in every state, oldest first", async () => {
      await createHumanRequest(db(), request("h2", { requestedAtMs: 2_000 }));
      await createHumanRequest(db(), request("h1", { requestedAtMs: 1_000 }));
      await createHumanRequest(db(), request("x", { runId: "r2" }));
      await cancelHumanRequest(db(), "h2");
      const rows = await listHumanRequestsForRun(db(), "r1");
      expect(rows.map((r) => [r.requestId, r.status])).toEqual([
        ["h1", "pending"],
        ["h2", "cancelled"],
      ]);
    });
  });

  describe("listPendingHumanRequests", () => {
    test("joins workflow name, run status and node label, and tolerates a missing run or node", async () => {
      await insertRun(db(), { runId: "r1", workflowName: "triage", status: "waiting-event", createdAtMs: 1 });
      db()
        .db.insert(smithersNodes)
        .values({ runId: "r1", nodeId: "review", iteration: 0, state: "waiting", updatedAtMs: 1, outputTable: "review", label: "Human review" })
        .run();
      await createHumanRequest(db(), request("h1"));
      await createHumanRequest(db(), request("h2", { runId: "ghost", requestedAtMs: 2_000 }));
      const rows = await listPendingHumanRequests(db(), 1_500);
      expect(rows.map((r) => [r.requestId, r.workflowName, r.runStatus, r.nodeLabel])).toEqual([
        ["h1", "triage", "waiting-event", "Human review"],
        ["h2", null, null, null],
      ]);
      expect(rows[0]?.prompt).toBe("Approve h1?");
    });

    test("expires overdue pending requests first and leaves them out", async () => {
      await createHumanRequest(db(), request("due", { timeoutAtMs: 2_000 }));
      await createHumanRequest(db(), request("later", { timeoutAtMs: 9_000 }));
      await createHumanRequest(db(), request("never"));
      const rows = await listPendingHumanRequests(db(), 2_000);
      expect(rows.map((r) => r.requestId)).toEqual(["later", "never"]);
      expect((await getHumanRequest(db(), "due"))?.status).toBe("expired");
      expect((await getHumanRequest(db(), "later"))?.status).toBe("pending");
    });

    test("does not list answered or cancelled requests", async () => {
      await createHumanRequest(db(), request("a"));
      await createHumanRequest(db(), request("c"));
      await createHumanRequest(db(), request("p"));
      await answerHumanRequest(db(), { requestId: "a", response: true, answeredAtMs: 2 });
      await cancelHumanRequest(db(), "c");
      expect((await listPendingHumanRequests(db(), 3)).map((r) => r.requestId)).toEqual(["p"]);
    });
  });

  describe("expireHumanRequests", () => {
    test("expires only pending requests whose timeout has passed and returns how many", async () => {
      await createHumanRequest(db(), request("due", { timeoutAtMs: 100 }));
      await createHumanRequest(db(), request("answered", { timeoutAtMs: 100 }));
      await answerHumanRequest(db(), { requestId: "answered", response: 1, answeredAtMs: 50 });
      await createHumanRequest(db(), request("open", { timeoutAtMs: 10_000 }));
      expect(await expireHumanRequests(db(), 500)).toBe(1);
      expect((await getHumanRequest(db(), "answered"))?.status).toBe("answered");
      expect((await getHumanRequest(db(), "open"))?.status).toBe("pending");
    });
  });

  describe("answerHumanRequest", () => {
    test("stores response, time and answerer on a pending request", async () => {
      await createHumanRequest(db(), request("h1"));
      const changed = await answerHumanRequest(db(), {
        requestId: "h1",
        response: { choice: "yes" },
        answeredAtMs: 2_000,
        answeredBy: "ana",
      });
      expect(changed).toBe(true);
      const row = await getHumanRequest(db(), "h1");
      expect([row?.status, row?.responseJson, row?.answeredAtMs, row?.answeredBy]).toEqual(["answered", '{"choice":"yes"}', 2_000, "ana"]);
    });

    test("does not answer twice: the second answer changes nothing", async () => {
      await createHumanRequest(db(), request("h1"));
      await answerHumanRequest(db(), { requestId: "h1", response: "first", answeredAtMs: 2 });
      expect(await answerHumanRequest(db(), { requestId: "h1", response: "second", answeredAtMs: 3 })).toBe(false);
      expect((await getHumanRequest(db(), "h1"))?.responseJson).toBe('"first"');
    });

    test("cannot answer a cancelled or expired request", async () => {
      await createHumanRequest(db(), request("c"));
      await createHumanRequest(db(), request("e", { timeoutAtMs: 10 }));
      await cancelHumanRequest(db(), "c");
      await expireHumanRequests(db(), 10);
      expect(await answerHumanRequest(db(), { requestId: "c", response: 1, answeredAtMs: 20 })).toBe(false);
      expect(await answerHumanRequest(db(), { requestId: "e", response: 1, answeredAtMs: 20 })).toBe(false);
      expect((await getHumanRequest(db(), "e"))?.responseJson).toBeNull();
    });

    test("of two concurrent answers exactly one wins", async () => {
      await createHumanRequest(db(), request("h1"));
      const results = await Promise.all([
        answerHumanRequest(db(), { requestId: "h1", response: "a", answeredAtMs: 2 }),
        answerHumanRequest(db(), { requestId: "h1", response: "b", answeredAtMs: 2 }),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("cancelHumanRequest", () => {
    test("cancels a pending request once and never an answered one", async () => {
      await createHumanRequest(db(), request("p"));
      await createHumanRequest(db(), request("a"));
      await answerHumanRequest(db(), { requestId: "a", response: 1, answeredAtMs: 2 });
      expect(await cancelHumanRequest(db(), "p")).toBe(true);
      expect(await cancelHumanRequest(db(), "p")).toBe(false);
      expect(await cancelHumanRequest(db(), "a")).toBe(false);
      expect(await cancelHumanRequest(db(), "unknown")).toBe(false);
      expect((await getHumanRequest(db(), "p"))?.status).toBe("cancelled");
      expect((await getHumanRequest(db(), "a"))?.status).toBe("answered");
    });
  });
});

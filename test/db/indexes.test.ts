/**
 * Every filtered lookup an adapter makes must be answered through an index: the statements the
 * adapters prepare are recorded, and SQLite's query plan for each must SEARCH, never SCAN, the
 * `_smithers_*` tables it touches.
 */
import { describe, expect, test } from "bun:test";
import { approvals, cache, cron, events, humanRequests, runs, sandboxes, scorers, signals, SmithersDb, toolCalls, vectors } from "../../src/db/index.ts";

type PlanRow = { detail: string };

async function exerciseAdapters(db: SmithersDb): Promise<void> {
  const runId = "r1";
  await runs.listStaleRuns(db, { nowMs: 100_000 });
  await runs.claimRunForResume(db, { runId, expectedOwnerId: "a", expectedHeartbeatAtMs: 1, claimOwnerId: "b", nowMs: 100_000 });
  await runs.releaseRunResumeClaim(db, { runId, claimOwnerId: "b", restoreOwnerId: "a", restoreHeartbeatAtMs: 1 });
  await events.insertEvent(db, { runId, timestampMs: 1, type: "T", payloadJson: "{}" });
  await events.listEventHistory(db, { runId, afterSeq: 0, nodeId: "n", types: ["T"], sinceTimestampMs: 0, limit: 5 });
  await events.countEventHistory(db, { runId, types: ["T"] });
  await signals.insertSignal(db, { runId, signalName: "s", payloadJson: "{}", receivedAtMs: 1 });
  await signals.querySignals(db, { runId, signalName: "s", correlationId: null, receivedAfterMs: 0 });
  await humanRequests.createHumanRequest(db, { requestId: "h", runId, nodeId: "n", kind: "confirm", prompt: "?", requestedAtMs: 1 });
  await humanRequests.listPendingHumanRequests(db, 5);
  await humanRequests.listHumanRequestsForRun(db, runId);
  await humanRequests.answerHumanRequest(db, { requestId: "h", response: 1, answeredAtMs: 2 });
  await humanRequests.cancelHumanRequest(db, "h");
  await approvals.requestApproval(db, { runId, nodeId: "n", requestedAtMs: 1 });
  await approvals.decideApproval(db, { runId, nodeId: "n", approved: true, decidedAtMs: 2 });
  await approvals.listApprovals(db, { status: "requested" });
  await approvals.listApprovals(db, { runId });
  await cron.listCrons(db, true);
  await cron.updateCronRunTime(db, "c", 1, 2);
  await cron.listDueCrons(db, 1, 10);
  await cron.claimCronSlot(db, { cronId: "c", expectedNextRunAtMs: 1, slotMs: 1, runId: "cron:c:1", nextRunAtMs: 2, skipped: 0 });
  await cron.setCronError(db, "c", "{}");
  await cron.deleteCron(db, "c");
  await sandboxes.upsertSandbox(db, { runId, sandboxId: "sb", configJson: "{}" });
  await sandboxes.listSandboxes(db, runId);
  const seq = await toolCalls.startToolCall(db, { runId, nodeId: "n", attempt: 1, toolName: "t", startedAtMs: 1, idempotencyKey: "k" });
  await toolCalls.finishToolCall(db, { runId, nodeId: "n", attempt: 1, seq, finishedAtMs: 2, output: 1 });
  await toolCalls.findToolCallByIdempotencyKey(db, "k");
  await toolCalls.listToolCalls(db, { runId, nodeId: "n" });
  await cache.getCache(db, "key");
  await cache.deleteCache(db, { workflowName: "wf", nodeId: "n" });
  await scorers.listScores(db, { runId, nodeId: "n", iteration: 0 });
  await vectors.listVectors(db, { namespace: "ns", documentId: "d" });
  await vectors.searchVectors(db, { namespace: "ns", embedding: new Float32Array([1]) });
  await vectors.deleteVectors(db, { namespace: "ns" });
}

describe("internalTables", () => {
  test("every filtered query the adapters make searches an index instead of scanning a table", async () => {
    const db = new SmithersDb(":memory:");
    const statements = new Set<string>();
    const prepare = db.sqlite.prepare.bind(db.sqlite);
    db.sqlite.prepare = ((sql: string, ...rest: unknown[]) => {
      statements.add(sql);
      return (prepare as (...args: unknown[]) => unknown)(sql, ...rest);
    }) as typeof db.sqlite.prepare;
    try {
      await exerciseAdapters(db);
      const lookups = [...statements].filter((sql) => /^\s*(select|update|delete)/i.test(sql));
      expect(lookups.length).toBeGreaterThan(25);
      const scans = lookups.flatMap((sql) =>
        (prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as PlanRow[])
          .filter((row) => /^SCAN "?_smithers_/.test(row.detail))
          .map((row) => `${row.detail}  <-  ${sql}`),
      );
      expect(scans).toEqual([]);
    } finally {
      await db.close();
    }
  });
});

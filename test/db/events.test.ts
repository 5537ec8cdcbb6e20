import { describe, expect, test } from "bun:test";
import { countEventHistory, insertEvent, insertEvents, insertEventsIn, lastEventSeq, listEventHistory, type NewEvent } from "../../src/db/adapters/events.ts";
import { smithersEvents } from "../../src/db/index.ts";
import { rejection } from "../helpers.ts";
import { forEachBackend } from "./backends.ts";

const event = (runId: string, timestampMs: number, type: string, payload: Record<string, unknown> = {}): NewEvent => ({
  runId,
  timestampMs,
  type,
  payloadJson: JSON.stringify({ type, runId, timestampMs, ...payload }),
});

forEachBackend((db) => {
  async function seedHistory(): Promise<void> {
    await insertEvents(db(), [
      event("r1", 100, "RunStarted"),
      event("r1", 110, "NodeStarted", { nodeId: "a" }),
      event("r1", 120, "NodeStarted", { nodeId: "b" }),
      event("r1", 130, "NodeFinished", { nodeId: "a" }),
      event("r1", 140, "NodeFailed", { nodeId: "b" }),
      event("r1", 150, "RunFailed"),
      event("r2", 105, "RunStarted"),
    ]);
  }

  describe("insertEvent", () => {
    test("the first event of a run gets seq 0 and each next one MAX+1", async () => {
      expect(await insertEvent(db(), event("r1", 1, "A"))).toBe(0);
      expect(await insertEvent(db(), event("r1", 2, "B"))).toBe(1);
      expect(await insertEvent(db(), event("r1", 3, "C"))).toBe(2);
      const rows = db().db.select().from(smithersEvents).all();
      expect(rows.map((r) => [r.seq, r.type])).toEqual([
        [0, "A"],
        [1, "B"],
        [2, "C"],
      ]);
    });

    test("seqs are numbered per run", async () => {
      await insertEvent(db(), event("r1", 1, "A"));
      await insertEvent(db(), event("r1", 2, "B"));
      expect(await insertEvent(db(), event("r2", 3, "A"))).toBe(0);
    });

    test("an identical event returns the existing seq and stores no second row", async () => {
      await insertEvent(db(), event("r1", 1, "A"));
      const first = await insertEvent(db(), event("r1", 2, "B", { x: 1 }));
      const again = await insertEvent(db(), event("r1", 2, "B", { x: 1 }));
      expect(again).toBe(first);
      expect(db().db.select().from(smithersEvents).all()).toHaveLength(2);
    });

    test("events differing only in payload are both stored", async () => {
      expect(await insertEvent(db(), event("r1", 1, "A", { x: 1 }))).toBe(0);
      expect(await insertEvent(db(), event("r1", 1, "A", { x: 2 }))).toBe(1);
    });

    test("many concurrent inserts get distinct, gap-free seqs", async () => {
      const seqs = await Promise.all(Array.from({ length: 50 }, (_, i) => insertEvent(db(), event("r1", i, "E"))));
      expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    });

    test("inside an open transaction the insert joins it and rolls back with it", async () => {
      const failure = db().withTransaction("outer", async () => {
        await insertEvent(db(), event("r1", 1, "A"));
        throw new Error("boom");
      });
      expect((await rejection<Error>(failure)).message).toBe("boom");
      expect(db().db.select().from(smithersEvents).all()).toEqual([]);
    });
  });

  describe("insertEvents", () => {
    test("a batch gets consecutive seqs after the stored ones, in input order", async () => {
      await insertEvent(db(), event("r1", 1, "A"));
      const seqs = await insertEvents(db(), [event("r1", 2, "B"), event("r2", 2, "B"), event("r1", 3, "C")]);
      expect(seqs).toEqual([1, 0, 2]);
    });

    test("duplicates inside a batch and against stored rows are stored once", async () => {
      await insertEvent(db(), event("r1", 1, "A"));
      const seqs = await insertEvents(db(), [event("r1", 1, "A"), event("r1", 2, "B"), event("r1", 2, "B")]);
      expect(seqs).toEqual([0, 1, 1]);
      expect(db().db.select().from(smithersEvents).all()).toHaveLength(2);
    });

    test("insertEventsIn with dedupe: false stores identical events as separate rows, seqs gap-free", async () => {
      await insertEvent(db(), event("r1", 1, "A"));
      const seqs = await db().withTransaction("t", (d) => insertEventsIn(d, [event("r1", 1, "A"), event("r1", 1, "A")], { dedupe: false }));
      expect(seqs).toEqual([1, 2]);
      expect(
        db()
          .db.select()
          .from(smithersEvents)
          .all()
          .map((r) => r.seq),
      ).toEqual([0, 1, 2]);
    });

    test("an empty batch writes nothing", async () => {
      expect(await insertEvents(db(), [])).toEqual([]);
    });
  });

  describe("listEventHistory", () => {
    test("returns a run's events in seq order", async () => {
      await seedHistory();
      const rows = await listEventHistory(db(), { runId: "r1" });
      expect(rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(rows[0]).toEqual({ seq: 0, ...event("r1", 100, "RunStarted") });
    });

    test("afterSeq returns only later events", async () => {
      await seedHistory();
      expect((await listEventHistory(db(), { runId: "r1", afterSeq: 3 })).map((r) => r.seq)).toEqual([4, 5]);
    });

    test("limit caps the page from the start", async () => {
      await seedHistory();
      expect((await listEventHistory(db(), { runId: "r1", afterSeq: 0, limit: 2 })).map((r) => r.seq)).toEqual([1, 2]);
    });

    test("nodeId matches $.nodeId in the payload", async () => {
      await seedHistory();
      expect((await listEventHistory(db(), { runId: "r1", nodeId: "b" })).map((r) => r.type)).toEqual(["NodeStarted", "NodeFailed"]);
    });

    test("types keeps only the listed types, and an empty list matches nothing", async () => {
      await seedHistory();
      const rows = await listEventHistory(db(), { runId: "r1", types: ["RunStarted", "RunFailed"] });
      expect(rows.map((r) => r.seq)).toEqual([0, 5]);
      expect(await listEventHistory(db(), { runId: "r1", types: [] })).toEqual([]);
    });

    test("sinceTimestampMs includes events at that instant", async () => {
      await seedHistory();
      expect((await listEventHistory(db(), { runId: "r1", sinceTimestampMs: 130 })).map((r) => r.seq)).toEqual([3, 4, 5]);
    });

    test("filters combine", async () => {
      await seedHistory();
      const rows = await listEventHistory(db(), {
        runId: "r1",
        afterSeq: 0,
        nodeId: "a",
        types: ["NodeFinished", "NodeStarted"],
        sinceTimestampMs: 115,
      });
      expect(rows.map((r) => r.seq)).toEqual([3]);
    });
  });

  describe("countEventHistory", () => {
    test("counts with the same filters as the history query", async () => {
      await seedHistory();
      expect(await countEventHistory(db(), { runId: "r1" })).toBe(6);
      expect(await countEventHistory(db(), { runId: "r1", afterSeq: 3 })).toBe(2);
      expect(await countEventHistory(db(), { runId: "r1", nodeId: "a" })).toBe(2);
      expect(await countEventHistory(db(), { runId: "r1", types: ["NodeStarted"] })).toBe(2);
      expect(await countEventHistory(db(), { runId: "r1", sinceTimestampMs: 140 })).toBe(2);
      expect(await countEventHistory(db(), { runId: "nope" })).toBe(0);
    });
  });

  describe("lastEventSeq", () => {
    test("is -1 for a run without events and the highest seq otherwise", async () => {
      expect(await lastEventSeq(db(), "r1")).toBe(-1);
      await seedHistory();
      expect(await lastEventSeq(db(), "r1")).toBe(5);
    });
  });
});

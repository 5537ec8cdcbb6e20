import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { insertEvent } from "../../src/db/adapters/events.ts";
import { openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { EventBus, openEventBus, payloadJsonOf, type BusEvent } from "../../src/engine/run/event-bus.ts";
import { onPostgres, query, refuseInserts, rejection, tablesReady, tempDbPath } from "../helpers.ts";

let dbPath: string;
let db: SmithersDb;
beforeEach(async () => {
  dbPath = tempDbPath();
  db = openSmithersDb(dbPath);
  await tablesReady(db);
});
afterEach(() => db.close());

const ev = (type: string, extra: Record<string, unknown> = {}): BusEvent => ({ type, runId: "r1", timestampMs: 100, ...extra });
const stored = async () =>
  (await query<{ seq: number; type: string; payload_json: string }>(dbPath, "SELECT seq, type, payload_json FROM _smithers_events ORDER BY run_id, seq")).map(
    (r) => [r.seq, r.type, JSON.parse(r.payload_json)],
  );

describe("EventBus.stage", () => {
  test("staged events are stored by the caller's transaction and heard only after it commits, in seq order", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    const heard: [number, string][] = [];
    bus.on((event, seq) => heard.push([seq, event.type]));
    expect(bus.stage(ev("A"))).toBe(0);
    expect(bus.stage(ev("B"))).toBe(1);
    expect(heard).toEqual([]);
    await db.withTransaction("t", async (q) => {
      await bus.writeStagedIn(q);
      expect(heard).toEqual([]);
    });
    expect(heard).toEqual([
      [0, "A"],
      [1, "B"],
    ]);
    expect((await stored()).map((r) => [r[0], r[1]])).toEqual([
      [0, "A"],
      [1, "B"],
    ]);
    expect(bus.stagedCount).toBe(0);
  });

  test("a transaction that rolls back leaves staged events for the next one, and events staged inside it are taken back", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    bus.stage(ev("A"));
    await db
      .withTransaction("t", async (q) => {
        bus.stageInTransaction(ev("Inside"));
        await bus.writeStagedIn(q);
        throw new Error("boom");
      })
      .catch(() => undefined);
    expect(await stored()).toEqual([]);
    expect(bus.stagedCount).toBe(1);
    expect(bus.seq).toBe(1);
    await bus.flushStaged();
    expect((await stored()).map((r) => [r[0], r[1]])).toEqual([[0, "A"]]);
  });
});

describe("EventBus.emitEventQueued", () => {
  test("calls listeners at once, in order, with increasing seqs, before anything is stored", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    const heard: [number, string][] = [];
    bus.on((event, seq) => heard.push([seq, event.type]));
    expect(bus.emitEventQueued(ev("A"))).toBe(0);
    expect(bus.emitEventQueued(ev("B"))).toBe(1);
    expect(heard).toEqual([
      [0, "A"],
      [1, "B"],
    ]);
    // A read in the same tick, before the background write: only SQLite answers synchronously.
    if (!onPostgres) expect(await stored()).toEqual([]);
  });

  test("persists the event once flushed: run, type and time as columns, the rest as payload_json", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    bus.emitEventQueued(ev("NodeStarted", { nodeId: "a", attempt: 1 }));
    await bus.flush();
    expect(await stored()).toEqual([[0, "NodeStarted", { nodeId: "a", attempt: 1 }]]);
    expect(await query(dbPath, "SELECT run_id, timestamp_ms FROM _smithers_events")).toEqual([{ run_id: "r1", timestamp_ms: 100 }]);
  });

  test("a burst of queued events is stored completely and in emit order", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    for (let i = 0; i < 1_200; i++) bus.emitEventQueued(ev("Tick", { i }));
    await bus.flush();
    const rows = await stored();
    expect(rows).toHaveLength(1_200);
    expect(rows.map((r) => (r[2] as { i: number }).i)).toEqual(rows.map((r) => r[0]));
  });

  test("a throwing listener is reported and neither stops other listeners nor persistence", async () => {
    const reported: unknown[] = [];
    const bus = new EventBus({ db, runId: "r1", onListenerError: (e) => reported.push(e) });
    const heard: string[] = [];
    bus.on(() => {
      throw new Error("bad listener");
    });
    bus.on((e) => heard.push(e.type));
    bus.emitEventQueued(ev("A"));
    await bus.flush();
    expect([heard, (reported[0] as Error).message, (await stored()).length]).toEqual([["A"], "bad listener", 1]);
  });

  test("an unsubscribed listener hears nothing more", () => {
    const bus = new EventBus({ db, runId: "r1" });
    const heard: string[] = [];
    const off = bus.on((e) => heard.push(e.type));
    bus.emitEventQueued(ev("A"));
    off();
    bus.emitEventQueued(ev("B"));
    expect(heard).toEqual(["A"]);
  });

  test("with persist: false events reach listeners but never the database", async () => {
    const bus = new EventBus({ db, runId: "r1", persist: false });
    const heard: string[] = [];
    bus.on((e) => heard.push(e.type));
    bus.emitEventQueued(ev("A"));
    await bus.flush();
    expect([heard, await stored()]).toEqual([["A"], []]);
  });
});

describe("EventBus.emit", () => {
  test("resolves after the event and everything queued before it is stored", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    bus.emitEventQueued(ev("A"));
    expect(await bus.emit(ev("B"))).toBe(1);
    expect((await stored()).map((r) => r[1])).toEqual(["A", "B"]);
  });

  test("inside a transaction the event is stored with it, and rolled back with it", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    const failed = db.withTransaction("tx", async () => {
      await bus.emit(ev("A"));
      throw new Error("boom");
    });
    expect((await rejection<Error>(failed)).message).toBe("boom");
    expect(await stored()).toEqual([]);
    await db.withTransaction("tx2", () => bus.emit(ev("B")));
    expect((await stored()).map((r) => r[1])).toEqual(["B"]);
  });
});

describe("EventBus.flush", () => {
  test("surfaces a persistence failure once, and later events are still stored", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    bus.emitEventQueued(ev("A"));
    await bus.flush();
    await refuseInserts(dbPath, "_smithers_events", "NEW.type = 'B'");
    bus.emitEventQueued(ev("B"));
    expect((await rejection<Error>(bus.flush())).message).toContain("_smithers_events refused");
    await bus.flush();
    bus.emitEventQueued(ev("C"));
    await bus.flush();
    expect((await stored()).map((r) => r[1])).toEqual(["A", "C"]);
  });

  test("rejects with DB_CLOSED when the database closed under queued events", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    await db.close();
    bus.emitEventQueued(ev("A"));
    let error: unknown;
    try {
      await bus.flush();
    } catch (e) {
      error = e;
    }
    expect(SmithersError.is(error, "DB_CLOSED")).toBe(true);
  });

  test("with nothing queued resolves at once", async () => {
    await new EventBus({ db, runId: "r1" }).flush();
    expect(await stored()).toEqual([]);
  });
});

describe("EventBus", () => {
  test("startSeq continues numbering after the events already stored", async () => {
    await insertEvent(db, { runId: "r1", timestampMs: 1, type: "RunStarted", payloadJson: "{}" });
    await insertEvent(db, { runId: "r1", timestampMs: 2, type: "NodeStarted", payloadJson: "{}" });
    const bus = new EventBus({ db, runId: "r1", startSeq: 2 });
    expect(bus.seq).toBe(2);
    expect(bus.emitEventQueued(ev("RunResumed"))).toBe(2);
    await bus.flush();
    expect((await stored()).map((r) => [r[0], r[1]])).toEqual([
      [0, "RunStarted"],
      [1, "NodeStarted"],
      [2, "RunResumed"],
    ]);
  });
});

describe("openEventBus", () => {
  test("starts after the highest stored seq of the run", async () => {
    await insertEvent(db, { runId: "r1", timestampMs: 1, type: "RunStarted", payloadJson: "{}" });
    await insertEvent(db, { runId: "r2", timestampMs: 1, type: "RunStarted", payloadJson: "{}" });
    await insertEvent(db, { runId: "r2", timestampMs: 2, type: "RunFinished", payloadJson: "{}" });
    expect((await openEventBus({ db, runId: "r1" })).seq).toBe(1);
    expect((await openEventBus({ db, runId: "r3" })).seq).toBe(0);
  });
});

describe("payloadJsonOf", () => {
  test("the stored payload is the body without its type, whatever the type's place or characters", () => {
    const cases: { type: string; [key: string]: unknown }[] = [
      { type: "NodeStarted", nodeId: "a", iteration: 0, attempt: 1 },
      { type: "RunStarted" },
      { nodeId: "b", type: "NodeFinished", durationMs: 3 }, // type not first
      { type: 'Odd"Type\\', n: 1 },
      { type: "NodeFinished", skipped: undefined, nested: { type: "inner" } },
    ];
    for (const body of cases) {
      const { type: _type, ...rest } = body;
      expect(payloadJsonOf(body)).toBe(JSON.stringify(rest));
    }
  });

  test("bodies staged by the engine's way are stored and heard like whole events", async () => {
    const bus = new EventBus({ db, runId: "r1" });
    const heard: unknown[] = [];
    bus.on((event, seq) => heard.push([seq, event]));
    bus.stageBody({ type: "A", nodeId: "x" }, 7);
    bus.stage(ev("B", { nodeId: "y" }));
    await db.withTransaction("t", async (q) => await bus.writeStagedIn(q));
    expect(await stored()).toEqual([
      [0, "A", { nodeId: "x" }],
      [1, "B", { nodeId: "y" }],
    ]);
    expect(heard).toEqual([
      [0, { type: "A", nodeId: "x", runId: "r1", timestampMs: 7 }],
      [1, { type: "B", nodeId: "y", runId: "r1", timestampMs: 100 }],
    ]);
  });
});

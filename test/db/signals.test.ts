import { describe, expect, test } from "bun:test";
import { insertSignal, querySignals, type NewSignal } from "../../src/db/adapters/signals.ts";
import { SIGNAL_QUERY_LIMIT, smithersSignals } from "../../src/db/index.ts";
import { forEachBackend } from "./backends.ts";

const signal = (overrides: Partial<NewSignal> = {}): NewSignal => ({
  runId: "r1",
  signalName: "approved",
  correlationId: null,
  payloadJson: '{"ok":true}',
  receivedAtMs: 1_000,
  receivedBy: null,
  ...overrides,
});

forEachBackend((db) => {
  async function seed(): Promise<void> {
    await insertSignal(db(), signal({ signalName: "approved", correlationId: "c1", receivedAtMs: 100 }));
    await insertSignal(db(), signal({ signalName: "approved", correlationId: null, receivedAtMs: 200 }));
    await insertSignal(db(), signal({ signalName: "comment", correlationId: "c1", receivedAtMs: 300 }));
    await insertSignal(db(), signal({ signalName: "approved", correlationId: "c2", receivedAtMs: 400 }));
    await insertSignal(db(), signal({ runId: "r2", signalName: "approved", receivedAtMs: 500 }));
  }

  describe("insertSignal", () => {
    test("allocates seq 0, 1, 2 … per run", async () => {
      expect(await insertSignal(db(), signal({ receivedAtMs: 1 }))).toBe(0);
      expect(await insertSignal(db(), signal({ receivedAtMs: 2 }))).toBe(1);
      expect(await insertSignal(db(), signal({ runId: "r2", receivedAtMs: 3 }))).toBe(0);
      const rows = db().db.select().from(smithersSignals).all();
      expect(rows).toHaveLength(3);
      expect(rows[0]).toEqual({
        runId: "r1",
        seq: 0,
        signalName: "approved",
        correlationId: null,
        payloadJson: '{"ok":true}',
        receivedAtMs: 1,
        receivedBy: null,
        consumedByNodeId: null,
        consumedByIteration: null,
        consumedAtMs: null,
        rejectedJson: null,
        dedupeKey: null,
      });
    });

    test("a signal identical in all six fields returns the existing seq and adds no row", async () => {
      await insertSignal(db(), signal({ receivedAtMs: 1 }));
      const first = await insertSignal(db(), signal({ correlationId: "c", receivedBy: "api" }));
      expect(await insertSignal(db(), signal({ correlationId: "c", receivedBy: "api" }))).toBe(first);
      expect(db().db.select().from(smithersSignals).all()).toHaveLength(2);
    });

    test("null and omitted correlationId / receivedBy de-duplicate against each other", async () => {
      const first = await insertSignal(db(), signal());
      const { correlationId: _c, receivedBy: _r, ...bare } = signal();
      expect(await insertSignal(db(), bare)).toBe(first);
      expect(db().db.select().from(smithersSignals).all()).toHaveLength(1);
    });

    test.each([
      ["signalName", { signalName: "other" }],
      ["correlationId", { correlationId: "c9" }],
      ["payloadJson", { payloadJson: '{"ok":false}' }],
      ["receivedAtMs", { receivedAtMs: 2_000 }],
      ["receivedBy", { receivedBy: "cli" }],
    ] as const)("a signal differing only in %s is a new row", async (_field, change) => {
      await insertSignal(db(), signal());
      expect(await insertSignal(db(), signal(change))).toBe(1);
    });

    test("concurrent inserts get distinct, gap-free seqs", async () => {
      const seqs = await Promise.all(Array.from({ length: 30 }, (_, i) => insertSignal(db(), signal({ receivedAtMs: i }))));
      expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    });
  });

  describe("querySignals", () => {
    test("returns a run's signals in seq order", async () => {
      await seed();
      const rows = await querySignals(db(), { runId: "r1" });
      expect(rows.map((r) => [r.seq, r.receivedAtMs])).toEqual([
        [0, 100],
        [1, 200],
        [2, 300],
        [3, 400],
      ]);
    });

    test("signalName keeps one signal type", async () => {
      await seed();
      expect((await querySignals(db(), { runId: "r1", signalName: "comment" })).map((r) => r.seq)).toEqual([2]);
    });

    test("a correlationId string matches that key", async () => {
      await seed();
      expect((await querySignals(db(), { runId: "r1", correlationId: "c1" })).map((r) => r.seq)).toEqual([0, 2]);
    });

    test("a null correlationId matches only signals without one", async () => {
      await seed();
      expect((await querySignals(db(), { runId: "r1", correlationId: null })).map((r) => r.seq)).toEqual([1]);
    });

    test("receivedAfterMs includes signals received at that instant", async () => {
      await seed();
      expect((await querySignals(db(), { runId: "r1", receivedAfterMs: 300 })).map((r) => r.seq)).toEqual([2, 3]);
    });

    test("filters combine", async () => {
      await seed();
      const rows = await querySignals(db(), { runId: "r1", signalName: "approved", correlationId: "c2", receivedAfterMs: 150 });
      expect(rows.map((r) => r.seq)).toEqual([3]);
    });

    test("limit caps the result and defaults to 200", async () => {
      await Promise.all(Array.from({ length: 205 }, (_, i) => insertSignal(db(), signal({ receivedAtMs: i }))));
      expect(SIGNAL_QUERY_LIMIT).toBe(200);
      const page = await querySignals(db(), { runId: "r1" });
      expect(page).toHaveLength(200);
      expect(page.at(-1)?.seq).toBe(199);
      expect((await querySignals(db(), { runId: "r1", limit: 3 })).map((r) => r.seq)).toEqual([0, 1, 2]);
    });
  });
});

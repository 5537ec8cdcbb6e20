import { describe, expect, test } from "bun:test";
import { claimCronSlot, deleteCron, getCron, listCrons, listDueCrons, updateCronRunTime, upsertCron } from "../../src/db/adapters/cron.ts";
import { forEachBackend } from "./backends.ts";

const nightly = { cronId: "nightly", pattern: "0 3 * * *", workflowPath: "wf.tsx", createdAtMs: 100 };

forEachBackend((db) => {
  describe("upsertCron", () => {
    test("inserts a schedule, enabled by default", async () => {
      await upsertCron(db(), { ...nightly, inputJson: '{"a":1}', nextRunAtMs: 500 });
      expect(await getCron(db(), "nightly")).toEqual({
        cronId: "nightly",
        pattern: "0 3 * * *",
        workflowPath: "wf.tsx",
        inputJson: '{"a":1}',
        enabled: true,
        createdAtMs: 100,
        lastRunAtMs: null,
        nextRunAtMs: 500,
        errorJson: null,
        timezone: null,
        lastRunId: null,
        skippedSlots: 0,
      });
    });

    test("updates by cronId, keeping createdAtMs and fields not given", async () => {
      await upsertCron(db(), { ...nightly, inputJson: '{"a":1}' });
      await upsertCron(db(), { ...nightly, pattern: "0 4 * * *", enabled: false, createdAtMs: 999 });
      const row = await getCron(db(), "nightly");
      expect([row?.pattern, row?.enabled, row?.createdAtMs, row?.inputJson]).toEqual(["0 4 * * *", false, 100, '{"a":1}']);
      expect(await listCrons(db())).toHaveLength(1);
    });
  });

  describe("listCrons", () => {
    test("lists all schedules by id, or only the enabled ones", async () => {
      await upsertCron(db(), { ...nightly, cronId: "b" });
      await upsertCron(db(), { ...nightly, cronId: "a", enabled: false });
      await upsertCron(db(), { ...nightly, cronId: "c", enabled: true });
      expect((await listCrons(db())).map((c) => c.cronId)).toEqual(["a", "b", "c"]);
      expect((await listCrons(db(), true)).map((c) => c.cronId)).toEqual(["b", "c"]);
    });
  });

  describe("updateCronRunTime", () => {
    test("records last and next run times", async () => {
      await upsertCron(db(), nightly);
      expect(await updateCronRunTime(db(), "nightly", 1_000, 2_000)).toBe(true);
      const row = await getCron(db(), "nightly");
      expect([row?.lastRunAtMs, row?.nextRunAtMs, row?.errorJson]).toEqual([1_000, 2_000, null]);
    });

    test("stores the error of a failed fire and a later success clears it", async () => {
      await upsertCron(db(), nightly);
      await updateCronRunTime(db(), "nightly", 1_000, 2_000, '{"message":"boom"}');
      expect((await getCron(db(), "nightly"))?.errorJson).toBe('{"message":"boom"}');
      await updateCronRunTime(db(), "nightly", 2_000, 3_000);
      expect((await getCron(db(), "nightly"))?.errorJson).toBeNull();
    });

    test("returns false for an unknown cron", async () => {
      expect(await updateCronRunTime(db(), "nope", 1, 2)).toBe(false);
    });
  });

  describe("deleteCron", () => {
    test("removes the schedule and reports whether it existed", async () => {
      await upsertCron(db(), nightly);
      expect(await deleteCron(db(), "nightly")).toBe(true);
      expect(await getCron(db(), "nightly")).toBeUndefined();
      expect(await deleteCron(db(), "nightly")).toBe(false);
    });
  });

  describe("listDueCrons / claimCronSlot", () => {
    test("lists enabled schedules due at now, soonest first", async () => {
      await upsertCron(db(), { ...nightly, cronId: "later", nextRunAtMs: 300 });
      await upsertCron(db(), { ...nightly, cronId: "sooner", nextRunAtMs: 200 });
      await upsertCron(db(), { ...nightly, cronId: "off", nextRunAtMs: 100, enabled: false });
      await upsertCron(db(), { ...nightly, cronId: "future", nextRunAtMs: 999 });
      expect((await listDueCrons(db(), 300, 10)).map((c) => c.cronId)).toEqual(["sooner", "later"]);
      expect((await listDueCrons(db(), 300, 1)).map((c) => c.cronId)).toEqual(["sooner"]);
    });

    test("a claim wins only against the next_run_at_ms it read, and adds the skipped slots", async () => {
      await upsertCron(db(), { ...nightly, nextRunAtMs: 500, errorJson: '{"code":"X"}' });
      const claim = { cronId: "nightly", expectedNextRunAtMs: 500, slotMs: 700, runId: "cron:nightly:700", nextRunAtMs: 900, skipped: 2 };
      expect(await claimCronSlot(db(), claim)).toBe(true);
      expect(await claimCronSlot(db(), claim)).toBe(false); // the row moved on: a second claimer loses
      const row = await getCron(db(), "nightly");
      expect([row?.nextRunAtMs, row?.lastRunAtMs, row?.lastRunId, row?.skippedSlots, row?.errorJson]).toEqual([900, 700, "cron:nightly:700", 2, null]);
    });
  });
});

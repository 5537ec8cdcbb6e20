/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { supervise, type Clock } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow, Timer, type SmithersEvent } from "../../src/index.ts";
import { tempDbPath } from "../helpers.ts";

const T0 = Date.UTC(2030, 0, 1);

/** A clock moved by hand: its timers fire only in fire(). */
class ManualClock implements Clock {
  private readonly timers = new Set<{ at: number; fn: () => void }>();
  constructor(private time: number) {}
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { at: this.time + ms, fn };
    this.timers.add(timer);
    return timer;
  }
  clearTimeout(timer: unknown): void {
    this.timers.delete(timer as { at: number; fn: () => void });
  }
  get pending(): number[] {
    return [...this.timers].map((t) => t.at);
  }
  /** Moves the time to `at` and fires the timers due by then. */
  fire(at: number): void {
    this.time = at;
    for (const t of [...this.timers].filter((t) => t.at <= at)) {
      this.timers.delete(t);
      t.fn();
    }
  }
}

/** Until `check` holds (the run got there through its database's I/O), at most 10 s. */
async function until(check: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!check() && performance.now() < deadline) await Bun.sleep(1);
  expect(check()).toBe(true);
}

describe("RunOptions.clock", () => {
  test("a retry's backoff waits for the clock's timer, and the run's events and row carry the clock's time", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="clocked">
        <Task id="t" output={outputs.out} retries={1} retryPolicy={{ backoff: "fixed", initialDelayMs: 60_000 }}>
          {() => {
            if (++calls === 1) throw new Error("first try fails");
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const clock = new ManualClock(T0);
    const events: SmithersEvent[] = [];
    const result = runWorkflow(wf, { input: {}, runId: "c", clock, onEvent: (e) => events.push(e) });
    await until(() => clock.pending.includes(T0 + 60_000));
    expect(calls).toBe(1);
    clock.fire(T0 + 60_000);
    expect(await result).toMatchObject({ status: "finished", output: { n: 2 } });
    expect(events.find((e) => e.type === "NodeRetrying")).toMatchObject({ retryAtMs: T0 + 60_000, timestampMs: T0 });
    expect(events.at(-1)).toMatchObject({ type: "RunFinished", timestampMs: T0 + 60_000 });
    const db = openSmithersDb(dbPath);
    try {
      expect(await runs.getRun(db, "c")).toMatchObject({ createdAtMs: T0, heartbeatAtMs: T0, finishedAtMs: T0 + 60_000 });
    } finally {
      await db.close();
    }
  });

  test("supervise with a clock wakes a waiting-timer run once that clock reaches its fire time, and the resumed run keeps it", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="later">
        <Timer id="hour" duration="1h" />
        <Task id="after" output={outputs.out}>
          {{ ok: true }}
        </Task>
      </Workflow>
    ));
    const clock = new ManualClock(T0);
    expect(await runWorkflow(wf, { input: {}, runId: "w", clock })).toEqual({ runId: "w", status: "waiting-timer" });
    const db = openSmithersDb(dbPath);
    try {
      const events: SmithersEvent[] = [];
      const o = { db, clock, resolveWorkflow: () => wf, onEvent: (e: SmithersEvent) => events.push(e) };
      clock.fire(T0 + 3_600_000 - 1);
      expect(await supervise(o)).toEqual([]);
      clock.fire(T0 + 3_600_000);
      expect(await supervise(o)).toMatchObject([{ runId: "w", action: "resumed", result: { status: "finished" } }]);
      expect(events.find((e) => e.type === "TimerFired")).toMatchObject({ timestampMs: T0 + 3_600_000, firedLateMs: 0 });
    } finally {
      await db.close();
    }
  });
});

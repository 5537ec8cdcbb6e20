/**
 * Another process holds the write lock for ~1.5 s. SQLite's busy handler sleeps synchronously,
 * so a long busy_timeout would freeze this process (timers, heartbeats) for as long as it waits;
 * the wait must instead happen between short synchronous tries, with the event loop free.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { insertEvent, listEventHistory } from "../../src/db/adapters/events.ts";
import { SmithersDb, smithersCron } from "../../src/db/index.ts";
import { removeTempDirs, tempDbPath } from "./backends.ts";

const HOLDER = join(import.meta.dir, "fixtures", "lock-holder.ts");
const HOLD_MS = 1_500;
/** Far below the ~1 s a synchronous busy wait froze the loop for, far above a busy machine's jitter. */
const MAX_TICK_GAP_MS = 400;

afterEach(removeTempDirs);

type Holder = { done: Promise<{ code: number; stdout: string; stderr: string }> };

/** Starts the holder and resolves once it reports holding the lock. */
async function holdLock(path: string): Promise<Holder> {
  const proc = Bun.spawn([process.execPath, HOLDER, path, String(HOLD_MS)], { stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let seen = "";
  while (!seen.includes("locked\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`holder exited early: ${await new Response(proc.stderr).text()}`);
    seen += new TextDecoder().decode(value);
  }
  const done = (async () => {
    let rest = seen;
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      rest += new TextDecoder().decode(value);
    }
    return { code: await proc.exited, stdout: rest, stderr: await new Response(proc.stderr).text() };
  })();
  return { done };
}

/** Runs `work` with a 5 ms ticker and returns its value and the largest gap between ticks. */
async function withTicker<T>(work: () => Promise<T>): Promise<{ value: T; maxGapMs: number; ticks: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  let ticks = 0;
  const tick = () => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    ticks++;
  };
  const timer = setInterval(tick, 5);
  try {
    const value = await work();
    tick();
    return { value, maxGapMs, ticks };
  } finally {
    clearInterval(timer);
  }
}

describe("SmithersDb under another process's write lock", () => {
  test("a transaction waits for the lock without freezing timers, then commits after the holder", async () => {
    const path = tempDbPath();
    const db = new SmithersDb(path);
    try {
      const holder = await holdLock(path);
      const { value: seq, maxGapMs, ticks } = await withTicker(() => insertEvent(db, { runId: "held", timestampMs: 2, type: "Mine", payloadJson: "{}" }));
      expect(await holder.done).toEqual({ code: 0, stdout: "locked\ncommitted\n", stderr: "" });
      // seq 1: allocated after the holder's commit made its seq 0 visible
      expect(seq).toBe(1);
      expect((await listEventHistory(db, { runId: "held" })).map((e) => e.type)).toEqual(["Held", "Mine"]);
      expect(ticks).toBeGreaterThan(10);
      expect(maxGapMs).toBeLessThan(MAX_TICK_GAP_MS);
    } finally {
      await db.close();
    }
  });

  test("a single autocommit write waits the same way", async () => {
    const path = tempDbPath();
    const db = new SmithersDb(path);
    try {
      const holder = await holdLock(path);
      const { maxGapMs } = await withTicker(() =>
        db.write("cron", async (q) => {
          await q.orm.insert(smithersCron).values({ cronId: "c", pattern: "* * * * *", workflowPath: "wf.tsx", createdAtMs: 1 });
        }),
      );
      expect((await holder.done).code).toBe(0);
      expect(db.db.select({ id: smithersCron.cronId }).from(smithersCron).all()).toEqual([{ id: "c" }]);
      expect(maxGapMs).toBeLessThan(MAX_TICK_GAP_MS);
    } finally {
      await db.close();
    }
  });
});

import { afterEach, describe, expect, test } from "bun:test";
import type { SmithersServer } from "../../src/server/index.ts";
import { sql } from "../helpers.ts";
import { post, readSse, startServer, waitForStatus } from "./helpers.ts";

let current: SmithersServer | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

const storedSeqs = (dbPath: string, runId: string) =>
  sql<{ seq: number }>(dbPath, "SELECT seq FROM _smithers_events WHERE run_id = ? ORDER BY seq", runId).map((r) => String(r.seq));

async function waitForEvents(dbPath: string, runId: string, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (storedSeqs(dbPath, runId).length < n) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} events stored`);
    await Bun.sleep(10);
  }
}

describe("GET /runs/:id/events", () => {
  test("a client joining mid-run with afterSeq gets every later event exactly once, in order, with id = seq, and the stream ends with the run", async () => {
    const { server, url, dbPath } = await startServer();
    current = server;
    await post(`${url}/runs`, { workflow: "steps", input: { delayMs: 60 }, runId: "live" });
    await waitForEvents(dbPath, "live", 4);
    const events = await readSse(`${url}/runs/live/events?afterSeq=2`);
    const stored = storedSeqs(dbPath, "live");
    expect(events.map((e) => e.id)).toEqual(stored.filter((s) => Number(s) > 2));
    expect(events.at(-1)?.event).toBe("RunFinished");
    const first = JSON.parse(events[0]!.data) as { seq: number; runId: string };
    expect([first.seq, first.runId]).toEqual([3, "live"]);
  });

  test("a client that disconnects and reconnects with Last-Event-ID misses and repeats nothing", async () => {
    const { server, url, dbPath } = await startServer();
    current = server;
    await post(`${url}/runs`, { workflow: "steps", input: { delayMs: 60 }, runId: "again" });
    const before = await readSse(`${url}/runs/again/events`, { stop: (e) => e.length === 5 });
    expect(before.map((e) => e.id)).toEqual(["0", "1", "2", "3", "4"]);
    await Bun.sleep(150); // events keep coming while it is away
    const after = await readSse(`${url}/runs/again/events?afterSeq=0`, { headers: { "Last-Event-ID": before.at(-1)!.id } });
    expect(await waitForStatus(url, "again", ["finished"])).toBe("finished");
    expect([...before, ...after].map((e) => e.id)).toEqual(storedSeqs(dbPath, "again"));
  });

  test("a finished run's stream replays its journal and ends; afterSeq past the end sends nothing", async () => {
    const { server, url, dbPath } = await startServer();
    current = server;
    await post(`${url}/runs`, { workflow: "steps", runId: "done" });
    await waitForStatus(url, "done", ["finished"]);
    expect((await readSse(`${url}/runs/done/events`)).map((e) => e.id)).toEqual(storedSeqs(dbPath, "done"));
    expect(await readSse(`${url}/runs/done/events?afterSeq=9999`)).toEqual([]);
    expect((await fetch(`${url}/runs/done/events?afterSeq=x`)).status).toBe(400);
  });
});

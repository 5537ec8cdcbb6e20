/** GET /runs/stream shared by many clients: each still gets the whole, current, filtered list. */
import { describe, expect, test } from "bun:test";
import { post, readSse, serverPerTest, type SseEvent, waitForStatus } from "./helpers.ts";

const serve = serverPerTest();

type Run = { runId: string; status: string; workflow: string };
const runsOf = (e: SseEvent) => (JSON.parse(e.data) as { runs: Run[] }).runs;
const statusIn = (e: SseEvent, runId: string) => runsOf(e).find((r) => r.runId === runId)?.status;

describe("GET /runs/stream with many clients", () => {
  test("thirty clients on one query each see a run go from queued to finished, in order, with the same lists", async () => {
    const { url } = await serve();
    const clients = Array.from({ length: 30 }, () => readSse(`${url}/runs/stream`, { stop: (e) => e.some((x) => statusIn(x, "shared") === "finished") }));
    await Bun.sleep(200);
    await post(`${url}/runs`, { workflow: "steps", runId: "shared", input: { delayMs: 0 } });
    const got = await Promise.all(clients);
    for (const events of got) {
      const last = events.at(-1)!;
      expect(runsOf(last).map((r) => [r.runId, r.status])).toEqual([["shared", "finished"]]);
      // Ids rise, and a list once sent is never sent twice in a row.
      const ids = events.map((e) => Number(e.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(events.every((e, i) => i === 0 || e.data !== events[i - 1]!.data)).toBe(true);
    }
    // A frame with a given id holds the same list for every client that got it.
    const byId = new Map<string, Set<string>>();
    for (const e of got.flat()) byId.set(e.id, (byId.get(e.id) ?? new Set<string>()).add(e.data));
    expect([...byId.values()].filter((lists) => lists.size > 1)).toEqual([]);
  });

  test("a client that joins a stream others follow gets the current list at once", async () => {
    const { url } = await serve();
    // Follows until it has seen "early" finished, and stays on until its 2 s are up.
    const keeper = readSse(`${url}/runs/stream`, { stop: () => false, timeoutMs: 2_000 }).catch(() => []);
    await post(`${url}/runs`, { workflow: "steps", runId: "early", input: { delayMs: 0 } });
    expect(await waitForStatus(url, "early", ["finished"])).toBe("finished");
    await Bun.sleep(300); // the feed's next pass has read the finished run
    const late = await readSse(`${url}/runs/stream`, { stop: (e) => e.length === 1, timeoutMs: 1_000 });
    expect(late.map((e) => runsOf(e).map((r) => [r.runId, r.status]))).toEqual([[["early", "finished"]]]);
    await keeper;
  });

  test("clients on different filters each get their own list", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "s1", input: { delayMs: 0 } });
    await post(`${url}/runs`, { workflow: "gate", runId: "g1" });
    expect(await waitForStatus(url, "s1", ["finished"])).toBe("finished");
    expect(await waitForStatus(url, "g1", ["waiting-approval"])).toBe("waiting-approval");
    const lastList = (query: string) => readSse(`${url}/runs/stream${query}`, { stop: (e) => e.length === 1 }).then((e) => runsOf(e[0]!).map((r) => r.runId));
    const [all, gates, finished] = await Promise.all([lastList(""), lastList("?workflow=server-gate"), lastList("?status=finished")]);
    expect([all.sort(), gates, finished]).toEqual([["g1", "s1"], ["g1"], ["s1"]]);
  });

  test("a client that leaves does not stop the others' updates", async () => {
    const { url } = await serve();
    await readSse(`${url}/runs/stream`, { stop: (e) => e.length === 1 }); // joins, gets the empty list, leaves
    const stays = readSse(`${url}/runs/stream`, { stop: (e) => e.some((x) => statusIn(x, "after") === "finished") });
    const leaves = readSse(`${url}/runs/stream`, { stop: (e) => e.length === 1 });
    await leaves;
    await post(`${url}/runs`, { workflow: "steps", runId: "after", input: { delayMs: 0 } });
    expect(statusIn((await stays).at(-1)!, "after")).toBe("finished");
  });
});

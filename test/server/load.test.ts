import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { sql, tempDbPath } from "../helpers.ts";
import { FIXTURES, post, waitForStatus } from "./helpers.ts";

const CLI = join(import.meta.dir, "..", "..", "src", "cli", "index.ts");
const started: Subprocess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill(9);
});

/** `smithers serve` in its own process on a free port; resolves with its URL once it listens. */
async function spawnServer(dbPath: string, ...flags: string[]): Promise<{ proc: Subprocess; url: string }> {
  const proc = Bun.spawn(["bun", CLI, "serve", "--port", "0", "--db", dbPath, "--workflows", FIXTURES, ...flags], { stdout: "pipe", stderr: "ignore" });
  started.push(proc);
  const reader = (proc.stdout as ReadableStream).pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/http:\/\/\S+/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`serve exited: ${text}`);
    text += value;
  }
  reader.releaseLock();
  return { proc, url: text.match(/http:\/\/\S+/)![0] };
}

describe("smithers serve under load", () => {
  test("a full queue answers 503 with Retry-After and journals the refusal; every accepted run finishes; the server answers throughout", async () => {
    const dbPath = tempDbPath();
    const { url } = await spawnServer(dbPath, "--queue-capacity", "5", "--max-concurrent", "1");
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => post(`${url}/runs`, { workflow: "steps", input: { delayMs: 80 }, runId: `load-${i}` })),
    );
    const accepted = answers.filter((r) => r.status === 202);
    const refused = answers.filter((r) => r.status === 503);
    expect(accepted.length + refused.length).toBe(30);
    expect(accepted.length).toBeGreaterThanOrEqual(5);
    expect(accepted.length).toBeLessThanOrEqual(7); // 5 waiting, plus at most the one or two claimed meanwhile
    for (const r of refused) {
      expect(Number(r.headers.get("Retry-After"))).toBeGreaterThan(0);
      expect(((await r.json()) as { code: string }).code).toBe("QUEUE_FULL");
    }
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_events WHERE run_id = '_server' AND type = 'RunRefused'")).toEqual([{ n: refused.length }]);
    const acceptedIds = (await Promise.all(accepted.map((r) => r.json() as Promise<{ runId: string }>))).map((b) => b.runId);
    // While the queue drains, the API keeps answering.
    let slowest = 0;
    for (const runId of acceptedIds) {
      const t0 = performance.now();
      expect((await fetch(`${url}/runs?limit=50`)).status).toBe(200);
      slowest = Math.max(slowest, performance.now() - t0);
      expect(await waitForStatus(url, runId, ["finished"], 10_000)).toBe("finished");
    }
    expect(slowest).toBeLessThan(1_000);
  }, 20_000);

  test("runs accepted just before a kill -9 of the server are run by the restarted server", async () => {
    const dbPath = tempDbPath();
    const first = await spawnServer(dbPath, "--max-concurrent", "1", "--lease", "1s");
    const a = await post(`${first.url}/runs`, { workflow: "steps", input: { delayMs: 150 }, runId: "crash-a" });
    const b = await post(`${first.url}/runs`, { workflow: "steps", input: { delayMs: 0 }, runId: "crash-b" });
    expect([a.status, b.status]).toEqual([202, 202]);
    first.proc.kill(9);
    await first.proc.exited;
    // Each accepted run is still queued, or was handed to its run (created, running, owner now dead): never both, never neither.
    const queued = sql<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_queue").map((r) => r.run_id);
    const started = sql<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_runs WHERE status = 'running'").map((r) => r.run_id);
    expect([...queued, ...started].sort()).toEqual(["crash-a", "crash-b"]);
    expect(queued).toContain("crash-b");
    const second = await spawnServer(dbPath, "--max-concurrent", "1", "--lease", "1s");
    expect(await waitForStatus(second.url, "crash-a", ["finished", "failed"], 10_000)).toBe("finished");
    expect(await waitForStatus(second.url, "crash-b", ["finished", "failed"], 10_000)).toBe("finished");
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
  }, 20_000);
});

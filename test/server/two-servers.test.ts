/** Two servers on one database file share its queue: each request runs once, on one of them, and neither takes the other's claims. */
import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { createServer, type SmithersServer } from "../../src/server/index.ts";
import slowLoad from "../fixtures/slow-load.tsx";
import { onPostgres, sql, tempDbPath, waitFor } from "../helpers.ts";
import { post } from "./helpers.ts";

const SLOW_LOAD = resolve("test/fixtures/slow-load.tsx");
const servers: SmithersServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function startServer(dbPath: string, errors: string[]): Promise<string> {
  const server = await createServer({
    dbPath,
    workflows: [{ name: "slow-load", path: SLOW_LOAD, workflow: slowLoad }],
    maxConcurrent: 2,
    onError: (runId, error) => errors.push(`${runId}: ${String(error)}`),
  });
  servers.push(server);
  return (await server.start({ port: 0 })).url;
}

describe.skipIf(onPostgres)("two servers on one database", () => {
  test("requests posted to both run once each, every one finished, with no claim taken from the other server", async () => {
    const dbPath = tempDbPath();
    const errors: string[] = [];
    const a = await startServer(dbPath, errors);
    const b = await startServer(dbPath, errors);
    const ids = Array.from({ length: 12 }, (_, i) => `two-${i}`);
    for (const [i, runId] of ids.entries()) {
      const res = await post(`${i % 2 === 0 ? a : b}/runs`, { workflow: "slow-load", runId, input: {} });
      expect(res.status).toBe(202);
    }
    const finished = () => sql<{ n: number }>(dbPath, "SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'")[0]!.n;
    await waitFor(() => finished() === ids.length, 20_000);
    expect(sql(dbPath, "SELECT run_id FROM done ORDER BY run_id").map((r) => r.run_id)).toEqual([...ids].sort());
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")[0]).toEqual({ n: 0 });
    expect(errors).toEqual([]);
  }, 30_000);
});

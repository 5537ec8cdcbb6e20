/** `smithers serve --prune-older-than`: retention while serving, as a real process. */
import { expect, test } from "bun:test";
import { smithers, startUntil } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

test("serve --prune-older-than prunes runs that ended longer ago, at start", async () => {
  const db = tempDbPath();
  expect(smithers(["up", "test/fixtures/agent-usage.tsx", "--run-id", "old", "--db", db]).code).toBe(0);
  const frames = sql<{ n: number }>(db, "SELECT count(*) AS n FROM _smithers_frames")[0]!.n;
  expect(frames).toBeGreaterThan(2);
  const server = await startUntil(["serve", "--port", "0", "--db", db, "--prune-older-than", "0"], {}, "pruned 1 run(s)");
  server.kill("SIGINT");
  await server.exited;
  expect(sql(db, "SELECT count(*) AS n FROM _smithers_frames")).toEqual([{ n: 2 }]);
  expect(sql(db, "SELECT count(*) AS n FROM note")).toEqual([{ n: 2 }]);
  expect(smithers(["serve", "--db", db, "--prune-older-than", "soon"]).code).toBe(2);
});

/** A port another process listens on is an environment error with a code, not a raw stack: PORT_IN_USE, exit 2 from the CLI. */
import { expect, test } from "bun:test";
import { createServer } from "../../src/server/index.ts";
import { smithers } from "../e2e/cli-helpers.ts";
import { tempDbPath } from "../helpers.ts";

test("starting on a port that is taken rejects with PORT_IN_USE naming the port; smithers serve exits 2 with that one line", async () => {
  const other = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("other") });
  try {
    const port = other.port!;
    const server = await createServer({ dbPath: tempDbPath() });
    const error = await server.start({ port }).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error?.code).toBe("PORT_IN_USE");
    expect(error?.message).toContain(`Port ${port} on 127.0.0.1 is in use`);
    await server.stop();

    const r = smithers(["serve", "--db", tempDbPath(), "--port", String(port)]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      `smithers: PORT_IN_USE: Port ${port} on 127.0.0.1 is in use: stop what listens there, or pass --port another (0 picks a free one)`,
    ]);
  } finally {
    await other.stop(true);
  }
});

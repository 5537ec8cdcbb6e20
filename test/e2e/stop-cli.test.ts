/**
 * Ctrl-C and SIGTERM reach a command that waits on its database: one that runs nothing (ps,
 * inspect…) exits at once, there is nothing of its own to finish; a worker exits on the second,
 * as it does with runs in flight.
 */
import { expect, test } from "bun:test";
import { cli, root } from "./cli-helpers.ts";

/** A TCP server that accepts connections and never answers: a database cut off mid-conversation. */
function silentServer() {
  return Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
}

for (const args of [["ps"], ["inspect", "some-run"]]) {
  test(`smithers ${args[0]} exits on SIGTERM while its database does not answer`, async () => {
    const server = silentServer();
    try {
      const proc = Bun.spawn([process.execPath, cli, ...args, "--db", `postgres://smithers@127.0.0.1:${server.port}/db`], {
        cwd: root,
        stdout: "pipe",
        stderr: "pipe",
      });
      await Bun.sleep(1_000); // connected, waiting for an answer that never comes
      const sent = Date.now();
      proc.kill("SIGTERM");
      const code = await Promise.race([proc.exited, Bun.sleep(3_000).then(() => "still running")]);
      proc.kill("SIGKILL");
      expect(code).toBe(130);
      expect(Date.now() - sent).toBeLessThan(3_000);
    } finally {
      server.stop(true);
    }
  });
}

test("smithers worker exits on a second SIGTERM while its database does not answer", async () => {
  const server = silentServer();
  try {
    const proc = Bun.spawn([process.execPath, cli, "worker", "--db", `postgres://smithers@127.0.0.1:${server.port}/db`], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    });
    await Bun.sleep(1_000);
    proc.kill("SIGTERM"); // take nothing more: nothing is in flight
    await Bun.sleep(200);
    const sent = Date.now();
    proc.kill("SIGTERM"); // exit now
    const code = await Promise.race([proc.exited, Bun.sleep(10_000).then(() => "still running")]);
    proc.kill("SIGKILL");
    expect(code).toBe(0);
    expect(Date.now() - sent).toBeLessThan(8_000); // its database's close gives up on the schema check after 5 s
  } finally {
    server.stop(true);
  }
}, 15_000);

test("smithers serve exits on SIGTERM while its database does not answer its first connection", async () => {
  const server = silentServer();
  try {
    const proc = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", `postgres://smithers@127.0.0.1:${server.port}/db`], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    });
    await Bun.sleep(1_000); // waiting for the first answer: not listening yet
    const sent = Date.now();
    proc.kill("SIGTERM");
    const code = await Promise.race([proc.exited, Bun.sleep(3_000).then(() => "still running")]);
    proc.kill("SIGKILL");
    expect(code).toBe(0);
    expect(Date.now() - sent).toBeLessThan(3_000);
    expect(await new Response(proc.stdout).text()).not.toContain("listening");
  } finally {
    server.stop(true);
  }
});

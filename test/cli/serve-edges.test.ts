/** `smithers serve`'s token, TLS and body-limit flags, and reserved run ids on the CLI, as real processes. */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { byteSize } from "../../src/cli/serve.ts";
import { cli, root, smithers, smithersAsync } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath, tempDir } from "../helpers.ts";
import { FIXTURES, selfSigned } from "../server/helpers.ts";

const TOKEN = "cli-test-token-0123456789";

/** `smithers serve args…` until it prints its URL; `stop()` ends it and resolves with its stderr. */
async function serve(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", tempDbPath(), ...args], {
    cwd: root,
    env: { ...process.env, SMITHERS_TOKEN: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    const url = /listening on (\S+)/.exec(seen)?.[1];
    if (url) {
      return {
        url,
        stop: async () => {
          proc.kill("SIGTERM");
          await proc.exited;
          return stderr;
        },
      };
    }
  }
  throw new Error(`serve exited ${await proc.exited}: ${seen}${await stderr}`);
}

const tokenFile = (text: string) => {
  const path = join(tempDir(), "token");
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};

describe("smithers serve", () => {
  test("refuses to start, exit 2 with a code and no database created: short tokens, plain HTTP off loopback, bad sizes, flags that do not go together", async () => {
    const { certPath, keyPath } = selfSigned();
    const cases: [string[], Record<string, string>, string][] = [
      [["--token", "s3cret"], {}, "TOKEN_TOO_SHORT"],
      [["--token-file", tokenFile("short\n")], {}, "TOKEN_TOO_SHORT"],
      [[], { SMITHERS_TOKEN: "short" }, "TOKEN_TOO_SHORT"],
      [["--host", "0.0.0.0", "--token-file", tokenFile(TOKEN)], {}, "TLS_REQUIRED"],
      [["--host", "0.0.0.0"], {}, "USAGE"], // no token at all
      [["--max-body", "soon"], {}, "USAGE"],
      [["--max-body", "0"], {}, "USAGE"],
      [["--tls-cert", certPath], {}, "USAGE"],
      [["--tls-cert", certPath, "--tls-key", join(tempDir(), "missing.pem")], {}, "USAGE"],
      [["--tls-cert", certPath, "--tls-key", keyPath, "--insecure-http"], {}, "USAGE"],
      [["--token", TOKEN, "--token-file", tokenFile(TOKEN)], {}, "USAGE"],
      [["--token-file", join(tempDir(), "missing")], {}, "USAGE"],
    ];
    for (const [args, env, code] of cases) {
      const db = tempDbPath();
      const r = await smithersAsync(["serve", "--port", "0", "--db", db, ...args], { SMITHERS_TOKEN: "", ...env });
      expect([args.join(" "), r.code, r.stderr, existsSync(db)]).toEqual([args.join(" "), 2, expect.stringContaining(`smithers: ${code}:`), false]);
    }
  }, 60_000); // twelve processes: over bun's 5 s default on a loaded machine

  test("--token-file with --tls-cert/--tls-key serves HTTPS off loopback; a client trusting the certificate gets answers, with the token only", async () => {
    const { cert, certPath, keyPath } = selfSigned();
    const server = await serve(["--host", "0.0.0.0", "--token-file", tokenFile(`${TOKEN}\n`), "--tls-cert", certPath, "--tls-key", keyPath]);
    try {
      const port = new URL(server.url).port;
      expect(server.url).toBe(`https://0.0.0.0:${port}`);
      const health = await fetch(`https://127.0.0.1:${port}/health`, { headers: { Authorization: `Bearer ${TOKEN}` }, tls: { ca: cert } });
      expect(health.status).toBe(200);
      expect((await fetch(`https://127.0.0.1:${port}/health`, { tls: { ca: cert } })).status).toBe(401);
    } finally {
      expect(await server.stop()).not.toContain("warning");
    }
  });

  test("a token file other users may read is warned about", async () => {
    const path = tokenFile(TOKEN);
    chmodSync(path, 0o644);
    const server = await serve(["--token-file", path]);
    expect(await server.stop()).toContain(`warning: ${path} is readable by other users; chmod 600 it`);
  });

  test("--insecure-http lets a proxy-fronted server listen off loopback over plain HTTP", async () => {
    const server = await serve(["--host", "0.0.0.0", "--insecure-http"], { SMITHERS_TOKEN: TOKEN });
    try {
      const port = new URL(server.url).port;
      expect((await fetch(`http://127.0.0.1:${port}/health`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test("--token still works, with a warning that other users can read it", async () => {
    const server = await serve(["--token", TOKEN]);
    expect((await fetch(`${server.url}/health`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect(await server.stop()).toContain("warning: --token is readable by every user of this machine");
  });

  test("--max-body 2KB answers a larger body 413 BODY_TOO_LARGE", async () => {
    const server = await serve(["--max-body", "2KB", "--workflows", FIXTURES]);
    try {
      const post = (bytes: number) =>
        fetch(`${server.url}/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ workflow: "steps", input: { pad: "x".repeat(bytes) } }),
        });
      const big = await post(2000);
      expect([big.status, ((await big.json()) as { code: string }).code]).toEqual([413, "BODY_TOO_LARGE"]);
      expect((await post(1000)).status).toBe(202);
    } finally {
      await server.stop();
    }
  });

  test("--help documents the token file, TLS and body limit flags", () => {
    const help = smithers(["serve", "--help"]).stdout;
    for (const flag of ["--token-file", "--tls-cert", "--tls-key", "--insecure-http", "--max-body", "SMITHERS_TOKEN"]) expect(help).toContain(flag);
  });
});

describe("reserved run ids on the CLI", () => {
  test("up, up --detach and fork refuse a run id starting with _ (INVALID_RUN_ID, exit 2) and write no run", () => {
    const db = tempDbPath();
    for (const args of [
      ["--run-id", "_server"],
      ["--run-id", "_x", "--detach"],
    ]) {
      const r = smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"a"}', "--db", db, ...args]);
      expect([args.join(" "), r.code, r.stderr]).toEqual([args.join(" "), 2, expect.stringContaining("INVALID_RUN_ID")]);
    }
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"a"}', "--run-id", "parent", "--db", db]).code).toBe(0);
    const fork = smithers(["fork", "parent", "--frame", "0", "--run-id", "_fork", "--db", db]);
    expect([fork.code, fork.stderr]).toEqual([2, expect.stringContaining("INVALID_RUN_ID")]);
    expect(sql(db, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: "parent" }]);
    expect(sql(db, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
  }, 60_000);
});

describe("byteSize", () => {
  test("reads bytes and decimal or binary units, and refuses anything else", () => {
    expect([byteSize("65536", "--max-body"), byteSize("512KB", "--max-body"), byteSize("1MiB", "--max-body"), byteSize("1.5 kib", "--max-body")]).toEqual([
      65536, 512_000, 1_048_576, 1536,
    ]);
    for (const text of ["", "0", "-1", "1XB", "MiB", "0.1B", "1e3"]) expect(() => byteSize(text, "--max-body")).toThrow("--max-body must be a size");
    expect(byteSize(undefined, "--max-body")).toBeUndefined();
  });
});

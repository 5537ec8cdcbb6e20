/** The server's edges: body limits, framing, the Origin's port, reserved run ids, the token and TLS. */
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createServer, DEFAULT_MAX_BODY_BYTES } from "../../src/server/index.ts";
import { sql, tempDir, tempDbPath } from "../helpers.ts";
import { FIXTURES, post, selfSigned, serverPerTest, waitForStatus } from "./helpers.ts";

const serve = serverPerTest();
const codeOf = async (res: Response) => [res.status, ((await res.json()) as { code: string }).code];

/** A body of `chunks` × 1 KiB sent as a stream: no Content-Length, so the server must count what arrives. */
function streamedBody(chunks: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ === chunks) return controller.close();
      controller.enqueue(new TextEncoder().encode(sent === 1 ? `{"workflow":"steps","input":{"pad":"${"x".repeat(1000)}` : "x".repeat(1024)));
    },
  });
}

describe("request body limit", () => {
  test("a body over maxBodyBytes is 413 BODY_TOO_LARGE and queues nothing; one at the limit is accepted", async () => {
    const { url, dbPath } = await serve({ maxBodyBytes: 4096 });
    const body = (size: number) => {
      const head = '{"workflow":"steps","runId":"r","input":{"delayMs":0},"x":"';
      return `${head}${"a".repeat(size - head.length - 2)}"}`;
    };
    const tooBig = await fetch(`${url}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: body(4097) });
    expect(await codeOf(tooBig)).toEqual([413, "BODY_TOO_LARGE"]);
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
    // At the limit the body is read and judged as any other: here an unknown key, 400.
    const atLimit = await fetch(`${url}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: body(4096) });
    expect(await codeOf(atLimit)).toEqual([400, "INVALID_INPUT"]);
  });

  test("a streamed body without Content-Length is cut off at the limit with 413 BODY_TOO_LARGE", async () => {
    const { url } = await serve({ maxBodyBytes: 16 * 1024 });
    const res = await fetch(`${url}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: streamedBody(64),
      duplex: "half",
    } as RequestInit);
    expect(await codeOf(res)).toEqual([413, "BODY_TOO_LARGE"]);
  });

  test("the default limit is 1 MiB, on every route that takes a body", async () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(1024 * 1024);
    const { url } = await serve();
    const big = "x".repeat(DEFAULT_MAX_BODY_BYTES);
    expect(await codeOf(await post(`${url}/runs`, { workflow: "steps", input: { big } }))).toEqual([413, "BODY_TOO_LARGE"]);
    expect(await codeOf(await post(`${url}/runs/any/signals`, { name: "go", data: big }))).toEqual([413, "BODY_TOO_LARGE"]);
    expect(await codeOf(await post(`${url}/human/any/answer`, { data: big }))).toEqual([413, "BODY_TOO_LARGE"]);
    // Under it, a run is accepted as before.
    expect((await post(`${url}/runs`, { workflow: "steps", runId: "small", input: { delayMs: 0 } })).status).toBe(202);
    expect(await waitForStatus(url, "small", ["finished", "failed"])).toBe("finished");
  });

  test("a body limit that is not a positive whole number is INVALID_OPTION", async () => {
    for (const maxBodyBytes of [0, -1, 1.5, Number.NaN]) {
      const error = await createServer({ dbPath: tempDbPath(), maxBodyBytes }).catch((e: { code?: string }) => e);
      expect([maxBodyBytes, (error as { code?: string }).code]).toEqual([maxBodyBytes, "INVALID_OPTION"]);
    }
  });
});

describe("framing and origins", () => {
  test("the dashboard's pages and every API answer, errors included, forbid framing", async () => {
    const dashboardDir = join(tempDir(), "dashboard");
    mkdirSync(join(dashboardDir, "assets"), { recursive: true });
    await Bun.write(join(dashboardDir, "index.html"), "<!doctype html>");
    const { url } = await serve({ dashboardDir, token: "a-token-of-some-length" });
    const auth = { Authorization: "Bearer a-token-of-some-length" };
    const answers = [
      await fetch(`${url}/inbox`, { headers: { Accept: "text/html" } }),
      await fetch(`${url}/`),
      await fetch(`${url}/inbox`, { headers: auth }),
      await fetch(`${url}/runs`), // 401
      await fetch(`${url}/no-such-route`, { headers: auth }), // 404
      await fetch(`${url}/runs/stream`, { headers: auth }), // a stream
    ];
    await answers.at(-1)!.body?.cancel();
    for (const res of answers) {
      expect([res.status, res.headers.get("content-security-policy"), res.headers.get("x-frame-options")]).toEqual([
        res.status,
        "frame-ancestors 'none'",
        "DENY",
      ]);
    }
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 401, 404, 200]);
  });

  test("without a token, a page on another loopback port is another origin: 403; the server's own origin passes", async () => {
    const { url } = await serve();
    const port = Number(new URL(url).port);
    const from = (origin: string) => fetch(`${url}/runs`, { headers: { Origin: origin } });
    expect(await codeOf(await from(`http://127.0.0.1:${port + 1}`))).toEqual([403, "FORBIDDEN"]);
    expect(await codeOf(await from(`http://localhost:${port}`))).toEqual([403, "FORBIDDEN"]); // Host says 127.0.0.1
    expect(await codeOf(await from("http://127.0.0.1"))).toEqual([403, "FORBIDDEN"]);
    expect(await codeOf(await from("null"))).toEqual([403, "FORBIDDEN"]);
    expect((await from(url)).status).toBe(200);
    expect((await fetch(`${url}/runs`)).status).toBe(200); // no Origin: not a browser's cross-site request
  });
});

describe("reserved run ids", () => {
  test("POST /runs refuses _server and any id starting with _ (400 INVALID_RUN_ID) and queues nothing", async () => {
    const { url, dbPath } = await serve();
    for (const runId of ["_server", "_x", "_"]) {
      expect([runId, ...(await codeOf(await post(`${url}/runs`, { workflow: "steps", runId })))]).toEqual([runId, 400, "INVALID_RUN_ID"]);
    }
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
    expect((await post(`${url}/runs`, { workflow: "steps", runId: "a_b", input: { delayMs: 0 } })).status).toBe(202);
  });

  test("a fork named _fork is refused (400 INVALID_RUN_ID)", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "parent", input: { delayMs: 0 } });
    expect(await waitForStatus(url, "parent", ["finished", "failed"])).toBe("finished");
    expect(await codeOf(await post(`${url}/runs/parent/fork`, { frame: 0, runId: "_fork" }))).toEqual([400, "INVALID_RUN_ID"]);
  });
});

describe("token and TLS", () => {
  test("a token shorter than 16 characters is refused with TOKEN_TOO_SHORT", async () => {
    for (const token of ["", "s3cret", "fifteen-chars!!"]) {
      const error = await createServer({ dbPath: tempDbPath(), token }).catch((e: { code?: string }) => e);
      expect([token, (error as { code?: string }).code]).toEqual([token, "TOKEN_TOO_SHORT"]);
    }
  });

  test("a non-loopback host over plain HTTP is refused with TLS_REQUIRED, unless insecureHttp says a proxy terminates TLS", async () => {
    const token = "a-token-of-some-length";
    const refused = await createServer({ dbPath: tempDbPath(), workflowsDir: FIXTURES, token });
    expect(((await refused.start({ port: 0, host: "0.0.0.0" }).catch((e: { code?: string }) => e)) as { code?: string }).code).toBe("TLS_REQUIRED");
    await refused.stop();
    const server = await createServer({ dbPath: tempDbPath(), workflowsDir: FIXTURES, token, insecureHttp: true });
    const { port } = await server.start({ port: 0, host: "0.0.0.0" });
    try {
      expect((await fetch(`http://127.0.0.1:${port}/health`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test("with a certificate and key the server answers HTTPS, which a client trusting that certificate verifies", async () => {
    const { cert, key } = selfSigned();
    const token = "a-token-of-some-length";
    const server = await createServer({ dbPath: tempDbPath(), workflowsDir: FIXTURES, token, tls: { cert, key } });
    const { url, port } = await server.start({ port: 0, host: "127.0.0.1" });
    try {
      expect(url).toBe(`https://127.0.0.1:${port}`);
      const health = await fetch(`${url}/health`, { headers: { Authorization: `Bearer ${token}` }, tls: { ca: cert } });
      expect([health.status, await health.json()]).toEqual([200, { ok: true, running: 0 }]);
      expect((await fetch(`${url}/health`, { tls: { ca: cert } })).status).toBe(401);
      // Plain HTTP to the TLS port gets no answer from the API.
      expect(
        await fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.status,
          () => "refused",
        ),
      ).not.toBe(200);
    } finally {
      await server.stop();
    }
  });

  test("a key that does not fit the certificate is INVALID_OPTION at start", async () => {
    const a = selfSigned();
    const b = selfSigned();
    const server = await createServer({ dbPath: tempDbPath(), token: "a-token-of-some-length", tls: { cert: a.cert, key: b.key } });
    const error = await server.start({ port: 0 }).catch((e: { code?: string }) => e);
    expect((error as { code?: string }).code).toBe("INVALID_OPTION");
    await server.stop();
  });
});

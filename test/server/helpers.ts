import { afterEach } from "bun:test";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, type ServerOptions, type SmithersServer } from "../../src/server/index.ts";
import { tempDbPath, tempDir } from "../helpers.ts";

export const FIXTURES = join(import.meta.dir, "..", "fixtures", "server");

/** A server on a free loopback port over a fresh database, serving test/fixtures/server. */
export async function startServer(o: Partial<ServerOptions> = {}): Promise<{ server: SmithersServer; url: string; dbPath: string }> {
  const dbPath = o.dbPath ?? tempDbPath();
  const server = await createServer({ dbPath, workflowsDir: FIXTURES, pollMs: 20, onError: () => undefined, ...o });
  const { url } = await server.start({ port: 0 });
  return { server, url, dbPath };
}

/**
 * startServer for a test file: call it at the file's top level; every server it started is stopped
 * after each test (one the test stopped itself is left alone).
 */
export function serverPerTest(): (o?: Partial<ServerOptions>) => ReturnType<typeof startServer> {
  const started: SmithersServer[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop().catch(() => undefined);
  });
  return async (o = {}) => {
    const s = await startServer(o);
    started.push(s.server);
    return s;
  };
}

export const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

/** Polls GET /runs/:id until its status is one of `statuses` (or fails after `ms`). */
export async function waitForStatus(url: string, runId: string, statuses: string[], ms = 10_000): Promise<string> {
  const deadline = Date.now() + ms;
  let status = "";
  while (Date.now() < deadline) {
    const res = await fetch(`${url}/runs/${runId}`);
    if (res.ok) status = ((await res.json()) as { status: string }).status;
    if (statuses.includes(status)) return status;
    await Bun.sleep(25);
  }
  throw new Error(`run ${runId} still ${status || "unknown"} after ${ms} ms`);
}

export type SseEvent = { id: string; event: string; data: string };

/**
 * Reads server-sent events from `url` until `stop(events)` says so or the stream ends; the
 * connection is then closed (a client disconnecting).
 */
export async function readSse(
  url: string,
  o: { headers?: Record<string, string>; stop?: (events: SseEvent[]) => boolean; timeoutMs?: number } = {},
): Promise<SseEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), o.timeoutMs ?? 10_000);
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, { headers: o.headers ?? {}, signal: abort.signal });
    if (!res.ok || !res.body) throw new Error(`SSE ${url}: ${res.status} ${await res.text()}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const fields = Object.fromEntries(
          block
            .split("\n")
            .filter((l) => l !== "" && !l.startsWith(":"))
            .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]),
        );
        if (fields.id === undefined) continue;
        events.push({ id: fields.id, event: fields.event ?? "message", data: fields.data ?? "" });
        if (o.stop?.(events)) {
          abort.abort();
          return events;
        }
      }
    }
    return events;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** A self-signed certificate for 127.0.0.1 and localhost, made by openssl. */
export function selfSigned(): { cert: string; key: string; certPath: string; keyPath: string } {
  const dir = tempDir();
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  const subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"];
  const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  execFileSync("openssl", ["req", "-x509", ...ecKey, "-days", "1", ...subject, "-keyout", keyPath, "-out", certPath], { stdio: "ignore" });
  return { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8"), certPath, keyPath };
}

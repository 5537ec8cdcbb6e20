/** Without a token, the server answers only loopback-addressed, same-origin requests, and POSTs of JSON. */
import { afterAll, expect, test } from "bun:test";
import { createServer } from "../../src/server/index.ts";
import { tempDbPath } from "../helpers.ts";

const server = await createServer({ dbPath: tempDbPath() });
const { url } = await server.start({ port: 0, host: "127.0.0.1" });
afterAll(() => server.stop({ drain: false }));

test("a cross-site or rebinding request is refused (403); a POST that is not JSON is refused (415); a loopback JSON POST is answered", async () => {
  const post = (headers: Record<string, string>) => fetch(`${url}/runs`, { method: "POST", headers, body: JSON.stringify({ workflow: "nope" }) });
  const evilOrigin = await post({ "Content-Type": "application/json", Origin: "https://evil.example" });
  expect(evilOrigin.status).toBe(403);
  expect(((await evilOrigin.json()) as { code: string }).code).toBe("FORBIDDEN");
  expect((await post({ "Content-Type": "application/json", Host: "evil.example:7331" })).status).toBe(403);
  expect((await fetch(`${url}/runs`, { headers: { Host: "rebound.example" } })).status).toBe(403);
  const form = await post({ "Content-Type": "text/plain" });
  expect(form.status).toBe(415);
  expect(((await form.json()) as { code: string }).code).toBe("UNSUPPORTED_MEDIA_TYPE");
  const ok = await post({ "Content-Type": "application/json", Origin: url });
  expect(ok.status).toBe(404); // past the checks: the workflow is unknown
  expect((await fetch(`${url}/health`)).status).toBe(200);
});

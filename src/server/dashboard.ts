/**
 * The dashboard's static files: its HTML shell at `/` and at the page URLs (`/runs`, `/runs/<id>`,
 * `/runs/<id>/events`, `/runs/<a>/compare/<b>`, `/inbox` when a browser asks for HTML), and its bundled assets at `/assets/*`. They are built by
 * scripts/build-dashboard.ts (run by `npm install`) into dist/dashboard.
 *
 * They hold no run data, so they are served without the bearer token: the page sends the token
 * with each API call itself (from sessionStorage; see src/ui/api.ts).
 */
import { join } from "node:path";
import type { Context, Hono } from "hono";

export const DASHBOARD_DIR = join(import.meta.dir, "..", "..", "dist", "dashboard");

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** A navigation (the address bar, a link) rather than an API call: it asks for HTML. */
const wantsHtml = (c: Context) => (c.req.header("Accept") ?? "").includes("text/html");

async function shell(c: Context, dir: string): Promise<Response> {
  const file = Bun.file(join(dir, "index.html"));
  if (!(await file.exists())) {
    return c.text("The dashboard is not built: run `bun scripts/build-dashboard.ts` (npm install does).", 503);
  }
  return new Response(file, { headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache" } });
}

/** Registers the dashboard's routes; call before any auth middleware (the files are public). */
export function registerDashboard(app: Hono, dir = DASHBOARD_DIR): void {
  app.get("/", (c) => shell(c, dir));
  for (const path of ["/runs", "/runs/:id", "/runs/:id/events", "/runs/:id/compare/:other", "/inbox"]) {
    app.get(path, async (c, next) => {
      if (wantsHtml(c)) return shell(c, dir);
      await next();
      return undefined;
    });
  }
  app.get("/assets/:name", async (c) => {
    const name = c.req.param("name");
    // Only the bundle's own flat file names: no path can leave the assets folder.
    const type = /^[\w.-]+$/.test(name) && !name.startsWith(".") ? TYPES[name.slice(name.lastIndexOf("."))] : undefined;
    const file = Bun.file(join(dir, "assets", name));
    if (type === undefined || !(await file.exists())) return c.json({ code: "NOT_FOUND", message: `No asset ${name}` }, 404);
    // Names carry a content hash, so a cached copy never goes stale.
    return new Response(file, { headers: { "Content-Type": type, "Cache-Control": "public, max-age=31536000, immutable" } });
  });
}

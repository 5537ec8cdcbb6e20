/**
 * The server's edges, in the order a request meets them: headers that keep the dashboard out of
 * other sites' frames, then who may ask (the bearer token, or without one loopback and the same
 * origin only), then how much a body may carry. And what `start` refuses: a short token, a
 * non-loopback address over plain HTTP.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { SmithersError } from "../errors/index.ts";
import { errorResponse } from "./errors.ts";

/** The largest request body (and so run input) a server reads unless told otherwise: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** A bearer token shorter than this is refused: a short one can be guessed over the network. */
export const MIN_TOKEN_LENGTH = 16;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "::1", "localhost"]);
const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

export const isLoopback = (host: string) => LOOPBACK_HOSTS.has(host.toLowerCase());

/**
 * No page of another origin may frame the dashboard (a hidden frame turns one click into an
 * approval): CSP `frame-ancestors` for current browsers, X-Frame-Options for older ones. On every
 * response, API ones included, where they cost nothing.
 */
export const frameGuard: MiddlewareHandler = async (c, next) => {
  await next();
  c.res.headers.set("Content-Security-Policy", "frame-ancestors 'none'");
  c.res.headers.set("X-Frame-Options", "DENY");
  c.res.headers.set("X-Content-Type-Options", "nosniff");
};

/** Every request needs `Authorization: Bearer <token>` (401 UNAUTHORIZED otherwise). */
export function bearerToken(token: string): MiddlewareHandler {
  const expected = `Bearer ${token}`;
  return async (c, next) => {
    if (!sameText(c.req.header("Authorization") ?? "", expected)) {
      return errorResponse(c, new SmithersError("UNAUTHORIZED", "Missing or wrong bearer token (Authorization: Bearer <token>)"));
    }
    await next();
    return undefined;
  };
}

/**
 * Without a token. Browsers may send simple cross-site requests to a loopback port, and a
 * rebinding name can reach it as well: a request must name a loopback host, come from no other
 * origin (another port is another origin: a page served on localhost:8080 is not this server's),
 * and a POST must say it carries JSON (a cross-site form cannot, without a preflight).
 */
export const loopbackOnly: MiddlewareHandler = async (c, next) => {
  const host = c.req.header("Host");
  const origin = c.req.header("Origin");
  if (!loopbackHost(host) || (origin !== undefined && !sameLoopbackOrigin(origin, host!))) {
    return errorResponse(
      c,
      new SmithersError("FORBIDDEN", "Without a token the server answers only requests addressed to and coming from its own loopback origin"),
    );
  }
  if (c.req.method === "POST" && !(c.req.header("Content-Type") ?? "").toLowerCase().startsWith("application/json")) {
    return errorResponse(c, new SmithersError("UNSUPPORTED_MEDIA_TYPE", "POST bodies must be application/json"));
  }
  await next();
  return undefined;
};

/**
 * 413 BODY_TOO_LARGE for a body over `maxBytes`: a declared Content-Length is judged before a
 * byte is read, a streamed body as it arrives (at most `maxBytes` are held).
 */
export function bodyLimitOf(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) =>
      errorResponse(
        c,
        new SmithersError("BODY_TOO_LARGE", `The request body is over the server's limit of ${maxBytes} bytes (serve --max-body)`, { maxBytes }),
      ),
  });
}

/** TOKEN_TOO_SHORT unless the token is long enough to stand against guessing. */
export function checkToken(token: string): void {
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new SmithersError(
      "TOKEN_TOO_SHORT",
      `The bearer token has ${token.length} characters; it needs at least ${MIN_TOKEN_LENGTH} (make one with: openssl rand -hex 32)`,
      { minLength: MIN_TOKEN_LENGTH },
    );
  }
}

/**
 * What listening on `host` needs: a token off loopback (USAGE), and there TLS or the acknowledgement
 * that a proxy in front terminates it (TLS_REQUIRED): a bearer token over plain HTTP crosses the
 * network readable.
 */
export function checkListen(o: { host: string; token: string | undefined; tls: boolean; insecureHttp: boolean }): void {
  if (isLoopback(o.host)) return;
  if (o.token === undefined) {
    throw new SmithersError("USAGE", `Refusing to listen on ${o.host} without a token: pass --token-file PATH (or SMITHERS_TOKEN), or listen on 127.0.0.1`);
  }
  if (!o.tls && !o.insecureHttp) {
    throw new SmithersError(
      "TLS_REQUIRED",
      `Refusing to serve plain HTTP on ${o.host}: the token would cross the network readable. Pass --tls-cert and --tls-key, or --insecure-http when a proxy in front terminates TLS`,
      { host: o.host },
    );
  }
}

/** Compares in time independent of where the texts differ (a token check must not leak a prefix). */
function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a.charCodeAt(i) || 0) ^ b.charCodeAt(i);
  return diff === 0;
}

/** A Host header naming a loopback address (any port). */
function loopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : (host.split(":")[0] ?? "");
  return LOOPBACK_NAMES.has(name.toLowerCase());
}

/** The Origin names a loopback address with the same host and port the request was sent to. */
function sameLoopbackOrigin(origin: string, host: string): boolean {
  try {
    const url = new URL(origin);
    return LOOPBACK_NAMES.has(url.hostname.toLowerCase()) && url.host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
}

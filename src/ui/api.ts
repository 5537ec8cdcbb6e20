/**
 * The dashboard's calls to the JSON API. With `smithers serve --token`, every call carries
 * `Authorization: Bearer <token>`: the token comes from the page URL's `#token=…` fragment (never
 * sent to the server, removed from the address bar at once) or from the sign-in field, and is
 * kept in sessionStorage for the tab's life.
 */
const TOKEN_KEY = "smithers.token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The fields at fault (a human answer that failed its schema): each problem at its path. */
    readonly fields?: { path: (string | number)[]; message: string }[],
  ) {
    super(message);
  }
}

/** Moves a `#token=` fragment into sessionStorage (call once at start). */
export function adoptTokenFromUrl(): void {
  const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!match) return;
  setToken(decodeURIComponent(match[1] ?? ""));
  history.replaceState(null, "", location.pathname + location.search);
}

export const getToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);

export function setToken(token: string): void {
  if (token === "") sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = getToken();
  return { Accept: "application/json", ...extra, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
}

async function asJson<T>(res: Response): Promise<T> {
  const body = (await res.json().catch(() => ({}))) as { code?: string; message?: string; fields?: ApiError["fields"] };
  if (!res.ok) throw new ApiError(res.status, body.code ?? "HTTP_ERROR", body.message ?? `${res.status} ${res.statusText}`, body.fields);
  return body as T;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return asJson<T>(await fetch(path, { headers: headers(), ...(signal ? { signal } : {}) }));
}

export async function postJson<T>(path: string, body: unknown = {}): Promise<T> {
  return asJson<T>(await fetch(path, { method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body) }));
}

export type SseMessage = { type: string; id: number; data: string };

/**
 * Reads server-sent events from `path` until the server ends the stream (resolves) or `signal`
 * aborts (rejects); calls `onEvent` per event that has an id. fetch rather than EventSource,
 * which cannot send the Authorization header.
 */
export async function readEvents(path: string, onEvent: (m: SseMessage) => void, signal: AbortSignal): Promise<void> {
  const res = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!res.ok || !res.body) await asJson(res);
  let buffer = "";
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      let id: number | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (id === undefined) continue; // a keep-alive comment
      onEvent({ type, id, data: data.join("\n") });
    }
  }
}

/**
 * Follows a run's server-sent events after seq `afterSeq` until the server ends the stream (the
 * run is over) or `signal` aborts; calls `onEvent` per event with its parsed payload. Resolves
 * with the last seq seen, so a caller can reconnect after it.
 */
export async function followEvents(
  runId: string,
  afterSeq: number,
  onEvent: (type: string, seq: number, payload: Record<string, unknown>) => void,
  signal: AbortSignal,
): Promise<number> {
  let last = afterSeq;
  await readEvents(
    `/runs/${encodeURIComponent(runId)}/events?afterSeq=${afterSeq}`,
    (m) => {
      last = m.id;
      let payload: Record<string, unknown> = {};
      try {
        payload = JSON.parse(m.data) as Record<string, unknown>;
      } catch {
        payload = {};
      }
      onEvent(m.type, m.id, payload);
    },
    signal,
  );
  return last;
}

/** The delay a response's `retry-after-ms` or `retry-after` (seconds or an HTTP date) asks for, in ms. */
export function retryAfter(headers: Record<string, unknown> | undefined, now = Date.now()): number | undefined {
  const text = (name: string) => (typeof headers?.[name] === "string" ? (headers[name] as string) : undefined);
  const ms = Number.parseFloat(text("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const value = text("retry-after");
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

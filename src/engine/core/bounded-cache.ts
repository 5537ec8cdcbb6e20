/**
 * A least-recently-used cache capped both in entries and in estimated bytes, so a few huge
 * values (a frame of a 20,000-task tree, an agent's long reply) cannot hold more memory than
 * the byte cap however few entries they are. A value larger than the byte cap is not kept.
 */
export type CacheLimits = { maxEntries: number; maxBytes: number };
export type CacheStats = CacheLimits & { entries: number; bytes: number; hits: number; misses: number };

export class BoundedCache<V> {
  private readonly map = new Map<string, { value: V; bytes: number }>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(
    private limits: CacheLimits,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The value, now most recently used; counts a hit or a miss. */
  get(key: string): V | undefined {
    const entry = this.map.get(key);
    if (!entry) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    const bytes = this.sizeOf(value);
    if (bytes > this.limits.maxBytes || this.limits.maxEntries < 1) return;
    this.map.set(key, { value, bytes });
    this.bytes += bytes;
    this.evict();
  }

  delete(key: string): void {
    const entry = this.map.get(key);
    if (!entry) return;
    this.map.delete(key);
    this.bytes -= entry.bytes;
  }

  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }

  /** Changes the caps (evicting down to them at once) and returns the previous ones. */
  setLimits(limits: CacheLimits): CacheLimits {
    const before = this.limits;
    this.limits = { ...limits };
    this.evict();
    return before;
  }

  stats(): CacheStats {
    return { ...this.limits, entries: this.map.size, bytes: this.bytes, hits: this.hits, misses: this.misses };
  }

  private evict(): void {
    for (const [key, entry] of this.map) {
      if (this.map.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) return;
      this.map.delete(key);
      this.bytes -= entry.bytes;
    }
  }
}

/** What a JS heap cell costs beyond its content (object header, pointer), roughly. */
const CELL = 16;

/**
 * A cheap upper-leaning estimate of the heap a plain value holds: 1 byte per character of
 * strings and keys, 8 per number, boolean or slot, plus CELL per string, object and array. It
 * walks the value once (shared parts counted each time they are reached, cycles once), so a
 * cache judged by it never holds more than it says.
 */
export function estimateBytes(value: unknown): number {
  const flat = flatRecordBytes(value);
  if (flat !== undefined) return flat;
  let bytes = 0;
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") bytes += CELL + v.length;
    else if (v === null || typeof v !== "object") bytes += 8;
    else if (seen.has(v)) bytes += 8;
    else {
      seen.add(v);
      if (v instanceof Date) bytes += CELL + 8;
      else if (ArrayBuffer.isView(v)) bytes += CELL + v.byteLength;
      else if (Array.isArray(v)) {
        bytes += CELL + 8 * v.length;
        for (const item of v) stack.push(item);
      } else {
        bytes += CELL;
        for (const key in v) {
          bytes += 8 + key.length;
          stack.push((v as Record<string, unknown>)[key]);
        }
      }
    }
  }
  return bytes;
}

/**
 * estimateBytes of a plain object whose values are all scalars (an output row, the usual entry),
 * without the walk's set and stack; undefined for anything else.
 */
function flatRecordBytes(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Date || ArrayBuffer.isView(value)) return undefined;
  let bytes = CELL;
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === "string") bytes += 8 + key.length + CELL + v.length;
    else if (v === null || typeof v !== "object") bytes += 16 + key.length;
    else return undefined;
  }
  return bytes;
}

/**
 * Parsing with a schema the way a run parses: the first few parses of each schema without Zod's
 * JIT, the rest with it. Zod compiles an object schema into a parser (`new Function`) at its first
 * parse, which costs a fresh process ~1-2 ms of CPU per schema, more than a whole one-task run
 * spends parsing; the compiled parser only pays once a schema has parsed many values. So a short
 * run (a task's output, a run's input) never compiles, and a long one compiles once it is worth it.
 * The result is the same either way.
 */
import type { z } from "zod";

/** Parses of one schema done without the JIT before it is used. */
export const JITLESS_PARSES = 32;

const parsesOf = new WeakMap<object, number>();
const JITLESS = { jitless: true } as const;

/** `schema.safeParse(value)`, jitless for the schema's first JITLESS_PARSES parses in this process. */
export function safeParseWarming<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  const n = parsesOf.get(schema) ?? 0;
  if (n >= JITLESS_PARSES) return schema.safeParse(value);
  parsesOf.set(schema, n + 1);
  return schema.safeParse(value, JITLESS);
}

/** The limits read model: every key's declared limits and use now (`smithers limits`, GET /metrics, `ps`), and one run's slots (`inspect`). */
import type { LimitUse, RunSlots } from "../../contract/index.ts";
import { limits, type SmithersDb } from "../../db/index.ts";

/** Every key declared or in use, by key. `nowMs` places the last minute of the rate windows. */
export function limitUse(db: SmithersDb, nowMs: number): Promise<LimitUse[]> {
  return db.read("readLimitUse", (q) => limits.readUse(q, nowMs));
}

/** The slots one run holds and waits for, by key. */
export async function runSlots(db: SmithersDb, runId: string): Promise<RunSlots[]> {
  const use = await db.read("readRunSlots", (q) => limits.readUse(q, 0, runId));
  return use.map((u) => ({ key: u.key, held: u.held, waiting: u.waiting }));
}

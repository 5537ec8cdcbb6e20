/**
 * Steps that started only pure attempts (isPureAttempt), not committed yet: their writes, in
 * step order, go first in the next transaction. Nothing outside the engine acted on them, so a
 * crash before that commit loses nothing anyone saw; the run commits them before it starts
 * other work, sleeps or ends, and at least every PURE_BATCH_MAX_STEPS steps or PURE_BATCH_MAX_MS.
 */
import type { Sql } from "../../db/index.ts";
import { PURE_BATCH_MAX_MS, PURE_BATCH_MAX_STEPS } from "../core/index.ts";

type Write = (q: Sql) => void | Promise<void>;

export class PureStepBatch {
  private writes: Write[] = [];
  private steps = 0;
  private sinceMs = 0;

  /** Adds one step's writes to the batch. */
  add(writes: readonly Write[]): void {
    if (this.steps++ === 0) this.sinceMs = performance.now();
    this.writes.push(...writes);
  }

  /** The batch's writes, in step order; the batch is empty afterwards. */
  take(): Write[] {
    this.steps = 0;
    return this.writes.splice(0);
  }

  /** The group is too many steps or too old to wait for a later commit. */
  isFull(): boolean {
    return this.steps >= PURE_BATCH_MAX_STEPS || (this.steps > 0 && performance.now() - this.sinceMs >= PURE_BATCH_MAX_MS);
  }
}

/**
 * A clock that moves only when told: the engine's time in a test. Timers are kept in a list and
 * fire when the time is set past them, in the order of their time (ties in the order they were
 * set). Each timer belongs to an owner (a drive of the test kit), so the kit can tell whose run
 * is waiting for the clock.
 */
import type { Clock } from "../engine/index.ts";

type VirtualTimer = { readonly atMs: number; readonly seq: number; readonly fn: () => void; readonly owner: object };

export class VirtualClock {
  private timeMs: number;
  private seq = 0;
  private readonly timers = new Set<VirtualTimer>();
  /** Bumped by every read and timer call of the engine: the kit's sign that something still moves. */
  activity = 0;

  constructor(startMs: number) {
    this.timeMs = startMs;
  }

  /** The time, without counting as activity. */
  get nowMs(): number {
    return this.timeMs;
  }

  /** The Clock a run sees: this time, its timers owned by `owner`. */
  for(owner: object): Clock {
    return {
      now: () => {
        this.activity++;
        return this.timeMs;
      },
      setTimeout: (fn, ms) => {
        this.activity++;
        const timer: VirtualTimer = { atMs: this.timeMs + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.seq++, fn, owner };
        this.timers.add(timer);
        return timer;
      },
      clearTimeout: (timer) => {
        this.activity++;
        this.timers.delete(timer as VirtualTimer);
      },
    };
  }

  /** The earliest time a timer is set for, if any. */
  nextAtMs(): number | undefined {
    let next: number | undefined;
    for (const t of this.timers) if (next === undefined || t.atMs < next) next = t.atMs;
    return next;
  }

  /** Whether a timer of `owner` is set. */
  hasTimers(owner: object): boolean {
    for (const t of this.timers) if (t.owner === owner) return true;
    return false;
  }

  /** Moves the time to `atMs` (never back). */
  set(atMs: number): void {
    this.timeMs = Math.max(this.timeMs, atMs);
  }

  /** Fires every timer due now, earliest first; returns how many fired. */
  fireDue(): number {
    const due = [...this.timers].filter((t) => t.atMs <= this.timeMs).sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
    for (const t of due) {
      // One fired earlier in this pass may have cleared it.
      if (!this.timers.delete(t)) continue;
      t.fn();
    }
    return due.length;
  }
}

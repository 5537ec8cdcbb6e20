/**
 * Rows that ride along with the next transaction: the engine's frames and staged events are not
 * written on their own but inside whatever transaction commits next (an attempt starting or
 * finishing, a skip, the run's end). An item leaves the outbox only once that transaction has
 * committed; a rollback leaves it for the next one.
 */
import type { SmithersDb } from "../../db/index.ts";

export class Outbox<T> {
  private items: T[] = [];
  private reserved = 0;

  get size(): number {
    return this.items.length;
  }

  /** Forgets every item (outside any transaction): what could not be stored is given up. */
  clear(): void {
    this.items = [];
    this.reserved = 0;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /**
   * Pushes inside an open transaction: the item is taken back if that transaction rolls back
   * (its callback will push it again when retried). Returns how many items it pushed (1).
   */
  pushInTransaction(db: SmithersDb, item: T, onRollback?: () => void): void {
    this.items.push(item);
    db.afterTransaction(
      () => undefined,
      () => {
        const at = this.items.lastIndexOf(item);
        if (at >= 0) this.items.splice(at, 1);
        onRollback?.();
      },
    );
  }

  /** Inside an open transaction: `write`s every item not yet taken, and drops them after the commit. */
  async writeIn(db: SmithersDb, write: (items: T[]) => unknown, onStored?: (items: T[]) => void): Promise<void> {
    const batch = this.items.slice(this.reserved);
    if (batch.length === 0) return;
    await write(batch);
    this.reserved += batch.length;
    db.afterTransaction(
      () => {
        this.reserved -= batch.length;
        const stored = this.items.splice(0, batch.length);
        onStored?.(stored);
      },
      () => {
        this.reserved -= batch.length;
      },
    );
  }
}

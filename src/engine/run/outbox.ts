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
  /** What pushInTransaction added inside the open transaction: taken back, all at once, if it rolls back. */
  private inTx: { items: T[]; undo: (() => void)[] } | undefined;

  get size(): number {
    return this.items.length;
  }

  /** Forgets every item (outside any transaction): what could not be stored is given up. */
  clear(): void {
    this.items = [];
    this.reserved = 0;
    this.inTx = undefined;
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
    let tx = this.inTx;
    if (tx === undefined) {
      // One pair of hooks per transaction, however many items it pushes (a step stages a few per
      // task). The transactions that push into one outbox (a run's steps and its end) run one at a time.
      const opened: { items: T[]; undo: (() => void)[] } = { items: [], undo: [] };
      tx = this.inTx = opened;
      db.afterTransaction(
        () => {
          if (this.inTx === opened) this.inTx = undefined;
        },
        () => {
          if (this.inTx === opened) this.inTx = undefined;
          for (const pushed of opened.items) {
            const at = this.items.lastIndexOf(pushed);
            if (at >= 0) this.items.splice(at, 1);
          }
          for (const undo of opened.undo) undo();
        },
      );
    }
    tx.items.push(item);
    if (onRollback) tx.undo.push(onRollback);
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

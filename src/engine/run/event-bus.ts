/**
 * The run's event bus: listeners hear every event at once, in emit order, with its seq; the
 * journal (`_smithers_events`) is written behind them on one background promise chain
 * (`persistTail`) in batches, and `flush()` waits for it. The engine flushes at task boundaries
 * and at run end, so at most the events of the task in flight can be lost to a crash.
 *
 * Seqs handed to listeners are counted in memory from `startSeq`; the stored seq is allocated by
 * the database (MAX+1) and matches as long as this bus is the run's only writer and emits no
 * identical event twice (a de-duplicated event is stored once). Writes issued while the caller
 * owns an open transaction join it, so they commit or roll back with it.
 */
import { EVENT_BATCH_MAX, events, type Sql, type SmithersDb } from "../../db/index.ts";
import { Outbox } from "./outbox.ts";

/** What the bus carries; `runId`, `type` and `timestampMs` are columns, the rest is `payload_json`. */
export type BusEvent = { type: string; runId: string; timestampMs: number; [key: string]: unknown };

export type EventListener<E> = (event: E, seq: number) => void;

export type EventBusOptions = {
  db: SmithersDb;
  runId: string;
  /** Seq of the first event emitted (resume passes the stored MAX(seq) + 1). Default 0. */
  startSeq?: number;
  /** Write events to `_smithers_events` (default true); false keeps them in memory only. */
  persist?: boolean;
  /** Where a throwing listener's error goes; a faulty observer must never stop the run. */
  onListenerError?: (error: unknown) => void;
};

/**
 * @example
 * const bus = new EventBus({ db, runId });
 * bus.on((event, seq) => console.log(seq, event.type));
 * bus.emitEventQueued({ type: "NodeStarted", runId, timestampMs: Date.now(), nodeId: "a" });
 * await bus.flush();
 */
export class EventBus<E extends BusEvent = BusEvent> {
  readonly runId: string;
  private readonly db: SmithersDb;
  private readonly persist: boolean;
  private readonly onListenerError: (error: unknown) => void;
  private readonly listeners = new Set<EventListener<E>>();
  private nextSeq: number;
  private pending: events.NewEvent[] = [];
  private draining = false;
  private persistTail: Promise<void> = Promise.resolve();
  private persistError: unknown = undefined;
  /** Staged events: numbered now, stored by the caller's next transaction, heard once stored. */
  private readonly staged = new Outbox<Staged>();

  constructor(options: EventBusOptions) {
    this.db = options.db;
    this.runId = options.runId;
    this.nextSeq = options.startSeq ?? 0;
    this.persist = options.persist ?? true;
    this.onListenerError = options.onListenerError ?? ((error) => console.error("smithers: event listener threw", error));
  }

  /** The seq the next event will get. */
  get seq(): number {
    return this.nextSeq;
  }

  /** Subscribes; returns the unsubscribe function. */
  on(listener: EventListener<E>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Notifies listeners now and persists in the background; returns the event's seq. */
  emitEventQueued(event: E): number {
    const seq = this.nextSeq++;
    this.notify(event, seq);
    if (this.persist) this.enqueue(event);
    return seq;
  }

  private notify(event: E, seq: number): void {
    for (const listener of this.listeners) {
      try {
        listener(event, seq);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  /** The row stored for an event: runId, type and time are columns, so the payload omits them. */
  private toRow(event: E): events.NewEvent {
    const { runId, timestampMs, type, ...payload } = event;
    return { runId, timestampMs, type, payloadJson: JSON.stringify(payload) };
  }

  /**
   * Numbers the event now; it is stored by the next `writeStagedIn` (inside the caller's
   * transaction) and listeners hear it once that transaction committed, in seq order.
   */
  stage(event: E): number {
    const { runId, timestampMs, ...body } = event;
    return this.stageBody(body as EventBodyOf<E>, timestampMs, runId);
  }

  /** `stage` from inside an open transaction: taken back (and its seq reused) if that transaction rolls back. */
  stageInTransaction(event: E): number {
    const { runId, timestampMs, ...body } = event;
    return this.stageBodyInTransaction(body as EventBodyOf<E>, timestampMs, runId);
  }

  /**
   * `stage` for an event given as its body (no runId or time) and its time: the engine's way, as
   * it stages several events per task and the body is stored as it is, without a copy of the
   * event (one is made for listeners, only when there are any).
   */
  stageBody(body: EventBodyOf<E>, timestampMs: number, runId = this.runId): number {
    const seq = this.nextSeq++;
    this.staged.push({ body, runId, timestampMs, seq });
    return seq;
  }

  /** `stageBody` from inside an open transaction (see stageInTransaction). */
  stageBodyInTransaction(body: EventBodyOf<E>, timestampMs: number, runId = this.runId): number {
    const seq = this.nextSeq++;
    this.staged.pushInTransaction(this.db, { body, runId, timestampMs, seq }, this.unstage);
    return seq;
  }

  /** A staged event's transaction rolled back: its seq is given back. */
  private readonly unstage = () => {
    this.nextSeq--;
  };

  /** Gives up the staged events (outside any transaction), when SQLite refused to store them. */
  dropStaged(): void {
    this.staged.clear();
  }

  get stagedCount(): number {
    return this.staged.size;
  }

  /** Inside an open transaction: stores the staged events; listeners hear them after the commit. */
  async writeStagedIn(q: Sql): Promise<void> {
    await this.staged.writeIn(
      this.db,
      (items) =>
        events.insertEventsIn(
          q,
          items.map(({ body, runId, timestampMs }) => ({ runId, timestampMs, type: body.type, payloadJson: payloadJsonOf(body) })),
          { dedupe: false },
        ),
      (items) => {
        if (this.listeners.size === 0) return;
        for (const { body, runId, timestampMs, seq } of items) this.notify({ ...body, runId, timestampMs } as E, seq);
      },
    );
  }

  /** Stores the staged events in a transaction of their own, if there are any. */
  async flushStaged(): Promise<void> {
    if (this.staged.size > 0) await this.db.withTransaction("flushEvents", async (q) => await this.writeStagedIn(q));
  }

  /**
   * Notifies listeners and waits until the event (and everything queued before it) is stored.
   * Rejects with the persistence error, if any.
   */
  async emit(event: E): Promise<number> {
    const seq = this.emitEventQueued(event);
    await this.flush();
    return seq;
  }

  /**
   * Waits for every event emitted so far to be stored. If a background write failed since the
   * last flush, rejects with that error (once); the events of later batches are still written.
   */
  async flush(): Promise<void> {
    await this.persistTail;
    const error = this.persistError;
    if (error !== undefined) {
      this.persistError = undefined;
      throw error;
    }
  }

  private enqueue(event: E): void {
    this.pending.push(this.toRow(event));
    if (this.draining) return;
    this.draining = true;
    this.persistTail = this.persistTail.then(() => this.drain());
  }

  /** Writes queued events, up to EVENT_BATCH_MAX per transaction, until none are left. */
  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, EVENT_BATCH_MAX);
      try {
        await events.insertEvents(this.db, batch);
      } catch (error) {
        this.persistError ??= error;
      }
    }
    this.draining = false;
  }
}

/** An event without the fields the bus adds (its run and its time). */
type EventBodyOf<E extends BusEvent> = Omit<E, "runId" | "timestampMs"> & { type: string };

/** A staged event: its body as the engine built it, numbered, with its run and time beside it. */
type Staged = { body: { type: string; [key: string]: unknown }; runId: string; timestampMs: number; seq: number };

/** `{"type":<type>` for each type seen: the head JSON.stringify gives a body whose first key is its type. */
const typeHeads = new Map<string, string>();

/**
 * The stored payload of a body: the body without its `type` (a column of its own). The engine's
 * bodies name their type first, so the payload is the body's JSON with that first member cut,
 * not a copy of the body made to stringify; any other body is copied without it.
 */
export function payloadJsonOf(body: { type: string; [key: string]: unknown }): string {
  const json = JSON.stringify(body);
  let head = typeHeads.get(body.type);
  if (head === undefined) typeHeads.set(body.type, (head = `{"type":${JSON.stringify(body.type)}`));
  if (json.startsWith(head)) {
    const rest = json.charCodeAt(head.length); // "," before the next member, or "}" when the type was the only one
    if (rest === 125 /* } */) return "{}";
    if (rest === 44 /* , */) return `{${json.slice(head.length + 1)}`;
  }
  const { type: _type, ...payload } = body;
  return JSON.stringify(payload);
}

/**
 * A bus that continues a run's journal: numbering starts after the highest stored seq.
 * @example
 * const bus = await openEventBus({ db, runId }); // on resume
 */
export async function openEventBus<E extends BusEvent = BusEvent>(options: Omit<EventBusOptions, "startSeq">): Promise<EventBus<E>> {
  const startSeq = (await events.lastEventSeq(options.db, options.runId)) + 1;
  return new EventBus<E>({ ...options, startSeq });
}

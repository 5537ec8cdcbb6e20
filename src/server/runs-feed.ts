/**
 * `GET /runs/stream`: the runs list as server-sent `runs` events, the whole (filtered) list each
 * time it changed. One feed per distinct query reads and serializes the list once per change and
 * hands the same encoded frame to every client following that query: 200 dashboards cost one read,
 * not 200.
 */
import type { Context } from "hono";
import { streamSSE, type SSEStreamingApi } from "hono/streaming";
import type { SmithersDb } from "../db/index.ts";
import { listRunItems } from "../engine/index.ts";
import type { RunsQuery } from "./routes.ts";
import { ANY_RUN, type FollowOptions } from "./sse.ts";

/** A feed reads the list again at least this often (runs other processes execute wake nobody here). */
const RUNS_STREAM_POLL_MS = 1000;
/** ...and at most this often: a burst of events (a run of many tasks) costs one read per gap. */
const RUNS_STREAM_GAP_MS = 150;

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

/**
 * One client's stream. A client still writing the frame before is handed only the newest one
 * when it is done: each frame is the whole list, so a slow client skips lists, never holds up
 * the feed or the other clients, and never piles frames up in memory.
 */
class Subscriber {
  private pending: Uint8Array | undefined;
  private writing = false;
  constructor(private readonly stream: SSEStreamingApi) {}

  send(frame: Uint8Array): void {
    this.pending = frame;
    if (!this.writing) void this.flush();
  }

  private async flush(): Promise<void> {
    this.writing = true;
    try {
      while (this.pending && !this.stream.aborted) {
        const frame = this.pending;
        this.pending = undefined;
        await this.stream.write(frame);
      }
    } catch {
      // a client gone mid-write: its stream's onAbort unsubscribes it
    } finally {
      this.writing = false;
    }
  }
}

class RunsFeed {
  private readonly subscribers = new Set<Subscriber>();
  private running = false;
  private text = "";
  private frame: Uint8Array | undefined;
  private id = 0;

  constructor(
    private readonly o: { db: SmithersDb; follow: FollowOptions; query: RunsQuery; onReadError: (what: string, error: unknown) => void },
    private readonly onIdle: () => void,
  ) {}

  /** Adds a client; it gets the latest list at once when the feed has one, then every change. */
  subscribe(subscriber: Subscriber): () => void {
    this.subscribers.add(subscriber);
    if (this.frame) subscriber.send(this.frame);
    if (!this.running) void this.loop();
    return () => this.subscribers.delete(subscriber);
  }

  private async loop(): Promise<void> {
    this.running = true;
    let lastSent = Date.now();
    while (this.subscribers.size > 0) {
      // Listen before reading, so an event during the read wakes the next pass.
      const woke = this.o.follow.waitForEvent(ANY_RUN, RUNS_STREAM_POLL_MS);
      try {
        const text = JSON.stringify({ runs: await listRunItems(this.o.db, this.o.query) });
        if (text !== this.text) {
          // JSON.stringify escapes line breaks, so the list is one `data:` line.
          this.frame = encoder.encode(`id: ${++this.id}\nevent: runs\ndata: ${text}\n\n`);
          this.text = text;
          this.broadcast(this.frame);
          lastSent = Date.now();
        } else if (Date.now() - lastSent >= this.o.follow.heartbeatMs) {
          this.broadcast(KEEP_ALIVE);
          lastSent = Date.now();
        }
      } catch (error) {
        // The clients keep the list they have; the next pass reads again.
        this.o.onReadError("GET /runs/stream could not read the runs list", error);
      }
      await woke;
      await Bun.sleep(RUNS_STREAM_GAP_MS);
    }
    // Synchronous from the size check on: no client can join between it and here.
    this.running = false;
    this.onIdle();
  }

  private broadcast(frame: Uint8Array): void {
    for (const subscriber of this.subscribers) subscriber.send(frame);
  }
}

/** The feeds of one server, by query; a feed ends when its last client leaves. */
export function createRunsFeeds(o: { db: SmithersDb; follow: FollowOptions; onReadError: (what: string, error: unknown) => void }) {
  const feeds = new Map<string, RunsFeed>();
  return {
    /** Streams the runs list for `query` to this client until it disconnects. */
    stream(c: Context, query: RunsQuery): Response {
      const key = JSON.stringify([query.status ?? null, query.workflow ?? null, query.limit ?? null]);
      return streamSSE(c, async (stream) => {
        let feed = feeds.get(key);
        if (!feed) {
          const created = new RunsFeed({ ...o, query }, () => {
            if (feeds.get(key) === created) feeds.delete(key);
          });
          feeds.set(key, created);
          feed = created;
        }
        const unsubscribe = feed.subscribe(new Subscriber(stream));
        await new Promise<void>((done) => {
          if (stream.aborted) return done();
          stream.onAbort(done);
        });
        unsubscribe();
      });
    },
  };
}

import { describe, expect, test } from "bun:test";
import { count } from "drizzle-orm";
import { dbRetryCount, smithersCron, SmithersDb, type Drizzle, type Sql } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { forEachBackend, removeTempDirs, tempDbPath } from "./backends.ts";
import { rejection } from "../helpers.ts";

const cron = (cronId: string) => ({ cronId, pattern: "* * * * *", workflowPath: "wf.tsx", createdAtMs: 1 });
/** SQLite's executor hands out the connection's synchronous Drizzle as `orm`: these queue tests use it as such. */
const sync = (d: Drizzle | Sql): Drizzle => ("orm" in d ? (d.orm as unknown as Drizzle) : d);
const insertCron = (d: Drizzle | Sql, cronId: string) => sync(d).insert(smithersCron).values(cron(cronId)).run();
const cronIds = (d: Drizzle | Sql) =>
  sync(d)
    .select({ id: smithersCron.cronId })
    .from(smithersCron)
    .all()
    .map((r) => r.id);
const cronCount = (d: Drizzle | Sql) => sync(d).select({ n: count() }).from(smithersCron).get()?.n ?? 0;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

forEachBackend((db) => {
  describe("SmithersDb.write", () => {
    test("writes run in the order they were issued, even when an earlier one is slow", async () => {
      const gate = deferred();
      const first = db().write("first", async (d) => {
        await gate.promise;
        insertCron(d, "a");
      });
      const second = db().write("second", (d) => insertCron(d, "b"));
      gate.resolve();
      await Promise.all([first, second]);
      expect(cronIds(db().db)).toEqual(["a", "b"]);
    });

    test("an error that is not a busy/IO error passes through unchanged and is not retried", async () => {
      await db().write("seed", (d) => insertCron(d, "a"));
      const before = dbRetryCount();
      const error = await rejection(db().write("dup", (d) => insertCron(d, "a")));
      expect((error as { code?: string }).code).toBe("SQLITE_CONSTRAINT_PRIMARYKEY");
      expect(dbRetryCount() - before).toBe(0);
    });

    test("a failed write does not stop the queue", async () => {
      expect((await rejection<Error>(db().write("fails", () => Promise.reject(new Error("boom"))))).message).toBe("boom");
      await db().write("after", (d) => insertCron(d, "a"));
      expect(cronIds(db().db)).toEqual(["a"]);
    });
  });

  describe("SmithersDb.read", () => {
    test("a read issued during an open transaction waits for the commit and sees its rows", async () => {
      const gate = deferred();
      let committed = false;
      const tx = db()
        .withTransaction("tx", async (d) => {
          insertCron(d, "a");
          await gate.promise;
          insertCron(d, "b");
        })
        .then(() => {
          committed = true;
        });
      const read = db().read("count", (d) => ({ n: cronCount(d), afterCommit: committed }));
      // give a read that wrongly skipped the queue time to run before the commit
      await Bun.sleep(5);
      gate.resolve();
      await tx;
      expect(await read).toEqual({ n: 2, afterCommit: true });
    });

    test("the transaction's owner reads its own uncommitted rows at once", async () => {
      const seen = await db().withTransaction("tx", async (d) => {
        insertCron(d, "a");
        return db().read("own", (inner) => cronIds(inner));
      });
      expect(seen).toEqual(["a"]);
    });
  });

  describe("SmithersDb.withTransaction", () => {
    test("commits all statements together and returns the callback's value", async () => {
      const value = await db().withTransaction("tx", (d) => {
        insertCron(d, "a");
        insertCron(d, "b");
        return 42;
      });
      expect(value).toBe(42);
      expect(cronIds(db().db)).toEqual(["a", "b"]);
    });

    test("a failing transaction rolls back and leaves no rows", async () => {
      const error = await rejection(
        db().withTransaction("tx", async (d) => {
          insertCron(d, "a");
          await db().write("inner", (inner) => insertCron(inner, "b"));
          throw new Error("boom");
        }),
      );
      expect((error as Error).message).toBe("boom");
      expect(cronCount(db().db)).toBe(0);
      expect(db().inTransaction()).toBe(false);
      await db().withTransaction("next", (d) => insertCron(d, "c"));
      expect(cronIds(db().db)).toEqual(["c"]);
    });

    test("a rollback hook that throws still lets the transaction roll back, the other hooks run, and the caller sees the original error", async () => {
      const ran: string[] = [];
      const error = await rejection(
        db().withTransaction("tx", (d) => {
          insertCron(d, "a");
          db().afterTransaction(
            () => ran.push("commit"),
            () => {
              ran.push("throwing hook");
              throw new Error("hook failed");
            },
          );
          db().afterTransaction(
            () => ran.push("commit"),
            () => ran.push("second hook"),
          );
          throw new Error("boom");
        }),
      );
      expect((error as Error).message).toBe("boom");
      expect(ran).toEqual(["throwing hook", "second hook"]);
      expect(db().sqlite.inTransaction).toBe(false);
      expect(cronCount(db().db)).toBe(0);
      await db().withTransaction("next", (d) => insertCron(d, "c"));
      expect(cronIds(db().db)).toEqual(["c"]);
    });

    test("a nested transaction is rejected with DB_NESTED_TRANSACTION and the outer one still commits", async () => {
      let nested: unknown;
      await db().withTransaction("outer", async (d) => {
        insertCron(d, "a");
        nested = await rejection(db().withTransaction("inner", (inner) => insertCron(inner, "b")));
      });
      expect(SmithersError.is(nested, "DB_NESTED_TRANSACTION")).toBe(true);
      expect(cronIds(db().db)).toEqual(["a"]);
    });

    test("writes by the owner join the transaction instead of queueing behind it", async () => {
      await db().withTransaction("tx", async () => {
        await db().write("w", (d) => insertCron(d, "a"));
        expect(db().inTransaction()).toBe(true);
      });
      expect(cronIds(db().db)).toEqual(["a"]);
    });

    test("work started by the transaction but run after it is queued, not joined", async () => {
      const committed = deferred();
      let late: Promise<void> | undefined;
      await db().withTransaction("tx", (d) => {
        insertCron(d, "a");
        late = committed.promise.then(() => db().write("late", (inner) => insertCron(inner, "b")));
      });
      committed.resolve();
      await late;
      expect(cronIds(db().db)).toEqual(["a", "b"]);
    });
  });

  describe("SmithersDb.close", () => {
    test("work issued after close fails with DB_CLOSED", async () => {
      await db().close();
      expect(SmithersError.is(await rejection(db().read("r", () => 1)), "DB_CLOSED")).toBe(true);
    });

    test("work queued before close finishes, close resolves after it, and work issued after close is refused at once", async () => {
      const gate = deferred();
      const first = db().write("slow", async (d) => {
        await gate.promise;
        insertCron(d, "a");
      });
      const tx = db().withTransaction("queued", (d) => insertCron(d, "b"));
      const seen = db().read("queued read", (d) => cronIds(d));
      let closed = false;
      const closing = db()
        .close()
        .then(() => {
          closed = true;
        });
      const late = rejection(db().write("late", (d) => insertCron(d, "c")));
      await Bun.sleep(5);
      // refused while the queue is still held up by the slow write, which close does not cut short
      expect(await Promise.race([late, Bun.sleep(0).then(() => "still pending")])).not.toBe("still pending");
      expect(SmithersError.is(await late, "DB_CLOSED")).toBe(true);
      expect(closed).toBe(false);
      gate.resolve();
      await Promise.all([first, tx]);
      expect(await seen).toEqual(["a", "b"]);
      await closing;
      expect(closed).toBe(true);
      expect(SmithersError.is(await rejection(db().read("after", () => 1)), "DB_CLOSED")).toBe(true);
    });
  });
});

describe("SmithersDb", () => {
  test("a second connection never sees a transaction's rows before its commit", async () => {
    const path = tempDbPath();
    const writer = new SmithersDb(path);
    const reader = new SmithersDb(path);
    try {
      const seenInside = await writer.withTransaction("tx", async (d) => {
        insertCron(d, "a");
        return reader.read("peek", (r) => cronCount(r));
      });
      expect(seenInside).toBe(0);
      expect(await reader.read("after", (r) => cronCount(r))).toBe(1);
    } finally {
      await writer.close();
      await reader.close();
      removeTempDirs();
    }
  });
});

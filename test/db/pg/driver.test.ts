/**
 * The PostgreSQL driver's fault settings against a real server: the session limits every
 * connection starts with (and a URL that overrides them), a transaction whose connection is
 * killed half-way running again on a new one without anything thrown uncaught, and a vanished
 * client's open transaction ended by the server so its row lock frees.
 */
import net from "node:net";
import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { isConnectionLost, isRetryablePgError, PG_DRIVER_DEFAULTS, reconnectDelaySeconds } from "../../../src/db/pg/driver.ts";
import { PgDb } from "../../../src/db/pg/pg-db.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();
const DRIVER = resolve("src/db/pg/driver.ts");

type Settings = { statement_timeout: string; idle: string; ka_idle: string; ka_interval: string; ka_count: string };
const SHOW = `SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('idle_in_transaction_session_timeout') AS idle,
  current_setting('tcp_keepalives_idle') AS ka_idle, current_setting('tcp_keepalives_interval') AS ka_interval, current_setting('tcp_keepalives_count') AS ka_count`;

describe("isRetryablePgError", () => {
  test("a lost connection is retryable also when Drizzle's query error wraps it", () => {
    const wrapped = new Error("Failed query: select 1", { cause: Object.assign(new Error("terminating connection"), { code: "57P01" }) });
    expect([isConnectionLost(wrapped), isRetryablePgError(wrapped)]).toEqual([true, true]);
    expect(isRetryablePgError(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
  });
});

describe("a socket postgres.js let go of", () => {
  test("takes an error emitted after it dropped all its listeners instead of throwing it (an uncaught ECONNRESET)", () => {
    const socket = new net.Socket();
    socket.on("error", () => undefined);
    socket.removeAllListeners(); // as postgres.js's closed() does
    expect(() => socket.emit("error", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }))).not.toThrow();
    expect(socket.listenerCount("error")).toBe(1);
    const plain = new net.Socket(); // a socket that never dropped its listeners still throws, as Node's do
    expect(() => plain.emit("error", new Error("unheard"))).toThrow("unheard");
    socket.destroy();
    plain.destroy();
  });
});

describe("reconnectDelaySeconds", () => {
  test("starts at tens of ms and never exceeds the cap, however many connects failed", () => {
    expect(reconnectDelaySeconds(0, () => 1)).toBeCloseTo(0.05);
    expect(Math.max(...[5, 10, 50, 1000].map((n) => reconnectDelaySeconds(n, () => 1)))).toBe(PG_DRIVER_DEFAULTS.max_reconnect_delay_s);
  });
});

describe.skipIf(!pg)("connect", () => {
  test("every session starts with a 30 s statement limit, a 10 s idle-in-transaction limit and 5/2/3 TCP keepalives", async () => {
    const db = new PgDb(await pg!.createDatabase(), { ensureTables: false });
    try {
      const row = await db.read("show", (q) => q.get<Settings>(SHOW));
      expect(row).toEqual({ statement_timeout: "30s", idle: "10s", ka_idle: "5", ka_interval: "2", ka_count: "3" });
    } finally {
      await db.close();
    }
  });

  test("a query parameter of the URL wins over a session default", async () => {
    const db = new PgDb(`${await pg!.createDatabase()}?statement_timeout=45s&idle_in_transaction_session_timeout=0`, { ensureTables: false });
    try {
      const row = await db.read("show", (q) => q.get<Settings>(SHOW));
      expect([row?.statement_timeout, row?.idle]).toEqual(["45s", "0"]);
    } finally {
      await db.close();
    }
  });
});

describe.skipIf(!pg)("PgDb.withTransaction", () => {
  test("a transaction whose connection is killed half-way runs again from its start on a new one: one row, nothing uncaught", async () => {
    const url = await pg!.createDatabase();
    const admin = connectPg(url, { max: 1 });
    await admin`CREATE TABLE t (id int PRIMARY KEY, try int NOT NULL)`;
    const db = new PgDb(url, { ensureTables: false });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    let tries = 0;
    try {
      const result = await db.withTransaction("killed", async (q) => {
        tries++;
        await q.run("INSERT INTO t (id, try) VALUES (1, ?)", tries);
        if (tries === 1) {
          const pid = (await q.get<{ pid: number }>("SELECT pg_backend_pid() AS pid"))!.pid;
          await admin`SELECT pg_terminate_backend(${pid})`;
        }
        await q.get("SELECT 1");
        return tries;
      });
      await Bun.sleep(100); // a write postgres.js deferred with setImmediate would have thrown by now
      expect(result).toBe(2);
      expect((await admin`SELECT id, try FROM t`).map((r) => [r.id, r.try])).toEqual([[1, 2]]);
      expect(uncaught).toEqual([]);
    } finally {
      process.off("uncaughtException", onUncaught);
      await db.close();
      await admin.end();
    }
  });

  test("a transaction whose connection is killed during its COMMIT is looked up, found aborted, and runs again: one row", async () => {
    const url = await pg!.createDatabase();
    const admin = connectPg(url, { max: 1 });
    await admin`CREATE TABLE t (id int PRIMARY KEY, try int NOT NULL)`;
    // A deferred constraint trigger runs inside COMMIT: the first try's COMMIT sleeps there until it is killed.
    await admin.unsafe(`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.try = 1 THEN PERFORM pg_sleep(10); END IF; RETURN NULL; END $$`);
    await admin`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`;
    const db = new PgDb(url, { ensureTables: false });
    let tries = 0;
    try {
      const started = performance.now();
      await db.withTransaction("killed-in-commit", async (q) => {
        tries++;
        await q.run("INSERT INTO t (id, try) VALUES (1, ?)", tries);
        if (tries === 1) {
          const pid = (await q.get<{ pid: number }>("SELECT pg_backend_pid() AS pid"))!.pid;
          // postgres.js runs a query once it is awaited or then()-ed, so this one is started with execute().
          setTimeout(() => void admin`SELECT pg_terminate_backend(${pid})`.execute(), 300);
        }
      });
      expect(tries).toBe(2);
      expect((await admin`SELECT id, try FROM t`).map((r) => [r.id, r.try])).toEqual([[1, 2]]);
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await db.close();
      await admin.end();
    }
  });

  test("a client that stops answering inside a transaction loses it: the server rolls it back and its row lock frees", async () => {
    const url = await pg!.createDatabase();
    const admin = connectPg(url, { max: 1 });
    await admin`CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)`;
    await admin`INSERT INTO t VALUES (1, 0)`;
    // The client holds the row locked in an open transaction, then is stopped (SIGSTOP): a host gone quiet.
    const script = `import { connect } from ${JSON.stringify(DRIVER)};
      const sql = connect(process.argv[1]);
      await sql.begin(async (tx) => { await tx\`UPDATE t SET v = 1 WHERE id = 1\`; console.log("locked"); await new Promise(() => {}); });`;
    const child = Bun.spawn([process.execPath, "-e", script, `${url}?idle_in_transaction_session_timeout=500`], { stdout: "pipe", stderr: "inherit" });
    try {
      const reader = child.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("locked");
      child.kill("SIGSTOP");
      const started = performance.now();
      await admin`UPDATE t SET v = 2 WHERE id = 1`;
      const waitedMs = performance.now() - started;
      expect((await admin`SELECT v FROM t`)[0]!.v).toBe(2);
      expect(waitedMs).toBeGreaterThan(300); // it did wait on the lock, until the server ended that session
    } finally {
      child.kill("SIGKILL");
      await child.exited;
      await admin.end();
    }
  });
});

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { connectPg, pgTestServer, startPostgres } from "./postgres.ts";

const pg = await pgTestServer();
const processUser = (pid: number) => spawnSync("ps", ["-o", "user=", "-p", String(pid)], { encoding: "utf8" }).stdout.trim();
/** Alive and not a zombie: a stopped postmaster's parent is init, which may reap it a moment later. */
const isRunning = (pid: number) => {
  const state = spawnSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).stdout.trim();
  return state !== "" && !state.startsWith("Z");
};

describe.skipIf(!pg)("pgTestServer", () => {
  test("answers a query on 127.0.0.1 at the port it reports", async () => {
    expect(pg!.url).toBe(`postgres://smithers@127.0.0.1:${pg!.port}/postgres`);
    const sql = connectPg(pg!.url);
    const [row] = await sql<{ version: string; address: string }[]>`select version(), inet_server_addr()::text as address`;
    await sql.end();
    expect(row!.version).toStartWith("PostgreSQL ");
    expect(row!.address).toBe("127.0.0.1/32");
  });

  test("runs the server as the postgres user when the tests run as root", () => {
    const expected = process.getuid?.() === 0 ? "postgres" : spawnSync("id", ["-un"], { encoding: "utf8" }).stdout.trim();
    expect(processUser(pg!.pid)).toBe(expected);
  });

  test("is the same server for every caller in the process", async () => {
    expect(await pgTestServer()).toBe(pg);
  });

  test("createDatabase gives each caller its own database: a table made in one is absent from the other", async () => {
    const [first, second] = [await pg!.createDatabase(), await pg!.createDatabase()];
    expect(first).not.toBe(second);
    const a = connectPg(first);
    const b = connectPg(second);
    await a`create table only_here (id int8 primary key)`;
    await a`insert into only_here values (41)`;
    const inFirst = await a<{ id: number }[]>`select id from only_here`;
    const inSecond = await b<{ n: number }[]>`select count(*) as n from information_schema.tables where table_name = 'only_here'`;
    await Promise.all([a.end(), b.end()]);
    expect([...inFirst]).toEqual([{ id: 41 }]);
    expect([...inSecond]).toEqual([{ n: 0 }]);
  });

  test("createDatabase refuses a name that is not a plain identifier", async () => {
    const error = await pg!.createDatabase('x"; drop database postgres; --').catch((e: Error) => e);
    expect(String(error)).toContain("Not a plain database name");
  });
});

describe.skipIf(!pg)("startPostgres", () => {
  test("stop() ends the postmaster and removes the server's directory", async () => {
    const own = await startPostgres();
    const root = dirname(own.dataDir);
    expect(isRunning(own.pid)).toBe(true);
    await own.stop();
    expect(isRunning(own.pid)).toBe(false);
    expect(existsSync(root)).toBe(false);
  });

  test("stop() a second time does nothing", async () => {
    const own = await startPostgres();
    await own.stop();
    await own.stop();
    expect(existsSync(own.dataDir)).toBe(false);
  });
});

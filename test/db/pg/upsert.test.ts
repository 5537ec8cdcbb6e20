/** The conflict-target rewrite PostgreSQL needs for sqlite-core upserts (pg-db.test.tsx runs the upserts on a real server). */
import { describe, expect, test } from "bun:test";
import { unqualifiedConflictTarget } from "../../../src/db/pg/driver.ts";

describe("unqualifiedConflictTarget", () => {
  test("drops the table from each column of the conflict target and leaves the rest of the statement alone", () => {
    const text = `insert into "t" ("a", "b") values (?, ?) on conflict ("t"."a", "t"."b") do update set "c" = "t"."c"`;
    expect(unqualifiedConflictTarget(text)).toBe(`insert into "t" ("a", "b") values (?, ?) on conflict ("a", "b") do update set "c" = "t"."c"`);
    expect(unqualifiedConflictTarget(`insert into "t" ("a") values (?) on conflict ("t"."a") do nothing`)).toBe(
      `insert into "t" ("a") values (?) on conflict ("a") do nothing`,
    );
    expect(unqualifiedConflictTarget(`select 1`)).toBe(`select 1`);
  });
});

/** `--durability process|power` on `smithers up` and `smithers supervise`, as real processes. */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers } from "./cli-helpers.ts";

const PROBE = "test/fixtures/durability-probe.tsx";

describe("smithers up --durability", () => {
  for (const [flag, expected] of [
    [[], 1],
    [["--durability", "process"], 1],
    [["--durability", "power"], 2],
  ] as const) {
    test(`${flag.join(" ") || "no flag"}: the run's connection commits with synchronous = ${expected}`, () => {
      const dbPath = tempDbPath();
      const r = smithers(["up", PROBE, "--db", dbPath, ...flag]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(JSON.parse(r.stdout.slice(r.stdout.indexOf("{")))).toEqual({ synchronous: expected });
      expect(sql(dbPath, "SELECT synchronous FROM probe")).toEqual([{ synchronous: expected }]);
    });
  }

  test("an unknown mode or a missing value exits 2 with USAGE and creates no database", () => {
    const dbPath = tempDbPath();
    const bad = smithers(["up", PROBE, "--db", dbPath, "--durability", "disk"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toStartWith('smithers: USAGE: --durability must be process or power, got "disk"');
    expect(existsSync(dbPath)).toBe(false);
    const missing = smithers(["up", PROBE, "--db", dbPath, "--durability"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("USAGE");
  });
});

describe("smithers supervise --durability", () => {
  test("accepts process and power; anything else exits 2 with USAGE", () => {
    const dbPath = tempDbPath();
    expect(smithers(["up", PROBE, "--db", dbPath]).code).toBe(0);
    for (const mode of ["process", "power"]) {
      const r = smithers(["supervise", "--db", dbPath, "--durability", mode]);
      expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 0, stdout: "no stale runs, no due waits, no due cron slots\n", stderr: "" });
    }
    const bad = smithers(["supervise", "--db", dbPath, "--durability", "FULL"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toStartWith('smithers: USAGE: --durability must be process or power, got "FULL"');
  });
});

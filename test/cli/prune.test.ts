import { beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { smithers } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

/** One finished run of examples/hello.tsx; each test prunes its own copy. */
let template = "";
beforeAll(() => {
  template = tempDbPath();
  const up = smithers(["up", "examples/hello.tsx", "--db", template]);
  expect(up.code).toBe(0);
});

function copy(): string {
  const path = join(tempDbPath(), "..", "copy.db");
  copyFileSync(template, path);
  if (existsSync(`${template}-wal`)) copyFileSync(`${template}-wal`, `${path}-wal`);
  return path;
}

const counts = (dbPath: string) => sql(dbPath, "SELECT (SELECT COUNT(*) FROM _smithers_frames) frames, (SELECT COUNT(*) FROM _smithers_events) events");

describe("smithers prune", () => {
  test("--older-than 0 --vacuum --json prunes the ended run, prints the report as JSON and exits 0", () => {
    const dbPath = copy();
    const r = smithers(["prune", "--older-than", "0", "--vacuum", "--json", "--db", dbPath]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.runs).toHaveLength(1);
    expect(report.runs[0].status).toBe("finished");
    expect(report.eventsRemoved).toBeGreaterThan(0);
    expect(report.vacuumed).toBe(true);
    expect(counts(dbPath)).toEqual([{ frames: 2, events: 2 }]);
    expect(sql(dbPath, "SELECT message FROM greeting")).toEqual([{ message: "Hello, world!" }]);
  });

  test("--dry-run says what would go and leaves the database as it was", () => {
    const dbPath = copy();
    const before = counts(dbPath);
    const r = smithers(["prune", "--older-than", "0s", "--dry-run", "--db", dbPath]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Would prune 1 runs");
    expect(r.stdout).toContain("Dry run: nothing was changed.");
    expect(counts(dbPath)).toEqual(before);
  });

  test("by default only runs that ended more than 7 days ago are pruned", () => {
    const dbPath = copy();
    const before = counts(dbPath);
    const r = smithers(["prune", "--json", "--db", dbPath]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).runs).toEqual([]);
    expect(counts(dbPath)).toEqual(before);
  });

  test("a bad --older-than or an unknown flag exits 2 with a usage error", () => {
    const dbPath = copy();
    const bad = smithers(["prune", "--older-than", "soon", "--db", dbPath]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("USAGE");
    expect(bad.stderr).toContain("smithers prune [--older-than 7d]");
    expect(smithers(["prune", "--keep-all", "--db", dbPath]).code).toBe(2);
  });
});

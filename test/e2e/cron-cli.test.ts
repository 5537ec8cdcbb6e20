import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { openSmithersDb } from "../../src/db/index.ts";
import { addCron } from "../../src/engine/index.ts";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers, smithersAsync, startUntil } from "./cli-helpers.ts";

const steps = "test/fixtures/steps.tsx";

describe("smithers cron", () => {
  test("add prints the id and next fire, list shows the schedule (also as JSON), rm removes it", () => {
    const db = tempDbPath();
    const added = smithers(["cron", "add", steps, "--schedule", "0 9 * * *", "--tz", "America/New_York", "--input", '{"label":"n"}', "--db", db]);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^cron steps added; next fire \d{4}-\d\d-\d\dT(13|14):00:00\.000Z \(0 9 \* \* \* in America\/New_York\)/);
    const listed = smithers(["cron", "list", "--db", db]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain("ID     SCHEDULE   TZ");
    expect(listed.stdout).toMatch(/steps\s+0 9 \* \* \*\s+America\/New_York\s+\S+steps\.tsx\s+\S+Z\s+-\s+0\s+-/);
    const json = JSON.parse(smithers(["cron", "list", "--json", "--db", db]).stdout);
    expect(json.map((c: { cronId: string; input: unknown }) => [c.cronId, c.input])).toEqual([["steps", { label: "n" }]]);
    expect(smithers(["cron", "add", steps, "--schedule", "0 9 * * *", "--db", db]).code).toBe(2); // id taken
    expect(smithers(["cron", "rm", "steps", "--db", db]).stdout).toBe("cron steps removed\n");
    expect(smithers(["cron", "list", "--db", db]).stdout).toBe("no cron schedules\n");
    const again = smithers(["cron", "rm", "steps", "--db", db]);
    expect([again.code, again.stderr.split("\n")[0]]).toEqual([2, `smithers: CRON_NOT_FOUND: No cron schedule "steps" in ${db}`]);
  });

  test("an invalid expression or time zone exits 2 with INVALID_CRON and writes nothing", () => {
    const fresh = tempDbPath();
    const bad = smithers(["cron", "add", steps, "--schedule", "*/61 * * * *", "--db", fresh]);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("smithers: INVALID_CRON: ")]);
    expect(existsSync(fresh)).toBe(false);
    const db = tempDbPath();
    expect(smithers(["cron", "add", steps, "--schedule", "0 9 * * *", "--id", "ok", "--db", db]).code).toBe(0);
    const zone = smithers(["cron", "add", steps, "--schedule", "0 9 * * *", "--tz", "Nowhere/Land", "--id", "tz", "--db", db]);
    expect([zone.code, zone.stderr]).toEqual([2, expect.stringContaining("smithers: INVALID_CRON: ")]);
    const input = smithers(["cron", "add", steps, "--schedule", "0 9 * * *", "--input", "{nope", "--id", "in", "--db", db]);
    expect([input.code, input.stderr]).toEqual([2, expect.stringContaining("smithers: INVALID_INPUT: ")]);
    expect(smithers(["cron", "add", steps, "--db", db]).code).toBe(2); // no --schedule
    expect(sql(db, "SELECT cron_id FROM _smithers_cron")).toEqual([{ cron_id: "ok" }]);
  });

  test("two real `smithers supervise` processes on one database start a due slot exactly once", async () => {
    const dbPath = tempDbPath();
    const db = openSmithersDb(dbPath);
    // Added an hour ago: the slots since then were missed, the latest one is due.
    await addCron(db, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "daemon" }, now: () => Date.now() - 3_600_000 });
    await db.close();
    const results = await Promise.all([smithersAsync(["supervise", "--db", dbPath]), smithersAsync(["supervise", "--db", dbPath])]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    const lines = results.flatMap((r) => r.stdout.split("\n").filter((l) => l.startsWith("cron ")));
    const started = lines.filter((l) => / started cron:steps:\d+ finished$/.test(l));
    expect(started).toHaveLength(1);
    expect(lines.filter((l) => / skipped 1[12] missed slots$/.test(l))).toHaveLength(1);
    expect(sql(dbPath, "SELECT run_id, status FROM _smithers_runs")).toEqual([{ run_id: started[0]!.split(" ")[3]!, status: "finished" }]);
    expect(sql(dbPath, "SELECT COUNT(*) AS n FROM step WHERE node_id = 'a'")).toEqual([{ n: 1 }]);
  });

  test("`smithers supervise --watch` starts a due slot in its own process and reports it", async () => {
    const dbPath = tempDbPath();
    const db = openSmithersDb(dbPath);
    await addCron(db, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "watch" }, now: () => Date.now() - 600_000 });
    await db.close();
    const daemon = await startUntil(["supervise", "--watch", "--interval-ms", "100", "--db", dbPath], {}, "cron steps started cron:steps:");
    try {
      let status: unknown;
      for (let i = 0; i < 500 && status !== "finished"; i++) {
        status = sql<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs")[0]?.status;
        if (status !== "finished") await Bun.sleep(20);
      }
      expect(status).toBe("finished");
    } finally {
      daemon.kill("SIGTERM");
      await daemon.exited;
    }
    expect(sql(dbPath, "SELECT COUNT(*) AS n FROM _smithers_runs")).toEqual([{ n: 1 }]);
  });
});

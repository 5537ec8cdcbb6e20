/** `smithers human` and `smithers signal` end to end: real processes that exit between the wait and the answer. */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers, startUntil } from "./cli-helpers.ts";

const daemons: { kill: () => void; exited: Promise<number> }[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    d.kill();
    await d.exited;
  }
});

/** Polls `query` until it returns `expected` (JSON-equal) or the deadline passes; returns the last value. */
async function until<T>(read: () => T, expected: T, deadlineMs = 15_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last = read();
  while (JSON.stringify(last) !== JSON.stringify(expected) && Date.now() < end) {
    await Bun.sleep(50);
    last = read();
  }
  return last;
}

describe("smithers human / signal", () => {
  test("up exits 3; the inbox shows the request; bad answers exit 2 and change nothing; --resume goes on to the signal; the daemon wakes it", async () => {
    const dbPath = tempDbPath();
    const callsFile = `${dbPath}.calls`;
    const up = ["up", "test/fixtures/waits.tsx", "--db", dbPath, "--run-id", "w1"];
    const first = smithers(up, { CALLS_FILE: callsFile });
    expect(first.code).toBe(3);
    expect(first.stdout).toContain("run w1 waiting-approval");

    const inbox = smithers(["human", "list", "--json", "--db", dbPath]);
    expect(inbox.code).toBe(0);
    const items = JSON.parse(inbox.stdout) as {
      requestId: string;
      workflowName: string;
      runStatus: string;
      nodeId: string;
      prompt: string;
      expired: boolean;
    }[];
    expect(items.map((i) => [i.requestId, i.workflowName, i.runStatus, i.nodeId, i.expired])).toEqual([
      ["w1:review:0:1", "waits", "waiting-approval", "review", false],
    ]);
    expect(items[0]!.prompt).toContain("Review release 1.2.3");
    expect(smithers(["human", "list", "--db", dbPath]).stdout).toContain("waits run w1 (waiting-approval) node review");

    const invalid = smithers(["human", "answer", "w1:review:0:1", "--data", '{"approved":"yes"}', "--db", dbPath]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("HUMAN_ANSWER_INVALID");
    expect(invalid.stderr).toContain("approved:");
    expect(invalid.stderr).toContain("comments:");
    expect(smithers(["human", "answer", "w1:review:0:1", "--data", "{not json", "--db", dbPath]).code).toBe(2);
    expect(smithers(["human", "answer", "no-such", "--data", "{}", "--db", dbPath]).stderr).toContain("HUMAN_REQUEST_NOT_FOUND");
    expect(sql(dbPath, "SELECT status, response_json FROM _smithers_human_requests")).toEqual([{ status: "pending", response_json: null }]);

    const answer = ["human", "answer", "w1:review:0:1", "--data", '{"approved":true,"comments":"lgtm"}', "--by", "ada", "--db", dbPath];
    expect(smithers(answer).code).toBe(0);
    const twice = smithers(answer);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain("HUMAN_REQUEST_CLOSED");

    const resumed = smithers([...up, "--resume"], { CALLS_FILE: callsFile });
    expect(resumed.code).toBe(3);
    expect(resumed.stdout).toContain("run w1 waiting-event");
    expect(sql(dbPath, "SELECT approved, comments FROM review")).toEqual([{ approved: 1, comments: "lgtm" }]);

    const bad = smithers(["signal", "w1", "feedback", "--data", '{"rating":9}', "--db", dbPath]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("SIGNAL_INVALID");
    expect(smithers(["signal", "nope", "feedback", "--data", "{}", "--db", dbPath]).stderr).toContain("RUN_NOT_FOUND");
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_signals")).toEqual([{ n: 0 }]);

    const daemon = await startUntil(["supervise", "--watch", "--interval-ms", "100", "--db", dbPath], { CALLS_FILE: callsFile }, "watching");
    daemons.push(daemon);
    const sent = smithers(["signal", "w1", "feedback", "--data", '{"rating":5,"comment":"smooth"}', "--db", dbPath]);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain("feedback waits for it");
    expect(await until(() => sql(dbPath, "SELECT status FROM _smithers_runs"), [{ status: "finished" }])).toEqual([{ status: "finished" }]);
    expect(sql(dbPath, "SELECT text FROM thanks")).toEqual([{ text: "thanks for the 5: smooth" }]);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["thank"]);
    const ended = smithers(["signal", "w1", "feedback", "--data", "{}", "--db", dbPath]);
    expect(ended.code).toBe(2);
    expect(ended.stderr).toContain("RUN_ENDED");
  });
});

describe("smithers supervise --watch wakes approvals and timers", () => {
  test("a gated run that exited 3 is resumed by a running daemon once approved from the CLI, its tasks once", async () => {
    const dbPath = tempDbPath();
    const callsFile = `${dbPath}.calls`;
    expect(smithers(["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "g1"], { CALLS_FILE: callsFile }).code).toBe(3);
    const daemon = await startUntil(["supervise", "--watch", "--interval-ms", "100", "--db", dbPath], { CALLS_FILE: callsFile }, "watching");
    daemons.push(daemon);
    await Bun.sleep(300); // a few passes: an undecided gate is not the daemon's to wake
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "waiting-approval" }]);
    expect(smithers(["approve", "g1", "--yes", "--by", "ada", "--db", dbPath]).code).toBe(0);
    expect(await until(() => sql(dbPath, "SELECT status FROM _smithers_runs"), [{ status: "finished" }])).toEqual([{ status: "finished" }]);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["build", "deploy"]);
  });

  test("a run that exited 3 waiting for a timer is resumed by a running daemon when it is due, once", async () => {
    const dbPath = tempDbPath();
    const callsFile = `${dbPath}.calls`;
    const env = { CALLS_FILE: callsFile, TIMER_DURATION: "5200ms" }; // past the 5 s a run waits in place
    expect(smithers(["up", "test/fixtures/timer.tsx", "--db", dbPath, "--run-id", "t1"], env).code).toBe(3);
    const [run] = sql<{ status: string; wake_at_ms: number }>(dbPath, "SELECT status, wake_at_ms FROM _smithers_runs");
    expect(run?.status).toBe("waiting-timer");
    const daemon = await startUntil(["supervise", "--watch", "--interval-ms", "100", "--db", dbPath], env, "watching");
    daemons.push(daemon);
    expect(await until(() => sql(dbPath, "SELECT status FROM _smithers_runs"), [{ status: "finished" }])).toEqual([{ status: "finished" }]);
    const [after] = sql<{ at: number }>(dbPath, "SELECT at FROM step WHERE node_id = 'after'");
    expect(after!.at).toBeGreaterThanOrEqual(run!.wake_at_ms);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["before", "after"]);
  }, 20_000);
});

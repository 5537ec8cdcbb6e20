/** `smithers timeline` and `smithers diff`: what a person reads, and bad input with exit 2. */
import { expect, test } from "bun:test";
import { tempDbPath } from "../helpers.ts";
import { smithers } from "./cli-helpers.ts";

test("timeline shows each frame's plan changes; diff shows the change between two frames; bad input is exit 2", () => {
  const db = tempDbPath();
  expect(smithers(["up", "test/fixtures/approval.tsx", "--db", db, "--run-id", "t"]).code).toBe(3);
  expect(smithers(["approve", "t", "--yes", "--db", db]).code).toBe(0);
  expect(smithers(["up", "--resume", "t", "--db", db]).code).toBe(0);

  const timeline = smithers(["timeline", "t", "--db", db]);
  expect(timeline.code).toBe(0);
  const text = timeline.stdout;
  expect(text).toMatch(/^frame 0 {2}\d{4}-\d\d-\d\dT/);
  expect(text).toContain("  + task build running\n  + task ship-it pending\n  + task deploy pending\n");
  expect(text).toContain("  ~ task ship-it: pending → waiting-approval");
  expect(text).toContain("  ~ task deploy: running → finished");
  const frames = JSON.parse(`[${smithers(["timeline", "t", "--json", "--db", db]).stdout.trim().split("\n").join(",")}]`) as {
    frameNo: number;
    changed: unknown[];
  }[];
  expect(frames.map((f) => f.frameNo)).toEqual([0, 1, 2, 3]);

  const diff = smithers(["diff", "t", "0", "3", "--db", db]);
  expect(diff.stdout).toBe(
    "run t: frame 0 → frame 3\n  ~ task build: running → finished\n  ~ task ship-it: pending → finished\n  ~ task deploy: pending → finished\n",
  );
  expect(JSON.parse(smithers(["diff", "t", "3", "3", "--json", "--db", db]).stdout)).toEqual({
    runId: "t",
    from: 3,
    to: 3,
    mounted: [],
    unmounted: [],
    changed: [],
  });

  for (const [args, message] of [
    [["timeline", "nope", "--db", db], "RUN_NOT_FOUND"],
    [["diff", "t", "0", "4", "--db", db], "FRAME_NOT_FOUND"],
    [["diff", "t", "0", "x", "--db", db], "USAGE"],
    [["diff", "t", "0", "--db", db], "USAGE"],
    [["diff", "t", " ", "1", "--db", db], "USAGE"],
    // frames, diff, fork and rewind read a frame number with the same parser: an empty one is not frame 0.
    [["frames", "t", "--frame", "", "--db", db], "USAGE"],
    [["frames", "t", "--frame", "1.5", "--db", db], "USAGE"],
  ] as const) {
    const r = smithers([...args]);
    expect([r.code, r.stderr.includes(message)]).toEqual([2, true]);
  }
});

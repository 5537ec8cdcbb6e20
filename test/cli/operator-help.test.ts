import { describe, expect, test } from "bun:test";
import { commandFlags, commandHelp, editDistance, suggest } from "../../src/cli/help.ts";
import { newProgress, redraw, renderProgress, trackProgress } from "../../src/cli/progress.ts";
import type { SmithersEvent } from "../../src/engine/index.ts";

const USAGE = `Usage: smithers up <file> [--db PATH]
       smithers ps [--status S] [--limit N]

up          runs a workflow
  --db PATH             the file
ps          lists runs
  --status S            only those
Every --db defaults to X.`;

describe("commandHelp", () => {
  test("takes the command's synopsis and its description block", () => {
    expect(commandHelp(USAGE, "ps")).toBe("Usage: smithers ps [--status S] [--limit N]\n\nps          lists runs\n  --status S            only those");
  });
  test("is null for a command the usage does not name", () => {
    expect(commandHelp(USAGE, "nope")).toBeNull();
  });
  test("the flags are the --words of the help", () => {
    expect(commandFlags(commandHelp(USAGE, "ps")!)).toEqual(["--status", "--limit"]);
  });
});

describe("suggest", () => {
  test("edit distance counts insertions, deletions and substitutions", () => {
    expect(editDistance("inspct", "inspect")).toBe(1);
    expect(editDistance("ps", "up")).toBe(2);
  });
  test("names the closest candidate for a typo, and none for an unrelated word", () => {
    expect(suggest("--stauts", ["--status", "--limit"])).toBe("--status");
    expect(suggest("evnets", ["events", "cancel", "ps"])).toBe("events");
    expect(suggest("--frobnicate", ["--status", "--limit"])).toBeUndefined();
  });
});

describe("the terminal progress line", () => {
  const ev = (type: string, nodeId: string, extra: Record<string, unknown> = {}) =>
    ({ type, runId: "r", timestampMs: 0, nodeId, iteration: 0, attempt: 1, ...extra }) as unknown as SmithersEvent;

  test("shows tasks done out of those seen, the running ones and the elapsed time", () => {
    const state = newProgress(1_000);
    for (const e of [ev("NodeStarted", "a"), ev("NodeStarted", "b"), ev("NodeFinished", "a", { durationMs: 5 }), ev("NodeStarted", "c")])
      trackProgress(state, e);
    expect(renderProgress(state, 3_500)).toBe("1/3 tasks done, 2 running (b, c), 2.5s");
  });
  test("is cut to the terminal's width", () => {
    const state = newProgress(0);
    for (let i = 0; i < 10; i++) trackProgress(state, ev("NodeStarted", `task-with-a-long-name-${i}`));
    const line = renderProgress(state, 0, 40);
    expect(line.length).toBe(40);
    expect(line).toEndWith("…");
  });
  test("a redraw returns to the line start and erases it", () => {
    expect(redraw("x")).toBe("\r\x1b[Kx");
  });
});

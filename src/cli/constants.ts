/** Exit codes of `smithers`: 0 success, 1 failed run, 2 bad usage or bad input, 3 waiting, 130 cancelled by Ctrl-C. */
export const EXIT = { ok: 0, failed: 1, usage: 2, waiting: 3, cancelled: 130 } as const;

/** The commands `smithers` runs (src/cli/index.ts loads each one's module when it runs). */
export const COMMAND_NAMES = [
  "up",
  "supervise",
  "frames",
  "scores",
  "timeline",
  "diff",
  "fork",
  "replay",
  "rewind",
  "inspect",
  "eval",
  "approve",
  "deny",
  "cron",
  "signal",
  "human",
  "serve",
  "worker",
  "prune",
  "ps",
  "sandboxes",
  "limits",
  "events",
  "cancel",
  "init",
  "test",
] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { AgentEvent } from "../../../src/agents/index.ts";

/** The fake CLIs (test/fixtures/fake-cli); `bun` must be on PATH for their shebang. */
export const FAKE_CLI_DIR = join(import.meta.dir, "../../fixtures/fake-cli");

export type FakeRecord = {
  name: string;
  argv: string[];
  stdin: string;
  cwd: string;
  env: Record<string, string>;
  outputSchema?: unknown;
  /** Gemini CLI's settings.json in the home it was given. */
  settings?: string;
};

/** A scratch directory and the env that makes the fake CLIs run `scenario` and record into it. */
export function fakeCli(scenario = "ok", extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "smithers-fake-cli-"));
  const env = {
    PATH: `${FAKE_CLI_DIR}:${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    FAKE_CLI_SCENARIO: scenario,
    FAKE_CLI_RECORD: join(dir, "record.json"),
    FAKE_CLI_PID_FILE: join(dir, "pids.json"),
    // An agent that prepares the CLI's home (gemini's) does it here, not in the real one.
    HOME: dir,
    ...extra,
  };
  return {
    dir,
    env,
    record: (): FakeRecord => JSON.parse(readFileSync(env.FAKE_CLI_RECORD, "utf8")),
    pids: (): { pid: number; grandchild?: number } => JSON.parse(readFileSync(env.FAKE_CLI_PID_FILE, "utf8")),
  };
}

/** Callbacks for a generate call that keep what they receive. */
export function listeners() {
  const events: AgentEvent[] = [];
  const out = { stdout: "", stderr: "" };
  return {
    events,
    out,
    onEvent: (event: AgentEvent) => events.push(event),
    onStdout: (chunk: string) => (out.stdout += chunk),
    onStderr: (chunk: string) => (out.stderr += chunk),
    of: <T extends AgentEvent["type"]>(type: T) => events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type),
  };
}

/** Waits until `check` holds (a process is gone), for at most `ms`. */
export async function until(check: () => boolean, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await Bun.sleep(20);
  }
  return check();
}

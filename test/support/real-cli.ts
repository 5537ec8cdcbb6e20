/**
 * The real coding-agent CLIs for the agent tests (test/agents/real): installed by
 * scripts/agent-clis/ensure.sh (pinned versions, never a dependency of the package), and run
 * inside a network namespace whose only link leads to this process's fake model server, so
 * nothing they send can leave the machine.
 *
 *   const cli = realCli("claude");            // { binary } or { skip: reason }
 *   const box = isolation();                  // listen the fake server on box.host; give the agent box.wrap(cli.binary)
 */
import { spawnSync } from "node:child_process";
import { accessSync, chmodSync, constants, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sql } from "../helpers.ts";
import { createNetns, netnsUnavailable, type Netns } from "./netns.ts";

export type CliName = "claude" | "codex" | "gemini" | "opencode";

const ENSURE = resolve(import.meta.dir, "../../scripts/agent-clis/ensure.sh");
let binDir: string | { skip: string } | undefined;

/** Where the CLIs are, installing them the first time (about a minute on a clean machine). */
function cliBinDir(): string | { skip: string } {
  if (binDir !== undefined) return binDir;
  if (!["linux", "darwin"].includes(process.platform) || !["x64", "arm64"].includes(process.arch)) {
    return (binDir = { skip: `the agent CLIs ship binaries for Linux and macOS on x64 and arm64, not ${process.platform}-${process.arch}` });
  }
  const ensured = spawnSync(ENSURE, { encoding: "utf8", timeout: 600_000 });
  if (ensured.status !== 0) {
    return (binDir = { skip: `scripts/agent-clis/ensure.sh could not install the agent CLIs: ${`${ensured.stderr}`.trim().split("\n").slice(-3).join(" ")}` });
  }
  return (binDir = ensured.stdout.trim().split("\n").pop()!);
}

/** The real CLI `name`, or why it cannot run here. */
export function realCli(name: CliName): { binary: string } | { skip: string } {
  const dir = cliBinDir();
  if (typeof dir !== "string") return dir;
  const binary = join(dir, name);
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    return { skip: `${binary} is not installed or not executable` };
  }
  return { binary };
}

export type Isolation = {
  /** The address the fake model server listens on (reachable from inside). */
  host: string;
  /** Whether the CLIs really run in a namespace (false: on this machine's loopback, where namespaces are unavailable). */
  isolated: boolean;
  /** Why not isolated, when not. */
  reason?: string;
  /** A script that runs `binary` with its arguments inside the namespace (the agent's `binary` option). */
  wrap: (binary: string) => string;
  remove: () => void;
};

/**
 * A network namespace with a veth pair to this one and no other route: processes inside reach
 * `host` and nothing else. Where namespaces cannot be made (not root, no `ip`), the CLIs run
 * directly and the server listens on 127.0.0.1 (`isolated: false`, with the reason).
 */
export function isolation(tag: string): Isolation {
  const why = netnsUnavailable();
  const dir = mkdtempSync(join(tmpdir(), `smithers-real-cli-${tag}-`));
  if (why !== undefined) return { host: "127.0.0.1", isolated: false, reason: why, wrap: (binary) => binary, remove: () => {} };
  const ns: Netns = createNetns(tag);
  return {
    host: ns.hostAddress,
    isolated: true,
    wrap: (binary) => {
      const script = join(dir, `${binary.split("/").pop()}-in-${ns.name}`);
      writeFileSync(
        script,
        `#!/bin/sh\nexec ${ns
          .exec([binary])
          .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
          .join(" ")} "$@"\n`,
      );
      chmodSync(script, 0o755);
      return script;
    },
    remove: () => ns.remove(),
  };
}

/** An attempt as the real-CLI tests read it: its state, error code, tokens, cost and model. */
export type AttemptRow = {
  attempt: number;
  state: string;
  code: string | null;
  input_tokens: number | null;
  cached_input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  agent_model: string | null;
};

/** A run's attempts in order (the database at `dbPath`). */
export function attemptRows(dbPath: string): AttemptRow[] {
  return sql<AttemptRow>(
    dbPath,
    "SELECT attempt, state, json_extract(error_json, '$.code') AS code, input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts ORDER BY attempt",
  );
}

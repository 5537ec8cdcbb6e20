import { describe, expect, test } from "bun:test";
import { EXIT, main } from "../../src/cli/index.ts";
import { helpAnswer } from "../../src/cli/help-answer.ts";
import { USAGE } from "../../src/cli/usage.ts";

/** The commands the usage's synopsis names (`smithers <command> …`), each once. */
const commands = [...new Set([...USAGE.matchAll(/^(?:Usage:)?\s*smithers ([a-z]+)/gm)].map((m) => m[1]!))];

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("main", () => {
  test("the usage's synopsis names the commands, each once", () => {
    expect(commands).toEqual(expect.arrayContaining(["up", "worker", "ps", "serve", "human", "cron", "prune"]));
    expect(new Set(commands).size).toBe(commands.length);
  });

  test("every command the usage names is loaded and run: an unknown flag is its own usage error", async () => {
    // `test` hands its arguments to `bun test` unread (test/cli/init.test.ts runs it).
    for (const command of commands.filter((c) => c !== "test")) {
      const { code, err } = await run([command, "--no-such-flag"]);
      expect({ command, code }).toEqual({ command, code: EXIT.usage });
      expect(err).toStartWith("smithers: USAGE: unknown ");
      expect(err).not.toContain("unknown command");
    }
  });

  test("--help prints every command the usage names", async () => {
    const { code, out } = await run(["--help"]);
    expect(code).toBe(EXIT.ok);
    for (const command of commands) expect(out).toContain(`smithers ${command} `);
  });

  test("an unknown command exits 2 and names the closest one", async () => {
    const { code, err } = await run(["upp", "flow.tsx"]);
    expect(code).toBe(EXIT.usage);
    expect(err).toContain('unknown command "upp"; did you mean up?');
  });
});

describe("helpAnswer", () => {
  test("answers what main prints for help, with its exit code", async () => {
    for (const argv of [[], ["--help"], ["-h"], ["help"], ["help", "ps"], ["ps", "--help"], ["up", "flow.tsx", "-h"], ["deny", "--help"]]) {
      const answer = helpAnswer(argv);
      const { code, out } = await run(argv);
      expect({ argv, answer }).toEqual({ argv, answer: { text: out, code } });
    }
    expect(helpAnswer([])?.code).toBe(EXIT.usage);
    expect(helpAnswer(["ps", "--help"])?.text).toStartWith("Usage: smithers ps ");
  });

  test("has no answer for a command to run, a --help after a lone --, or an unknown command", () => {
    expect(helpAnswer(["ps"])).toBeUndefined();
    expect(helpAnswer(["test", "--", "--help"])).toBeUndefined();
    expect(helpAnswer(["upp", "--help"])).toBeUndefined();
    expect(helpAnswer(["help", "nope"])).toBeUndefined();
  });
});

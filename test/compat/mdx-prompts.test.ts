/** `.mdx` prompt files as smithers-orchestrator documents them ("MDX prompt with auto-injected schema"), in our own words. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { promptText } from "../../src/jsx/prompt-text.ts";
import { registerMdx } from "../../src/mdx/index.ts";
import { smithers } from "../e2e/cli-helpers.ts";
import { tempDbPath } from "../helpers.ts";

describe(".mdx prompts", () => {
  test("an imported .mdx file is a component: its Markdown comes back as the prompt text, with its props filled in", async () => {
    registerMdx();
    const { default: Review } = (await import("../fixtures/prompts/review.mdx")) as { default: (props: object) => unknown };
    const text = promptText(Review({ files: ["x.ts"], schema: "SCHEMA HERE" }), "review");
    expect(text).toBe("# Review\n\nReview **x.ts** carefully:\n\n- look for bugs\n- check the tests\n\nReturn JSON matching:\n\nSCHEMA HERE");
  });

  test("`smithers up` loads a workflow whose Task prompt is an .mdx file; the schema description it injects is not appended twice", () => {
    const dbPath = tempDbPath();
    const promptFile = `${dbPath}.prompt`;
    const run = smithers(["up", "test/fixtures/mdx-prompt.tsx", "--db", dbPath], { PROMPT_FILE: promptFile });
    expect(run.code).toBe(0);
    const prompt = readFileSync(promptFile, "utf8");
    expect(prompt.startsWith("# Review\n\nReview **src/a.ts, src/b.ts** carefully:")).toBe(true);
    expect(prompt.split('"approved" (required): boolean').length - 1).toBe(1);
  });
});

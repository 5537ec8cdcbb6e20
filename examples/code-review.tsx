/** @jsxImportSource smithers-workflows */
/**
 * Review the code in a directory with Claude Code when the `claude` CLI is installed and logged
 * in, else with a scripted reviewer so the example runs offline. It says which one it used, on
 * stderr and in the `reviewed_by` column.
 *   npx smithers up examples/code-review.tsx --input '{"path":"src/agents"}' --max-cost-usd 1
 * Claude Code reads the files itself (read-only tools: Read, Grep, Glob); its text streams in as
 * `agent review: …` lines, and its cost is recorded (`smithers inspect <run>`).
 */
import { ClaudeCodeAgent, createSmithers, scriptedAgent, type Agent } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ path: z.string().default("."), focus: z.string().default("bugs and risky code") }),
  review: z.object({
    summary: z.string(),
    findings: z.array(z.object({ file: z.string(), issue: z.string(), severity: z.enum(["low", "medium", "high"]) })),
    reviewedBy: z.string(),
  }),
});

const claudeInstalled = Bun.which("claude") !== null;

const reviewer: Agent = claudeInstalled
  ? new ClaudeCodeAgent({
      id: "claude",
      systemPrompt: "You are a careful senior reviewer. Read the code before judging it; cite files by path.",
      permissionMode: "default",
      allowedTools: ["Read", "Grep", "Glob"],
      disallowedTools: ["Bash", "Edit", "Write"],
      timeoutMs: 10 * 60 * 1000,
    })
  : scriptedAgent(
      () => ({
        summary: "Scripted review (the claude CLI is not on PATH): no files were read.",
        findings: [{ file: "README.md", issue: "Install and log in to Claude Code to get a real review.", severity: "low" }],
        reviewedBy: "scripted",
      }),
      { id: "scripted" },
    );

console.error(`code-review: reviewing with ${claudeInstalled ? "ClaudeCodeAgent (claude found on PATH)" : "a scripted agent (claude not on PATH)"}`);

export default smithers((ctx) => (
  <Workflow name="code-review">
    <Task id="review" output={outputs.review} agent={reviewer} retries={1}>
      {`Review the code under ${ctx.input.path}, looking for ${ctx.input.focus}. List concrete findings with the file they are in. Set reviewedBy to "${claudeInstalled ? "claude" : "scripted"}".`}
    </Task>
  </Workflow>
));

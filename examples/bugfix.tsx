/** @jsxImportSource smithers-workflows */
/**
 * Analyze a bug report with an agent, then have a second agent propose a fix.
 * The analyst's first reply is prose, not JSON: the validation retry tells it what was wrong
 * and its second reply is accepted. Scripted agents keep the example offline; swap in a real
 * agent (anything with `generate({ prompt })`) to use a model.
 *   npx smithers up examples/bugfix.tsx --input '{"description":"Auth tokens expire silently"}'
 */
import { createSmithers, scriptedAgent } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ description: z.string().min(1) }),
  analysis: z.object({
    summary: z.string(),
    severity: z.enum(["low", "medium", "high"]),
    files: z.array(z.string()),
  }),
  fix: z.object({ patch: z.string(), approved: z.boolean() }),
});

/** Answers in prose first; once told the reply was rejected, answers with the JSON it was asked for. */
const analyst = scriptedAgent(
  ({ prompt }) =>
    prompt.includes("previous reply was not accepted")
      ? '```json\n{ "summary": "Refresh failures are swallowed, so expired tokens are never renewed", "severity": "high", "files": ["src/auth/refresh.ts"] }\n```'
      : "This looks like a token refresh problem; I would rate it high.",
  { id: "analyst" },
);

const fixer = scriptedAgent(
  ({ prompt }) => ({
    patch: `--- a/src/auth/refresh.ts\n+++ b/src/auth/refresh.ts\n@@\n-  } catch {}\n+  } catch (error) {\n+    logger.warn("token refresh failed", error);\n+    throw error;\n+  }\n`,
    approved: prompt.includes("high"),
  }),
  { id: "fixer" },
);

export default smithers((ctx) => {
  const analysis = ctx.outputMaybe<z.infer<typeof outputs.analysis>>(outputs.analysis, { nodeId: "analyze" });
  return (
    <Workflow name="bugfix">
      <Task id="analyze" output={outputs.analysis} agent={analyst} retries={1}>
        {`Analyze this bug report and name the files involved: ${ctx.input.description}`}
      </Task>
      {analysis ? (
        <Task id="fix" output={outputs.fix} agent={fixer}>
          {`Write a patch for: ${analysis.summary} (severity ${analysis.severity}) in ${analysis.files.join(", ")}`}
        </Task>
      ) : null}
    </Workflow>
  );
});

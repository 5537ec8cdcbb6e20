/** @jsxImportSource smithers-workflows */
/**
 * An approval-gated deploy: the build runs, then the run stops until a person approves.
 *
 *   npx smithers up examples/gated-deploy.tsx --run-id deploy-1 --input '{"version":"1.2.3"}'   # exit 3: waiting-approval
 *   npx smithers approve deploy-1 --by ada --note "ship it"                                  # shows the request, asks to confirm
 *   npx smithers up examples/gated-deploy.tsx --run-id deploy-1 --resume                       # deploys
 */
import { approvalDecisionSchema, createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, Approval, smithers, outputs } = createSmithers({
  input: z.object({ version: z.string() }),
  build: z.object({ artifact: z.string(), tests: z.number().int() }),
  approval: approvalDecisionSchema,
  deploy: z.object({ url: z.string(), approvedBy: z.string().nullable() }),
});

export default smithers((ctx) => {
  const build = ctx.outputMaybe(outputs.build, { nodeId: "build" });
  return (
    <Workflow name="gated-deploy">
      <Task id="build" output={outputs.build}>
        {{ artifact: `app-${ctx.input.version}.tgz`, tests: 128 }}
      </Task>
      <Approval
        id="ship-it"
        output={outputs.approval}
        request={{ title: `Deploy ${ctx.input.version} to production?`, summary: `${build?.tests ?? 0} tests passed`, metadata: { artifact: build?.artifact } }}
      />
      <Task id="deploy" output={outputs.deploy}>
        {() => ({
          url: "https://prod.example.com",
          approvedBy: ctx.outputMaybe<{ decidedBy: string | null }>(outputs.approval, { nodeId: "ship-it" })?.decidedBy ?? null,
        })}
      </Task>
    </Workflow>
  );
});

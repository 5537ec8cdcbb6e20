/** @jsxImportSource smithers-workflows */
/**
 * A signal-driven flow: start a deploy, wait for the deploy system to report back (a signal
 * correlated by the deploy id, at most one hour), then ask a person to confirm the smoke test.
 *
 *   npx smithers up examples/signal-deploy.tsx --run-id rel-7 --input '{"deployId":"d-7"}'     # exit 3: waiting-event
 *   npx smithers signal rel-7 deploy.completed --correlation-id d-7 --data '{"status":"ok","url":"https://prod.example.com"}'
 *   npx smithers supervise                                                                   # wakes it: exit 3, waiting-approval (the human task)
 *   npx smithers human list
 *   npx smithers human answer rel-7:smoke-test:0:1 --data '{"passed":true,"notes":"login works"}'
 *   npx smithers supervise                                                                   # wakes it again: finished
 */
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, WaitForEvent, HumanTask, smithers, outputs } = createSmithers({
  input: z.object({ deployId: z.string() }),
  started: z.object({ deployId: z.string() }),
  deployed: z.object({ status: z.enum(["ok", "failed"]), url: z.string() }),
  smoke: z.object({ passed: z.boolean(), notes: z.string() }),
  report: z.object({ summary: z.string() }),
});

export default smithers((ctx) => (
  <Workflow name="signal-deploy">
    <Task id="start-deploy" output={outputs.started}>
      {{ deployId: ctx.input.deployId }}
    </Task>
    <WaitForEvent id="deploy-done" event="deploy.completed" correlationId={ctx.input.deployId} output={outputs.deployed} timeoutMs={3_600_000} />
    <HumanTask
      id="smoke-test"
      output={outputs.smoke}
      prompt="Open the deployed URL and try to log in. Did it work? Answer passed (boolean) and notes (string)."
    />
    <Task id="report" output={outputs.report}>
      {() => {
        const deployed = ctx.output<{ status: string; url: string }>(outputs.deployed, { nodeId: "deploy-done" });
        const smoke = ctx.output<{ passed: boolean; notes: string }>(outputs.smoke, { nodeId: "smoke-test" });
        return { summary: `${ctx.input.deployId} ${deployed.status} at ${deployed.url}; smoke test ${smoke.passed ? "passed" : "failed"}: ${smoke.notes}` };
      }}
    </Task>
  </Workflow>
));

/** @jsxImportSource smithers-workflows */
/**
 * A cron job: each fire counts the open items in a (here, built-in) queue and writes a report
 * row keyed by the run, so every slot leaves one row. Offline; schedule it and let the daemon
 * start it:
 *   npx smithers cron add examples/cron-report.tsx --schedule "0 9 * * 1-5" --tz Europe/Berlin --input '{"queue":"support"}'
 *   npx smithers supervise --watch
 */
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const QUEUES: Record<string, string[]> = { support: ["login fails", "refund", "typo on pricing page"], sales: ["demo request"] };

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ queue: z.string() }),
  report: z.object({ queue: z.string(), open: z.number().int(), summary: z.string() }),
});

export default smithers((ctx) => (
  <Workflow name="cron-report">
    <Task id="count" output={outputs.report}>
      {() => {
        const items = QUEUES[ctx.input.queue] ?? [];
        return { queue: ctx.input.queue, open: items.length, summary: `${items.length} open in ${ctx.input.queue}` };
      }}
    </Task>
  </Workflow>
));

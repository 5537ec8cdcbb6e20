/** @jsxImportSource smithers-workflows */
/**
 * Fan out one task per repository in parallel (at most 2 at a time), then combine the results.
 *   npx smithers up examples/fan-out.tsx --input '{"repos":["api","web","cli"]}'
 */
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, Parallel, smithers, outputs } = createSmithers({
  input: z.object({ repos: z.array(z.string()).min(1) }),
  scan: z.object({ repo: z.string(), openIssues: z.number().int() }),
  summary: z.object({ total: z.number().int(), busiest: z.string() }),
});

/** Stands in for a call to an issue tracker: deterministic, offline. */
async function countIssues(repo: string): Promise<number> {
  await Bun.sleep(20);
  return [...repo].reduce((n, c) => n + c.charCodeAt(0), 0) % 17;
}

export default smithers((ctx) => {
  const scans = ctx.input.repos.map((repo) => ctx.outputMaybe<z.infer<typeof outputs.scan>>(outputs.scan, { nodeId: `scan-${repo}` }));
  const done = scans.every((s) => s !== undefined);
  return (
    <Workflow name="fan-out">
      <Parallel maxConcurrency={2}>
        {ctx.input.repos.map((repo) => (
          <Task key={repo} id={`scan-${repo}`} output={outputs.scan}>
            {async () => ({ repo, openIssues: await countIssues(repo) })}
          </Task>
        ))}
      </Parallel>
      {done ? (
        <Task id="combine" output={outputs.summary}>
          {() => {
            const all = scans.filter((s) => s !== undefined);
            const busiest = all.reduce((a, b) => (b.openIssues > a.openIssues ? b : a));
            return { total: all.reduce((n, s) => n + s.openIssues, 0), busiest: busiest.repo };
          }}
        </Task>
      ) : null}
    </Workflow>
  );
});

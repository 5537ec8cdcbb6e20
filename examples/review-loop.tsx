/** @jsxImportSource smithers-workflows */
/**
 * Draft, review, revise: a Loop runs the pair again until the reviewer approves
 * (here on the third pass), each pass writing new rows with its iteration number.
 *   npx smithers up examples/review-loop.tsx --input '{"topic":"durable workflows"}'
 */
import { createSmithers, scriptedAgent } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, Loop, smithers, outputs } = createSmithers({
  input: z.object({ topic: z.string() }),
  draft: z.object({ text: z.string(), revision: z.number().int() }),
  review: z.object({ approved: z.boolean(), feedback: z.string() }),
});

const reviewer = scriptedAgent(
  ({ prompt }) => {
    const revision = Number(/revision (\d+)/.exec(prompt)?.[1] ?? 0);
    return revision >= 2 ? { approved: true, feedback: "Clear and complete." } : { approved: false, feedback: `Revision ${revision}: add a concrete example.` };
  },
  { id: "reviewer" },
);

export default smithers((ctx) => {
  const review = ctx.latest<z.infer<typeof outputs.review>>(outputs.review, "review");
  return (
    <Workflow name="review-loop">
      <Loop id="revise" until={review?.approved === true} maxIterations={5} onMaxReached="fail">
        <Task id="write" output={outputs.draft}>
          {() => ({
            text: `Notes on ${ctx.input.topic}${review ? ` (addressing: ${review.feedback})` : ""}`,
            revision: ctx.iteration,
          })}
        </Task>
        <Task id="review" output={outputs.review} agent={reviewer}>
          {`Review revision ${ctx.iteration} of the notes on ${ctx.input.topic}.`}
        </Task>
      </Loop>
    </Workflow>
  );
});

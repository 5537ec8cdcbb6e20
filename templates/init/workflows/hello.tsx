import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers(
  {
    input: z.object({ name: z.string().min(1) }),
    greeting: z.object({ text: z.string() }),
    banner: z.object({ text: z.string(), width: z.number().int() }),
  },
  { dbPath: "smithers.db" },
);

// The tree is rendered again after every task commits: `banner` appears once `greet` has its row.
export default smithers((ctx) => {
  const greeting = ctx.outputMaybe<{ text: string }>(outputs.greeting, { nodeId: "greet" });
  return (
    <Workflow name="hello">
      <Task id="greet" output={outputs.greeting}>
        {() => ({ text: `Hello, ${ctx.input.name}!` })}
      </Task>
      {greeting ? (
        <Task id="banner" output={outputs.banner}>
          {() => ({ text: greeting.text.toUpperCase(), width: greeting.text.length })}
        </Task>
      ) : null}
    </Workflow>
  );
});

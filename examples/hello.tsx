/** @jsxImportSource smithers-workflows */
/**
 * The smallest workflow: one task with a static output.
 *   npx smithers up examples/hello.tsx --input '{"name":"Ada"}'
 */
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ name: z.string().default("world") }),
  greeting: z.object({ message: z.string() }),
});

export default smithers((ctx) => (
  <Workflow name="hello">
    <Task id="greet" output={outputs.greeting}>
      {{ message: `Hello, ${ctx.input.name}!` }}
    </Task>
  </Workflow>
));

import { expect, test } from "bun:test";
import { testWorkflow } from "smithers-workflows/testing";
import hello from "../workflows/hello.tsx";

test("greets, then makes a banner of the greeting", async () => {
  // A throwaway in-memory database and a virtual clock; nothing touches smithers.db.
  await using t = await testWorkflow(hello);
  const run = await t.run({ name: "Ada" });
  expect(run.status).toBe("finished");
  expect(t.output(run.runId, "greet")).toMatchObject({ text: "Hello, Ada!" });
  expect(t.output(run.runId, "banner")).toMatchObject({ text: "HELLO, ADA!", width: 11 });
});

test("refuses an input that does not match the schema", async () => {
  await using t = await testWorkflow(hello);
  const refused = await t.run({ name: "" }).catch((error: unknown) => error);
  expect(refused).toMatchObject({ code: "INVALID_INPUT" });
});

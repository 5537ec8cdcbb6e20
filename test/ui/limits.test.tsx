/** The run page in Chromium shows the concurrency slots a run holds and the ones it waits for. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers } from "../../src/index.ts";
import { chromiumPath, dashboardHarness, TIMEOUT_MS } from "./harness.ts";

let release!: () => void;
const held = new Promise<void>((done) => (release = done));
const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { limits: { shared: { concurrency: 1 } } });
const keyed = smithers(() => (
  <Workflow name="dash-keyed">
    <Task id="work" output={outputs.out} concurrencyKey="shared">
      {async () => {
        await held;
        return { v: 1 };
      }}
    </Task>
  </Workflow>
));

describe.skipIf(!chromiumPath)("concurrency slots on the run page", () => {
  const h = dashboardHarness({ workflows: [{ name: "keyed", path: import.meta.path, workflow: keyed }] });

  test(
    "a run holding the key's one slot shows it held; a run waiting for it shows waiting-slot and the slot it waits for",
    async () => {
      const holder = await h.start("keyed");
      await h.waitForStatus(holder, ["running"]);
      const waiter = await h.start("keyed");
      await h.waitForStatus(waiter, ["waiting-slot"]);
      const page = await h.open(`/runs/${waiter}`);
      await page.getByTestId("run-slots").getByText("shared: 0 held, 1 waiting").waitFor();
      expect(await page.getByTestId("run-status").textContent()).toContain("waiting-slot");
      const holding = await h.open(`/runs/${holder}`);
      await holding.getByTestId("run-slots").getByText("shared: 1 held, 0 waiting").waitFor();
      release();
      await h.waitForStatus(holder, ["finished"]);
      await h.waitForStatus(waiter, ["finished"]);
      await page.close();
      await holding.close();
    },
    TIMEOUT_MS,
  );
});

/**
 * The run page in Chromium shows each sandbox session of the run's tasks: its policy, status and
 * exit, as stored in `_smithers_sandboxes` (real bubblewrap ran them). Screenshot: run-sandboxes.png.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers } from "../../src/index.ts";
import { chromiumPath, dashboardHarness, SHOTS, TIMEOUT_MS } from "./harness.ts";

const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ v: z.number() }) });
// Rebuilt from their source text inside the sandbox: no closure.
const boxed = smithers(() => (
  <Workflow name="dash-sandboxed">
    <Task id="ok" output={outputs.out} sandbox={{ cpuSeconds: 30 }}>
      {(() => ({ v: 1 })) as never}
    </Task>
    <Task id="exits" output={outputs.out} sandbox continueOnFail noRetry>
      {(() => process.exit(3)) as never}
    </Task>
  </Workflow>
));

type Stored = { sandbox_id: string; status: string; exit_code: number | null };

describe.skipIf(!chromiumPath)("sandbox sessions on the run page", () => {
  const h = dashboardHarness({ workflows: [{ name: "sandboxed", path: import.meta.path, workflow: boxed }] });

  test(
    "lists each task's session with its policy, status and exit code as stored",
    async () => {
      const runId = await h.start("sandboxed");
      await h.waitForStatus(runId, ["finished", "failed"]);
      const sqlite = new Database(h.dbPath, { readonly: true });
      const stored = sqlite
        .query<Stored, [string]>("SELECT sandbox_id, status, exit_code FROM _smithers_sandboxes WHERE run_id = ? ORDER BY sandbox_id")
        .all(runId);
      sqlite.close();
      expect(stored).toEqual([
        { sandbox_id: "exits:0:1", status: "failed", exit_code: 3 },
        { sandbox_id: "ok:0:1", status: "finished", exit_code: 0 },
      ]);
      const page = await h.open(`/runs/${runId}`);
      const table = page.getByTestId("sandboxes");
      await table.waitFor();
      const cells = (id: string) => page.getByTestId(`sandbox-${id}`).locator("th, td").allInnerTexts();
      const ok = await cells("ok:0:1");
      expect(ok.slice(0, 5)).toEqual(["ok", "1", "cpuSeconds: 30", "finished", "0"]);
      const exits = await cells("exits:0:1");
      expect(exits.slice(0, 3)).toEqual(["exits", "1", "defaults (no network, read-only root)"]);
      expect(exits[3]).toContain("failed");
      expect(exits[3]).toContain("SANDBOX_FAILED");
      expect(exits[4]).toBe("3");
      await table.screenshot({ path: join(SHOTS, "run-sandboxes.png") });
      await page.close();
    },
    TIMEOUT_MS,
  );
});

/**
 * A signal sent while its run is suspending (PostgreSQL, READ COMMITTED): the run's last
 * transaction makes the node wait and the run `waiting-event`; a signal sent before that commits
 * must still wake the run. Found by bench/soak: without the run-row lock the sender saw no waiting
 * node (not yet committed) and the suspending run saw no signal (not yet committed): nobody woke it.
 */
import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { z } from "zod";
import { createSmithers, runWorkflow, sendSignal } from "../../src/index.ts";
import { pgTestServer } from "../support/postgres.ts";

const pg = await pgTestServer();

describe.skipIf(!pg)("sendSignal on PostgreSQL", () => {
  test("a signal sent while the run's suspending transaction is open waits for it, then makes the run due", async () => {
    const url = await pg!.createDatabase();
    const { Workflow, Signal, Task, smithers, outputs } = createSmithers(
      { go: z.object({ who: z.string() }), done: z.object({ ok: z.boolean() }) },
      { db: url },
    );
    const wf = smithers(() => (
      <Workflow name="race">
        <Signal id="go" schema={outputs.go}>
          {() => (
            <Task id="after" output={outputs.done}>
              {{ ok: true }}
            </Task>
          )}
        </Signal>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "r" })).status).toBe("waiting-event");
    const sql = postgres(url, { max: 2, onnotice: () => undefined });
    try {
      // Back to the moment before the run's last transaction: running, its node not yet waiting.
      await sql`UPDATE _smithers_runs SET status = 'running', wake_at_ms = NULL WHERE run_id = 'r'`;
      await sql`UPDATE _smithers_nodes SET state = 'pending' WHERE run_id = 'r' AND node_id = 'go'`;
      let sent: Awaited<ReturnType<typeof sendSignal>> | undefined;
      let sending: Promise<void> | undefined;
      await sql.begin(async (tx) => {
        // The suspending transaction, as finishRun does it: the run row locked first (its owner check).
        await tx`SELECT 1 FROM _smithers_runs WHERE run_id = 'r' FOR UPDATE`;
        await tx`UPDATE _smithers_nodes SET state = 'waiting-event' WHERE run_id = 'r' AND node_id = 'go'`;
        await tx`UPDATE _smithers_runs SET status = 'waiting-event' WHERE run_id = 'r'`;
        sending = sendSignal(wf.dbFor(), { runId: "r", name: "go", data: { who: "ada" } }).then((s) => {
          sent = s;
        });
        await Bun.sleep(300);
        expect(sent).toBeUndefined(); // it waits for the run's transaction instead of reading around it
        // Nothing of the signal is committed yet, as the suspending run's own last look would find.
        expect([...(await tx`SELECT count(*)::int AS n FROM _smithers_signals WHERE run_id = 'r'`)]).toEqual([{ n: 0 }]);
      });
      await sending;
      expect(sent?.waitingNodes).toEqual([{ nodeId: "go", iteration: 0 }]);
      const [run] = await sql<
        { status: string; wake_at_ms: number | null }[]
      >`SELECT status, wake_at_ms::float8 AS wake_at_ms FROM _smithers_runs WHERE run_id = 'r'`;
      expect(run?.status).toBe("waiting-event");
      expect(run?.wake_at_ms).not.toBeNull(); // due: the daemon wakes it
      expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    } finally {
      await sql.end();
    }
  });
});

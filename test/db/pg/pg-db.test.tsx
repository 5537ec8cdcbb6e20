/** @jsxImportSource smithers-workflows */
/**
 * The PostgreSQL backend against a real server: a workflow runs through the same engine, its rows
 * land in native column types, a run's event and signal seqs stay gap-free and unique when many
 * connections write at once, and bad URLs fail with a code.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, openSmithersDb, runWorkflow, type SmithersDb } from "../../../src/index.ts";
import { cron, dbRetryCount, events, ralph, sandboxes, signals } from "../../../src/db/index.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";
import { rejection } from "../../helpers.ts";

const pg = await pgTestServer();

async function freshUrl(): Promise<string> {
  return pg!.createDatabase();
}

describe.skipIf(!pg)("PgDb", () => {
  test("a workflow runs on PostgreSQL and its output rows have native types that plain SQL reads", async () => {
    const url = await freshUrl();
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers(
      {
        input: z.object({ who: z.string() }),
        card: z.object({ title: z.string(), tags: z.array(z.string()), ok: z.boolean(), n: z.number().int(), score: z.number(), at: z.date() }),
        echo: z.object({ text: z.string() }),
      },
      { db: url },
    );
    const wf = smithers((ctx) => (
      <Workflow name="native">
        <Sequence>
          <Task id="card" output={outputs.card}>
            {{ title: ctx.input.who, tags: ["a", "b"], ok: true, n: 3, score: 0.5, at: new Date(1_700_000_000_000) }}
          </Task>
          <Task id="echo" output={outputs.echo}>
            {() => ({ text: `${ctx.output(outputs.card, { nodeId: "card" }).title}!` })}
          </Task>
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: { who: "ada" } });
    expect(result.status).toBe("finished");
    expect(result.output).toEqual({ text: "ada!" });
    const sql = connectPg(url);
    try {
      const [row] = await sql`SELECT title, tags, ok, n, score, at FROM card WHERE run_id = ${result.runId}`;
      expect(row).toEqual({ title: "ada", tags: ["a", "b"], ok: true, n: 3, score: 0.5, at: new Date(1_700_000_000_000) });
      const types = await sql`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'card' ORDER BY ordinal_position`;
      expect(Object.fromEntries(types.map((t) => [t.column_name, t.data_type]))).toEqual({
        run_id: "text",
        node_id: "text",
        iteration: "bigint",
        title: "text",
        tags: "jsonb",
        ok: "boolean",
        n: "bigint",
        score: "double precision",
        at: "timestamp with time zone",
      });
      const seqs = await sql`SELECT seq FROM _smithers_events WHERE run_id = ${result.runId} ORDER BY seq`;
      expect(seqs.map((r) => r.seq)).toEqual([...Array(seqs.length).keys()]);
    } finally {
      await sql.end();
    }
  });

  test("an approval waits, is decided, and the resumed run finishes without re-running what finished", async () => {
    const url = await freshUrl();
    let firstRuns = 0;
    const { Workflow, Task, Approval, Sequence, smithers, outputs } = createSmithers(
      { out: z.object({ n: z.number() }), decision: approvalDecisionSchema },
      { db: url },
    );
    const wf = smithers(() => (
      <Workflow name="gate">
        <Sequence>
          <Task id="first" output={outputs.out}>
            {() => {
              firstRuns++;
              return { n: 1 };
            }}
          </Task>
          <Approval id="ok" output={outputs.decision} request={{ title: "Ship?" }} />
          <Task id="after" output={outputs.out}>
            {{ n: 2 }}
          </Task>
        </Sequence>
      </Workflow>
    ));
    const waiting = await runWorkflow(wf, { input: {} });
    expect(waiting.error).toBeUndefined();
    expect(waiting.status).toBe("waiting-approval");
    const db = wf.dbFor();
    await approve(db, { runId: waiting.runId, nodeId: "ok" });
    const done = await runWorkflow(wf, { input: {}, runId: waiting.runId, resume: true });
    expect(done.status).toBe("finished");
    expect(firstRuns).toBe(1);
  });

  test("event seqs of one run stay gap-free and unique when eight connections append at once", async () => {
    const url = await freshUrl();
    const dbs: SmithersDb[] = Array.from({ length: 8 }, () => openSmithersDb(url));
    try {
      const writers = dbs.map((db, w) =>
        (async () => {
          const seqs: number[] = [];
          for (let i = 0; i < 25; i++) {
            seqs.push(await events.insertEvent(db, { runId: "r", timestampMs: i, type: "Tick", payloadJson: JSON.stringify({ w, i }) }));
          }
          return seqs;
        })(),
      );
      const all = (await Promise.all(writers)).flat().sort((a, b) => a - b);
      expect(all).toEqual([...Array(200).keys()]);
      const stored = await events.listEventHistory(dbs[0]!, { runId: "r" });
      expect(stored.map((e) => e.seq)).toEqual([...Array(200).keys()]);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  test("signals sent at once from many connections get distinct gap-free seqs, and an identical resend is de-duplicated", async () => {
    const url = await freshUrl();
    const dbs: SmithersDb[] = Array.from({ length: 6 }, () => openSmithersDb(url));
    try {
      const keys = dbs.flatMap((_, w) => Array.from({ length: 10 }, (_, i) => ({ w, i, key: `k-${w}-${i}` })));
      const sent = await Promise.all(
        keys.map(({ w, i, key }) =>
          signals.insertSignal(dbs[w]!, { runId: "r", signalName: "go", payloadJson: JSON.stringify({ w, i }), receivedAtMs: 1, dedupeKey: key }),
        ),
      );
      expect([...sent].sort((a, b) => a - b)).toEqual([...Array(60).keys()]);
      const original = sent[keys.findIndex((k) => k.key === "k-3-4")];
      const again = await signals.insertSignal(dbs[0]!, { runId: "r", signalName: "go", payloadJson: "{}", receivedAtMs: 2, dedupeKey: "k-3-4" });
      expect(again).toBe(original!);
      expect((await signals.querySignals(dbs[0]!, { runId: "r", limit: 1000 })).length).toBe(60);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  test("an upsert whose conflict target names several columns or one inserts, then updates (loop state, cron, sandboxes)", async () => {
    const db = openSmithersDb(await freshUrl());
    try {
      for (const [iteration, done] of [
        [1, false],
        [2, true],
      ] as const) {
        await db.withTransaction("loop", (q) => ralph.setLoopState(q, { runId: "r", ralphId: "l", iteration, done, updatedAtMs: iteration }));
      }
      expect((await ralph.listLoopStates(db, "r")).map((l) => [l.iteration, l.done])).toEqual([[2, true]]);
      await cron.upsertCron(db, { cronId: "c", pattern: "0 3 * * *", workflowPath: "a.tsx", createdAtMs: 1 });
      await cron.upsertCron(db, { cronId: "c", pattern: "0 4 * * *", workflowPath: "a.tsx", createdAtMs: 1 });
      expect((await cron.listCrons(db)).map((c) => c.pattern)).toEqual(["0 4 * * *"]);
      await sandboxes.upsertSandbox(db, { runId: "r", sandboxId: "s", configJson: "{}" });
      await sandboxes.upsertSandbox(db, { runId: "r", sandboxId: "s", configJson: "{}", status: "shipped" });
      expect((await sandboxes.listSandboxes(db, "r")).map((b) => b.status)).toEqual(["shipped"]);
    } finally {
      await db.close();
    }
  });

  test("a database opened and closed at once still gets its tables: close waits for the schema work under way", async () => {
    const url = await freshUrl();
    await openSmithersDb(url).close();
    const sql = connectPg(url);
    try {
      expect([...(await sql`SELECT count(*)::int AS n FROM _smithers_runs`)]).toEqual([{ n: 0 }]);
    } finally {
      await sql.end();
    }
  });

  test("a scores table an earlier version made with score NOT NULL accepts a pending score after the next open", async () => {
    const url = await freshUrl();
    const sql = connectPg(url);
    try {
      await sql`CREATE TABLE "_smithers_scorers" ("id" text PRIMARY KEY, "run_id" text NOT NULL, "node_id" text NOT NULL,
        "iteration" bigint DEFAULT 0 NOT NULL, "attempt" bigint DEFAULT 1 NOT NULL, "scorer_id" text NOT NULL, "scorer_name" text NOT NULL,
        "source" text DEFAULT 'live' NOT NULL, "score" double precision NOT NULL, "reason" text, "meta_json" text, "latency_ms" bigint, "scored_at_ms" bigint NOT NULL)`;
      await openSmithersDb(url).close();
      await sql`INSERT INTO _smithers_scorers (id, run_id, node_id, scorer_id, scorer_name, status, scored_at_ms) VALUES ('s', 'r', 'n', 'len', 'Length', 'pending', 1)`;
      expect([...(await sql`SELECT status, score FROM _smithers_scorers`)]).toEqual([{ status: "pending", score: null }]);
    } finally {
      await sql.end();
    }
  });

  test("a server that is not there fails the first operation with DB_UNREACHABLE after the policy's retries, each counted", async () => {
    const db = openSmithersDb("postgres://smithers@127.0.0.1:1/nowhere", { retryPolicy: { retries: 2, baseDelayMs: 1, maxDelayMs: 1, jitter: 0 } });
    const before = dbRetryCount();
    const error = await rejection(db.read("probe", (q) => q.get("SELECT 1")));
    expect(error.code).toBe("DB_UNREACHABLE");
    expect(dbRetryCount() - before).toBe(2);
    await db.close();
  });

  test("an unknown durability mode is INVALID_OPTION, at open and when switched", async () => {
    const url = await freshUrl();
    expect(() => openSmithersDb(url, { durability: "sometimes" as never })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    const db = openSmithersDb(url);
    expect((await rejection(db.setDurability("sometimes" as never))).code).toBe("INVALID_OPTION");
    expect(db.durability).toBe("process");
    await db.close();
  });
});

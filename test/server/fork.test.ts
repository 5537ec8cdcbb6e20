import { describe, expect, test } from "bun:test";
import { sql } from "../helpers.ts";
import { post, serverPerTest, waitForStatus } from "./helpers.ts";

const serve = serverPerTest();

describe("POST /runs/:id/fork", () => {
  test("forks a finished run at a frame (201, paused), or queues it with run: true (202) and it finishes; the parent is unchanged", async () => {
    const { url, dbPath } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "parent" });
    expect(await waitForStatus(url, "parent", ["finished", "failed"])).toBe("finished");
    const parentRows = sql(dbPath, "SELECT * FROM _smithers_nodes WHERE run_id = 'parent' ORDER BY node_id");
    const last = Number(sql<{ n: number }>(dbPath, "SELECT max(frame_no) AS n FROM _smithers_frames WHERE run_id = 'parent'")[0]?.n);
    const paused = await post(`${url}/runs/parent/fork`, { frame: last, runId: "f1" });
    expect(paused.status).toBe(201);
    const body = (await paused.json()) as { runId: string; status: string; parentRunId: string };
    expect([body.runId, body.status, body.parentRunId]).toEqual(["f1", "paused", "parent"]);
    expect(sql(dbPath, "SELECT status, parent_run_id, forked_from_frame FROM _smithers_runs WHERE run_id = 'f1'")).toEqual([
      { status: "paused", parent_run_id: "parent", forked_from_frame: last },
    ]);
    const queued = await post(`${url}/runs/parent/fork`, { frame: 0, runId: "f2", run: true });
    expect([queued.status, ((await queued.json()) as { status: string }).status]).toEqual([202, "queued"]);
    expect(await waitForStatus(url, "f2", ["finished", "failed"])).toBe("finished");
    expect(sql(dbPath, "SELECT * FROM _smithers_nodes WHERE run_id = 'parent' ORDER BY node_id")).toEqual(parentRows);
  });

  test("bad requests: unknown run 404, frame past the last 404, unknown node 400, bad body 400, taken id 409", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "p" });
    expect(await waitForStatus(url, "p", ["finished", "failed"])).toBe("finished");
    const cases: [string, unknown, number, string][] = [
      ["nope", { frame: 0 }, 404, "RUN_NOT_FOUND"],
      ["p", { frame: 10_000 }, 404, "FRAME_NOT_FOUND"],
      ["p", { frame: 0, resetNodes: ["zzz"] }, 400, "NODE_NOT_FOUND"],
      ["p", { frame: -1 }, 400, "INVALID_INPUT"],
      ["p", { frame: 0, extra: true }, 400, "INVALID_INPUT"],
      ["p", { frame: 0, runId: "p" }, 409, "RUN_EXISTS"],
    ];
    for (const [run, payload, status, code] of cases) {
      const res = await post(`${url}/runs/${run}/fork`, payload);
      expect([JSON.stringify(payload), res.status, ((await res.json()) as { code: string }).code]).toEqual([JSON.stringify(payload), status, code]);
    }
  });
});

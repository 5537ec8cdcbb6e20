/**
 * A real Prometheus scrapes a real `smithers serve` with its bearer token (credentials_file), and a
 * PromQL query over its HTTP API answers what a run did.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { findPrometheus } from "../support/prometheus.ts";
import { tempDir } from "../helpers.ts";
import { cli, root } from "./cli-helpers.ts";

const prometheusPath = findPrometheus();
const TOKEN = "prometheus-scrape-token-0123456789";
const procs: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGTERM");
    await p.exited;
  }
});

/** A loopback port free a moment ago. */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = probe;
  probe.stop(true);
  return port;
}

/** Reads a process's stdout until a line matches `pattern`; resolves with the match. */
async function waitForLine(proc: Bun.Subprocess<"ignore", "pipe", "pipe">, pattern: RegExp): Promise<RegExpMatchArray> {
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    const m = pattern.exec(seen);
    if (m) return m;
  }
  throw new Error(`process ended before printing ${pattern}: ${seen}`);
}

type QueryAnswer = { status: string; data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] } };

describe.skipIf(!prometheusPath)("Prometheus scraping smithers serve", () => {
  test("a PromQL query answers how many attempts of a workflow finished and failed, and what its agent cost", async () => {
    const dir = tempDir();
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    const serve = Bun.spawn(
      [
        process.execPath,
        cli,
        "serve",
        "--port",
        "0",
        "--db",
        join(dir, "smithers.db"),
        "--workflows",
        join(root, "test/fixtures/metrics"),
        "--token-file",
        tokenFile,
      ],
      { cwd: root, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    procs.push(serve);
    const url = (await waitForLine(serve, /listening on (http:\/\/\S+)/))[1]!;
    const auth = { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" };
    expect((await fetch(`${url}/runs`, { method: "POST", headers: auth, body: JSON.stringify({ workflow: "metered", runId: "prom-1" }) })).status).toBe(202);
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await fetch(`${url}/runs/prom-1`, { headers: auth });
      if (res.ok && ((await res.json()) as { status: string }).status === "finished") break;
      if (Date.now() > deadline) throw new Error("run prom-1 did not finish");
      await Bun.sleep(50);
    }

    const target = new URL(url).host;
    const promPort = freePort();
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "scrape_configs:",
        "  - job_name: smithers",
        "    authorization:",
        "      type: Bearer",
        `      credentials_file: ${tokenFile}`,
        "    static_configs:",
        `      - targets: ["${target}"]`,
        "",
      ].join("\n"),
    );
    const prometheus = Bun.spawn(
      [
        prometheusPath!,
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "tsdb")}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      { cwd: dir, stdin: "ignore", stdout: "ignore", stderr: "pipe" },
    );
    procs.push(prometheus);

    const query = async (promql: string): Promise<QueryAnswer | undefined> => {
      try {
        const res = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(promql)}`);
        return res.ok ? ((await res.json()) as QueryAnswer) : undefined;
      } catch {
        return undefined;
      }
    };
    const finished = 'smithers_task_attempts_total{job="smithers",workflow="metered",outcome="finished"}';
    let answer: QueryAnswer | undefined;
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      answer = await query(finished);
      if (answer?.data.result.length) break;
      await Bun.sleep(250);
    }
    expect(answer?.status).toBe("success");
    expect(answer?.data.result.map((r) => Number(r.value[1]))).toEqual([2]);
    // up is 1: the scrape carried the token (a scrape without it gets 401 and up is 0).
    const up = await query('up{job="smithers"}');
    expect(up?.data.result.map((r) => Number(r.value[1]))).toEqual([1]);
    const failed = await query('sum by (workflow) (smithers_task_attempts_total{outcome="failed"})');
    expect(failed?.data.result.map((r) => [r.metric.workflow, Number(r.value[1])])).toEqual([["metered", 1]]);
    const cost = await query('smithers_agent_cost_usd_total{model="metered-1"}');
    expect(Number(cost?.data.result[0]?.value[1])).toBeCloseTo(0.01, 10);
  }, 60_000);
});

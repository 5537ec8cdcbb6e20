/** @jsxImportSource smithers-workflows */
/**
 * `<Memory>` and a task's `memory` prop in a run: what the agent's prompt carries (recalled before
 * it runs, frozen across retries), what retain writes into `_smithers_vectors`, scoping by
 * namespace and tags, the task-level override, memory tools, and the codes for bad props.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  createMemory,
  createSmithers,
  type MemoryConfig,
  type MemoryProps,
  memoryTools,
  openSmithersDb,
  runWorkflow,
  scriptedAgent,
  type SmithersDb,
} from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";
import { hashEmbeddingModel } from "../support/hash-embedder.ts";

const answer = z.object({ text: z.string() });
const opened: SmithersDb[] = [];
afterAll(() => Promise.all(opened.map((db) => db.close())));

/** A database holding a few chunks, remembered through createMemory with the same local embedder. */
async function seeded(): Promise<string> {
  const path = tempDbPath();
  const db = openSmithersDb(path);
  opened.push(db);
  const embedder = hashEmbeddingModel(64);
  await createMemory({ db, embedder, namespace: "support" }).remember([
    { content: "Refunds take five business days to reach the card", metadata: { product: "billing" } },
    { content: "Refunds for gift cards are not possible", metadata: { product: "gifts" } },
    { content: "The office cat is named Biscuit", metadata: { product: "billing" } },
  ]);
  await createMemory({ db, embedder, namespace: "sales" }).remember([{ content: "Refunds are promised within one day by sales", metadata: {} }]);
  return path;
}

function kitFor(dbPath: string) {
  return createSmithers({ answer }, { dbPath, memory: { embedder: hashEmbeddingModel(64) } });
}

const promptOf = (agent: ReturnType<typeof scriptedAgent>, call = 0) => agent.calls[call]!.prompt;

/** The prompt an agent task under `<Memory {...memory}>` (with its own `memory` prop, if given) was called with, over the seeded chunks. */
async function promptUnder(memory: MemoryProps, prompt: string, own?: MemoryConfig): Promise<string> {
  const kit = kitFor(await seeded());
  const agent = scriptedAgent([{ text: "ok" }]);
  const wf = kit.smithers(() => (
    <kit.Workflow name="support">
      <kit.Memory {...memory}>
        <kit.Task id="reply" output={kit.outputs.answer} agent={agent} memory={own}>
          {prompt}
        </kit.Task>
      </kit.Memory>
    </kit.Workflow>
  ));
  await runWorkflow(wf, { runId: "r1" });
  return promptOf(agent);
}

/** A one-task workflow whose embedder always fails, run once: its database and the agent. */
async function withFailingEmbedder(memory: MemoryConfig, taskProps: { noRetry?: boolean } = {}) {
  const dbPath = tempDbPath();
  const failing = { ...hashEmbeddingModel(64), doEmbed: async () => Promise.reject(new Error("embedding service down")) };
  const kit = createSmithers({ answer }, { dbPath, memory: { embedder: failing, maxRetries: 0 } });
  const agent = scriptedAgent([{ text: "done" }]);
  const wf = kit.smithers(() => (
    <kit.Workflow name="w">
      <kit.Task id="t" output={kit.outputs.answer} agent={agent} memory={memory} {...taskProps}>
        work
      </kit.Task>
    </kit.Workflow>
  ));
  return { dbPath, agent, result: await runWorkflow(wf, { runId: "r1" }) };
}

describe("<Memory>", () => {
  test("an agent task under <Memory> gets the recalled chunks of its bank before its own prompt, best first", async () => {
    const prompt = await promptUnder({ bank: "support" }, "How long do refunds take to reach the card?");
    expect(prompt.startsWith("<smithers_memory_context>\n")).toBe(true);
    const [block, rest] = prompt.split("</smithers_memory_context>\n\n");
    expect(rest!.startsWith("How long do refunds take to reach the card?")).toBe(true);
    expect(block!.indexOf("Refunds take five business days")).toBeGreaterThan(-1);
    expect(block!.indexOf("Refunds take five business days")).toBeLessThan(block!.indexOf("gift cards"));
    expect(block).not.toContain("sales"); // another namespace
  });

  test("tags recall only the chunks whose metadata carries them", async () => {
    const prompt = await promptUnder({ bank: "support", tags: ["product:gifts"] }, "How long do refunds take?");
    expect(prompt).toContain("gift cards");
    expect(prompt).not.toContain("five business days");
  });

  test("banks recall from every namespace named and say which one each chunk came from", async () => {
    const prompt = await promptUnder({ banks: ["support", "sales"], k: 10 }, "refunds");
    expect(prompt).toContain("[sales, similarity");
    expect(prompt).toContain("[support, similarity");
  });

  test("a fixed recall string is the query, and recall={false} injects nothing", async () => {
    const dbPath = await seeded();
    const kit = kitFor(dbPath);
    const fixed = scriptedAgent([{ text: "ok" }]);
    const none = scriptedAgent([{ text: "ok" }]);
    const wf = kit.smithers(() => (
      <kit.Workflow name="support">
        <kit.Memory bank="support" recall="office cat name" k={1}>
          <kit.Task id="fixed" output={kit.outputs.answer} agent={fixed}>
            Write a greeting.
          </kit.Task>
          <kit.Task id="none" output={kit.outputs.answer} agent={none} memory={{ bank: "support", recall: false }}>
            Write a greeting.
          </kit.Task>
        </kit.Memory>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { runId: "r1" });
    expect(promptOf(fixed)).toContain("Biscuit");
    expect(promptOf(fixed)).not.toContain("Refunds");
    expect(promptOf(none).startsWith("Write a greeting.")).toBe(true);
  });

  test("a task's memory prop replaces its <Memory>'s configuration", async () => {
    const prompt = await promptUnder({ bank: "support", tags: ["product:gifts"] }, "refunds", { bank: "sales" });
    expect(prompt).toContain("within one day by sales");
    expect(prompt).not.toContain("gift cards");
  });

  test("maxTokens caps the injected block's UTF-8 bytes, leaving out chunks that do not fit", async () => {
    const prompt = await promptUnder({ bank: "support", maxTokens: 200 }, "refunds");
    const block = `${prompt.split("</smithers_memory_context>\n\n")[0]}</smithers_memory_context>\n\n`;
    expect(Buffer.byteLength(block, "utf8")).toBeLessThanOrEqual(200);
    expect(block.match(/^- \[/gm)?.length).toBe(1);
  });

  test("a retry of the task sees the same recalled block, even after the memory changed", async () => {
    const dbPath = await seeded();
    const kit = kitFor(dbPath);
    const db = openSmithersDb(dbPath);
    opened.push(db);
    const agent = scriptedAgent(async (_args, i) => {
      if (i === 0) {
        await createMemory({ db, embedder: hashEmbeddingModel(64), namespace: "support" }).remember("Refunds to the card are now instant");
        throw new Error("flaky");
      }
      return { text: "ok" };
    });
    const wf = kit.smithers(() => (
      <kit.Workflow name="support">
        <kit.Memory bank="support">
          <kit.Task id="reply" output={kit.outputs.answer} agent={agent} retries={1} retryPolicy={{ initialDelayMs: 0 }}>
            refunds to the card
          </kit.Task>
        </kit.Memory>
      </kit.Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r1" });
    expect(result.status).toBe("finished");
    expect(agent.calls.length).toBe(2);
    expect(promptOf(agent, 1)).toBe(promptOf(agent, 0));
    expect(promptOf(agent, 1)).not.toContain("instant");
  });

  test('retain="on-complete" writes a digest of the output into the first bank, with the run, workflow, task and tags', async () => {
    const dbPath = tempDbPath();
    const kit = kitFor(dbPath);
    const agent = scriptedAgent([{ text: "Refunds take five days" }]);
    const wf = kit.smithers(() => (
      <kit.Workflow name="support">
        <kit.Memory banks={["notes", "support"]} tags={{ product: "billing" }} retain="on-complete">
          <kit.Task id="reply" output={kit.outputs.answer} agent={agent}>
            refunds
          </kit.Task>
        </kit.Memory>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { runId: "r1" });
    const rows = await query(dbPath, "SELECT id, namespace, content, dimensions, metadata_json FROM _smithers_vectors");
    expect(rows).toEqual([
      {
        id: "r1:reply:0",
        namespace: "notes",
        content: 'Task "reply" of workflow "support" produced: {"text":"Refunds take five days"}',
        dimensions: 64,
        metadata_json: JSON.stringify({ metadata: { product: "billing", nodeId: "reply", iteration: 0 }, workflow: "support", runId: "r1" }),
      },
    ]);
  });

  test("a retained digest is recalled by a later run's task with the same tags", async () => {
    const dbPath = tempDbPath();
    const kit = kitFor(dbPath);
    const first = scriptedAgent([{ text: "The deploy key rotates every Tuesday" }]);
    const second = scriptedAgent([{ text: "ok" }]);
    const make = (agent: ReturnType<typeof scriptedAgent>) =>
      kit.smithers(() => (
        <kit.Workflow name="ops">
          <kit.Memory bank="ops" tags={["team:infra"]} retain="on-complete">
            <kit.Task id="note" output={kit.outputs.answer} agent={agent}>
              When does the deploy key rotate?
            </kit.Task>
          </kit.Memory>
        </kit.Workflow>
      ));
    await runWorkflow(make(first), { runId: "a" });
    await runWorkflow(make(second), { runId: "b" });
    expect(promptOf(first).startsWith("When does the deploy key rotate?")).toBe(true);
    expect(promptOf(second)).toContain("rotates every Tuesday");
  });

  test("an embedder that fails during retain leaves the task finished and records a failed memory:retain call", async () => {
    const { dbPath, result } = await withFailingEmbedder({ bank: "b", recall: false, retain: "on-complete" });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT text FROM answer")).toEqual([{ text: "done" }]);
    expect(await query(dbPath, "SELECT COUNT(*) AS n FROM _smithers_vectors")).toEqual([{ n: 0 }]);
    const calls = await query<{ tool_name: string; status: string; error_json: string }>(
      dbPath,
      "SELECT tool_name, status, error_json FROM _smithers_tool_calls",
    );
    expect(calls.map((c) => [c.tool_name, c.status])).toEqual([["memory:retain", "failed"]]);
    expect(JSON.parse(calls[0]!.error_json).code).toBe("MEMORY_EMBED_FAILED");
  });

  test("an embedder that never answers during retain is given up after the retain timeout; the task still finishes", async () => {
    const dbPath = tempDbPath();
    const hanging = {
      ...hashEmbeddingModel(64),
      doEmbed: ({ abortSignal }: { abortSignal?: AbortSignal }) =>
        new Promise<never>((_, reject) => abortSignal?.addEventListener("abort", () => reject(abortSignal.reason), { once: true })),
    };
    const kit = createSmithers({ answer }, { dbPath, memory: { embedder: hanging, maxRetries: 0 } });
    const agent = scriptedAgent([{ text: "done" }]);
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="t" output={kit.outputs.answer} agent={agent} memory={{ bank: "b", recall: false, retain: "on-complete" }}>
          work
        </kit.Task>
      </kit.Workflow>
    ));
    // The run's clock: its 60-second retain timer is due at once, every other timer keeps its time.
    const clock = {
      now: () => Date.now(),
      setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms === 60_000 ? 0 : ms),
      clearTimeout: (timer: unknown) => clearTimeout(timer as ReturnType<typeof setTimeout>),
    };
    const result = await runWorkflow(wf, { runId: "r1", clock });
    expect(result.status).toBe("finished");
    const calls = await query<{ tool_name: string; error_json: string }>(dbPath, "SELECT tool_name, error_json FROM _smithers_tool_calls");
    expect(calls.map((c) => [c.tool_name, JSON.parse(c.error_json).code])).toEqual([["memory:retain", "MEMORY_EMBED_FAILED"]]);
  });

  test("an embedder that fails during recall fails the attempt with MEMORY_EMBED_FAILED", async () => {
    const { dbPath, agent, result } = await withFailingEmbedder({ bank: "b" }, { noRetry: true });
    expect(result.status).toBe("failed");
    expect(agent.calls.length).toBe(0);
    const [attempt] = await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts");
    expect(JSON.parse(attempt!.error_json).code).toBe("MEMORY_EMBED_FAILED");
  });

  test("memory tools let the agent remember into and recall from the task's bank", async () => {
    const dbPath = await seeded();
    const kit = kitFor(dbPath);
    let recalled: unknown;
    const agent = Object.assign(
      scriptedAgent(async () => {
        await memoryTools.remember.execute({ content: "Biscuit prefers the window seat" });
        recalled = await memoryTools.recall.execute({ query: "Biscuit window", k: 1 });
        return { text: "ok" };
      }),
      { tools: { ...memoryTools } },
    );
    const wf = kit.smithers(() => (
      <kit.Workflow name="support">
        <kit.Memory bank="support" recall={false} tools>
          <kit.Task id="investigate" output={kit.outputs.answer} agent={agent}>
            Investigate.
          </kit.Task>
        </kit.Memory>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "r1" })).status).toBe("finished");
    expect(recalled).toMatchObject({ hits: [{ content: "Biscuit prefers the window seat", namespace: "support" }] });
    expect(await query(dbPath, "SELECT namespace FROM _smithers_vectors WHERE content = 'Biscuit prefers the window seat'")).toEqual([
      { namespace: "support" },
    ]);
  });

  test("memory tools: true on an agent that does not carry them fails the task with MEMORY_NOT_CONFIGURED", async () => {
    const dbPath = tempDbPath();
    const kit = kitFor(dbPath);
    const agent = scriptedAgent([{ text: "ok" }]);
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="t" output={kit.outputs.answer} agent={agent} memory={{ bank: "b", recall: false, tools: true }}>
          work
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "r1" })).status).toBe("failed");
    const [attempt] = await query<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts");
    expect(JSON.parse(attempt!.error_json).code).toBe("MEMORY_NOT_CONFIGURED");
    expect(agent.calls.length).toBe(0);
  });
});

describe("<Memory> bad props", () => {
  test("a task with memory in a workflow without an embedder fails with MEMORY_NOT_CONFIGURED, unretried", async () => {
    const dbPath = tempDbPath();
    const bare = createSmithers({ answer }, { dbPath });
    const agent = scriptedAgent([{ text: "ok" }]);
    const wf = bare.smithers(() => (
      <bare.Workflow name="w">
        <bare.Task id="t" output={bare.outputs.answer} agent={agent} retries={3} memory={{ bank: "b" }}>
          work
        </bare.Task>
      </bare.Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r1" });
    expect([result.status, result.error?.code]).toEqual(["failed", "MEMORY_NOT_CONFIGURED"]);
    expect(await query(dbPath, "SELECT attempt FROM _smithers_attempts")).toEqual([{ attempt: 1 }]);
  });

  /** The run fails at its first render: the code it fails with. */
  async function renderError(node: () => unknown): Promise<string | undefined> {
    const wf = kitFor(tempDbPath()).smithers(node as never);
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.status).toBe("failed");
    return result.error?.code;
  }
  const agent = scriptedAgent([{ text: "ok" }]);
  const kit = createSmithers({ answer });
  const task = (memory?: unknown) => (
    <kit.Task id="t" output={kit.outputs.answer} agent={agent} memory={memory as never}>
      p
    </kit.Task>
  );

  test("primers (a Hindsight feature) fail the render with UNSUPPORTED_PROP", async () => {
    const error = await renderError(() => (
      <kit.Workflow name="w">
        <kit.Memory bank="b" {...({ primers: ["p"] } as object)}>
          {task()}
        </kit.Memory>
      </kit.Workflow>
    ));
    expect(error).toBe("UNSUPPORTED_PROP");
  });

  test("budget on a task's memory fails the render with UNSUPPORTED_PROP", async () => {
    const error = await renderError(() => <kit.Workflow name="w">{task({ bank: "b", budget: "mid" })}</kit.Workflow>);
    expect(error).toBe("UNSUPPORTED_PROP");
  });

  test("a memory without a bank fails with INVALID_MEMORY", async () => {
    const error = await renderError(() => <kit.Workflow name="w">{task({ recall: "x" })}</kit.Workflow>);
    expect(error).toBe("INVALID_MEMORY");
  });

  test("bank and banks together fail with INVALID_MEMORY", async () => {
    const error = await renderError(() => (
      <kit.Workflow name="w">
        <kit.Memory bank="a" banks={["b"]}>
          {task()}
        </kit.Memory>
      </kit.Workflow>
    ));
    expect(error).toBe("INVALID_MEMORY");
  });

  test("a tag that is not key:value fails with INVALID_MEMORY", async () => {
    const error = await renderError(() => <kit.Workflow name="w">{task({ bank: "b", tags: ["urgent"] })}</kit.Workflow>);
    expect(error).toBe("INVALID_MEMORY");
  });

  test("memory on a compute task fails with MEMORY_NOT_CONFIGURED", async () => {
    const error = await renderError(() => (
      <kit.Workflow name="w">
        <kit.Task id="c" output={kit.outputs.answer} memory={{ bank: "b" } as never}>
          {() => ({ text: "x" })}
        </kit.Task>
      </kit.Workflow>
    ));
    expect(error).toBe("MEMORY_NOT_CONFIGURED");
  });

  test("memory and cache on one task fail with INVALID_WORKFLOW", async () => {
    const error = await renderError(() => (
      <kit.Workflow name="w">
        <kit.Task id="t" output={kit.outputs.answer} agent={agent} memory={{ bank: "b" }} cache={{ by: () => "k" }}>
          p
        </kit.Task>
      </kit.Workflow>
    ));
    expect(error).toBe("INVALID_WORKFLOW");
  });
});

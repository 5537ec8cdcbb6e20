import { describe, expect, test } from "bun:test";
import {
  findToolCallByIdempotencyKey,
  finishToolCall,
  listToolCalls,
  recordToolCall,
  startToolCall,
  type ToolCallStart,
} from "../../src/db/adapters/tool-calls.ts";
import { forEachBackend } from "./backends.ts";

const call = (overrides: Partial<ToolCallStart> = {}): ToolCallStart => ({
  runId: "r1",
  nodeId: "fix",
  attempt: 1,
  toolName: "bash",
  input: { cmd: "ls" },
  startedAtMs: 100,
  ...overrides,
});

forEachBackend((db) => {
  describe("startToolCall", () => {
    test("records the intent as a started row before any result exists", async () => {
      const seq = await startToolCall(db(), call({ sideEffect: true, idempotencyKey: "k1" }));
      expect(seq).toBe(0);
      expect(await listToolCalls(db(), { runId: "r1" })).toEqual([
        {
          runId: "r1",
          nodeId: "fix",
          iteration: 0,
          attempt: 1,
          seq: 0,
          toolName: "bash",
          inputJson: '{"cmd":"ls"}',
          outputJson: null,
          startedAtMs: 100,
          finishedAtMs: null,
          status: "started",
          errorJson: null,
          sideEffect: true,
          idempotencyKey: "k1",
        },
      ]);
    });

    test("allocates seq 0, 1, 2 … per attempt", async () => {
      expect(await startToolCall(db(), call())).toBe(0);
      expect(await startToolCall(db(), call())).toBe(1);
      expect(await startToolCall(db(), call({ attempt: 2 }))).toBe(0);
      expect(await startToolCall(db(), call({ iteration: 1 }))).toBe(0);
      expect(await startToolCall(db(), call({ nodeId: "other" }))).toBe(0);
    });

    test("concurrent starts in one attempt get distinct seqs", async () => {
      const seqs = await Promise.all(Array.from({ length: 10 }, () => startToolCall(db(), call())));
      expect([...seqs].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
  });

  describe("finishToolCall", () => {
    test("stores the output and marks the call succeeded", async () => {
      const seq = await startToolCall(db(), call());
      expect(await finishToolCall(db(), { runId: "r1", nodeId: "fix", attempt: 1, seq, finishedAtMs: 150, output: { files: 3 } })).toBe(true);
      const [row] = await listToolCalls(db(), { runId: "r1" });
      expect([row?.status, row?.outputJson, row?.errorJson, row?.finishedAtMs]).toEqual(["succeeded", '{"files":3}', null, 150]);
    });

    test("stores the error and marks the call failed", async () => {
      const seq = await startToolCall(db(), call());
      await finishToolCall(db(), { runId: "r1", nodeId: "fix", attempt: 1, seq, finishedAtMs: 150, error: { message: "exit 1" } });
      const [row] = await listToolCalls(db(), { runId: "r1" });
      expect([row?.status, row?.outputJson, row?.errorJson]).toEqual(["failed", null, '{"message":"exit 1"}']);
    });

    test("a call is finished once: the second finish changes nothing", async () => {
      const seq = await startToolCall(db(), call());
      const key = { runId: "r1", nodeId: "fix", attempt: 1, seq, finishedAtMs: 150 };
      await finishToolCall(db(), { ...key, output: "first" });
      expect(await finishToolCall(db(), { ...key, error: "late" })).toBe(false);
      expect((await listToolCalls(db(), { runId: "r1" }))[0]?.outputJson).toBe('"first"');
    });

    test("finishing an unknown call returns false", async () => {
      expect(await finishToolCall(db(), { runId: "r1", nodeId: "fix", attempt: 1, seq: 9, finishedAtMs: 1, output: null })).toBe(false);
    });
  });

  describe("recordToolCall", () => {
    test("records a replayed call, finished as it is recorded, at the attempt's next seq", async () => {
      await startToolCall(db(), call());
      const seq = await recordToolCall(db(), { ...call({ idempotencyKey: "k1" }), finishedAtMs: 100, status: "replayed", output: { ok: true } });
      expect(seq).toBe(1);
      const row = (await listToolCalls(db(), { runId: "r1" }))[1];
      expect([row?.status, row?.outputJson, row?.errorJson, row?.finishedAtMs, row?.idempotencyKey]).toEqual(["replayed", '{"ok":true}', null, 100, "k1"]);
    });

    test("records a call refused before running as failed with its error", async () => {
      await recordToolCall(db(), { ...call(), finishedAtMs: 100, status: "failed", error: { code: "TOOL_INVALID_INPUT" } });
      const [row] = await listToolCalls(db(), { runId: "r1" });
      expect([row?.status, row?.outputJson, row?.errorJson]).toEqual(["failed", null, '{"code":"TOOL_INVALID_INPUT"}']);
    });
  });

  describe("findToolCallByIdempotencyKey", () => {
    test("returns the latest call made with the key", async () => {
      await startToolCall(db(), call({ idempotencyKey: "deploy-42", startedAtMs: 100 }));
      const seq = await startToolCall(db(), call({ attempt: 2, idempotencyKey: "deploy-42", startedAtMs: 200 }));
      await finishToolCall(db(), { runId: "r1", nodeId: "fix", attempt: 2, seq, finishedAtMs: 250, output: "ok" });
      await startToolCall(db(), call({ idempotencyKey: "other", startedAtMs: 300 }));
      const found = await findToolCallByIdempotencyKey(db(), "deploy-42");
      expect([found?.attempt, found?.status, found?.outputJson]).toEqual([2, "succeeded", '"ok"']);
    });

    test("is undefined for an unused key", async () => {
      await startToolCall(db(), call());
      expect(await findToolCallByIdempotencyKey(db(), "nope")).toBeUndefined();
    });
  });

  describe("listToolCalls", () => {
    test("filters by node, iteration and attempt, in call order", async () => {
      await startToolCall(db(), call({ nodeId: "b" }));
      await startToolCall(db(), call({ nodeId: "a", attempt: 2 }));
      await startToolCall(db(), call({ nodeId: "a", attempt: 1 }));
      await startToolCall(db(), call({ nodeId: "a", attempt: 1, toolName: "edit" }));
      await startToolCall(db(), call({ nodeId: "a", iteration: 1 }));
      await startToolCall(db(), call({ runId: "r2" }));
      const key = (r: { nodeId: string; iteration: number; attempt: number; seq: number }) => `${r.nodeId}:${r.iteration}:${r.attempt}:${r.seq}`;
      expect((await listToolCalls(db(), { runId: "r1" })).map(key)).toEqual(["a:0:1:0", "a:0:1:1", "a:0:2:0", "a:1:1:0", "b:0:1:0"]);
      expect((await listToolCalls(db(), { runId: "r1", nodeId: "a", iteration: 0 })).map(key)).toEqual(["a:0:1:0", "a:0:1:1", "a:0:2:0"]);
      expect((await listToolCalls(db(), { runId: "r1", nodeId: "a", attempt: 1 })).map(key)).toEqual(["a:0:1:0", "a:0:1:1", "a:1:1:0"]);
    });
  });
});

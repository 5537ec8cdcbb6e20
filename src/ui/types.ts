/**
 * What the dashboard reads from the JSON API. The server's types (src/cli/ps.ts RunSummary,
 * src/cli/inspect.ts InspectReport) live in the Bun program, which this browser program does not
 * compile; these restate only the fields the pages show, and the browser tests check them end to end.
 */
export type Usage = { inputTokens: number; cachedInputTokens: number; outputTokens: number; costUsd: number | null };

export type RunListItem = {
  runId: string;
  workflow: string;
  status: string;
  createdAtMs: number;
  startedAtMs?: number | null;
  finishedAtMs?: number | null;
  durationMs?: number | null;
  progress?: { done: number; total: number };
  usage?: Usage;
};

export type TaskReport = {
  nodeId: string;
  iteration: number;
  state: string;
  attempts: number;
  durationMs: number;
  error: { code?: string; message?: string } | null;
  usage: Usage | null;
};

export type PendingApproval = {
  nodeId: string;
  iteration: number;
  request: { title?: string; summary?: string; mode?: "select" | "rank" | "gate"; options?: { key: string; label?: string }[] };
};

export type RunReport = {
  runId: string;
  status: string;
  workflowName?: string;
  workflow?: string;
  createdAtMs: number;
  startedAtMs?: number | null;
  finishedAtMs?: number | null;
  error?: { code?: string; message?: string } | null;
  usage: Usage | null;
  nodes: TaskReport[];
  pendingApprovals?: PendingApproval[];
};

export type OutputRow = { nodeId: string; iteration: number; table: string; row: Record<string, unknown> };

export const RUN_STATUSES = [
  "queued",
  "running",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
  "finished",
  "failed",
  "cancelled",
  "continued",
] as const;

/** Statuses after which a run changes no more (unless resumed). */
export const OVER = new Set(["finished", "failed", "cancelled", "continued"]);

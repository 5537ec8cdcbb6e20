/**
 * What the dashboard reads from the JSON API. The server's types (src/cli/ps.ts RunSummary,
 * src/cli/inspect.ts InspectReport) live in the Bun program, which this browser program does not
 * compile; these restate only the fields the pages show, and the browser tests check them end to end.
 * The lists of names come from src/engine/names.ts, which imports nothing.
 */
import { ENDED_RUN_STATUSES, EVENT_TYPES as ENGINE_EVENT_TYPES, RUN_STATUSES as ENGINE_RUN_STATUSES } from "../engine/names.ts";

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
  runId?: string;
  nodeId: string;
  iteration: number;
  request: InboxApproval["request"];
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

/** What the runs list's status filter offers: every run status, and queued (a request no worker took yet). */
export const RUN_STATUSES = ["queued", ...ENGINE_RUN_STATUSES] as const;

/** Statuses after which a run changes no more (unless resumed). */
export const OVER: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);

/** A frame's tree (src/codec XmlElement): `workflow` at the root, containers, and `task` leaves with `state`. */
export type PropValue = string | number | boolean | null | PropValue[] | { [k: string]: PropValue };
export type FrameTree = { tag: string; props: Record<string, PropValue>; children: FrameTree[] };

export type NodeRef = { tag: string; id: string; iteration: number };
export type FrameChanges = {
  mounted: (NodeRef & { props: Record<string, PropValue> })[];
  unmounted: (NodeRef & { props: Record<string, PropValue> })[];
  changed: (NodeRef & { props: Record<string, { from?: PropValue; to?: PropValue }> })[];
};

/** A run forked from a frame (`smithers fork`). */
export type ForkRef = { runId: string; status: string; createdAtMs: number };

/** GET /runs/:id/frames/:n */
export type FrameAt = {
  runId: string;
  frameNo: number;
  lastFrameNo: number;
  createdAtMs: number | null;
  tree: FrameTree;
  changes: FrameChanges;
  forks: ForkRef[];
};

export type ApprovalOption = { key: string; label?: string; summary?: string };

/** GET /inbox's approvals: a gate waiting in a run that has not ended. */
export type InboxApproval = {
  runId: string;
  workflowName: string;
  runStatus: string;
  nodeId: string;
  iteration: number;
  requestedAtMs: number | null;
  request: { title?: string; summary?: string; metadata?: Record<string, unknown>; mode?: "select" | "rank" | "gate"; options?: ApprovalOption[] };
};

/** A JSON Schema as zod's toJSONSchema writes it, the parts a form reads. */
export type JsonSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: PropValue[];
  const?: PropValue;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
};

/** GET /inbox's human tasks. */
export type InboxHuman = {
  requestId: string;
  runId: string;
  workflowName: string | null;
  nodeId: string;
  iteration: number;
  prompt: string;
  requestedAtMs: number;
  expired: boolean;
  schema: JsonSchema | null;
};

/** One journal event as GET /runs/:id/events sends it. */
export type RunEvent = { seq: number; type: string; timestampMs?: number; nodeId?: string; iteration?: number; payload: Record<string, unknown> };

/** Every event type a run's journal can hold, for the events page's filter (RunRefused is the server's own). */
export const EVENT_TYPES = ENGINE_EVENT_TYPES.filter((t) => t !== "RunRefused");

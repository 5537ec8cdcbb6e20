/**
 * What the dashboard reads from the JSON API: the server's own shapes, from the import-free API
 * contract (src/contract), so a field the server changes is a type error here. Only what the UI
 * builds itself (its event rows, its filter lists) is declared in this file.
 */
import { ENDED_RUN_STATUSES, EVENT_TYPES as ALL_EVENT_TYPES, RUN_STATUSES as STORED_RUN_STATUSES } from "../contract/index.ts";

export { progressText, scoreDelta, scoreText } from "../contract/index.ts";
import type { InspectReport, NodeReport, QueuedRunReport } from "../contract/index.ts";

export type {
  ApprovalOption,
  ComparedTask,
  CompareSide,
  RunComparison,
  RunScores,
  TaskScore,
  ForkRef,
  FrameAt,
  FrameChanges,
  FrameTree,
  InboxApproval,
  InboxHuman,
  JsonSchema,
  NodeRef,
  OutputRow,
  PendingApproval,
  PropValue,
  RunActivity,
  RunListItem,
  SandboxList,
  SandboxSession,
  Usage,
  Waterfall,
  WaterfallBar,
  WaterfallKind,
} from "../contract/index.ts";

/** A task row of the run page. */
export type TaskReport = NodeReport;

/** GET /runs/:id: a stored run's report, or a queued request's summary (no tasks yet). */
export type RunReport = InspectReport | QueuedRunReport;

/** What the runs list's status filter offers: every run status, and queued (a request no worker took yet). */
export const RUN_STATUSES = ["queued", ...STORED_RUN_STATUSES] as const;

/** Statuses after which a run changes no more (unless resumed). */
export const OVER: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);

/** One journal event as the events page keeps it: its place, type and node, and the rest of its fields. */
export type RunEvent = { seq: number; type: string; timestampMs?: number; nodeId?: string; iteration?: number; payload: Record<string, unknown> };

/** Every event type a run's journal can hold, for the events page's filter (RunRefused is the server's own). */
export const EVENT_TYPES = ALL_EVENT_TYPES.filter((t) => t !== "RunRefused");

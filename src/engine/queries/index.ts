/**
 * Read models: what `inspect`, `ps`, GET /runs, the inbox and the dashboard read. One function per
 * view, each returning a shape of the API contract (src/contract), shared by the CLI and the server.
 */
export { inspectRun } from "./inspect.ts";
export { limitUse, runSlots } from "./limits.ts";
export { pendingApprovalsAcrossRuns } from "./inbox.ts";
export { listRunItems, listRunSummaries, queuedSummary, runHeader } from "./runs.ts";
export { buildWaterfall, runWaterfall } from "./waterfall.ts";
export { bucketRunTimes, runActivity } from "./activity.ts";
export { runScores, scorerStats } from "./scores.ts";
export { sandboxSessions } from "./sandboxes.ts";
export { compareRuns, scoreRowsOfRun, scorerSummaries } from "./compare.ts";

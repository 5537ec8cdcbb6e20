/**
 * Processes that keep runs going without a caller: the supervisor (resumes due or orphaned runs),
 * workers (take queued runs), and cron schedules and their firing.
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export { type CronFire, type CronOutcome, cronRunId, fireDueCrons, type FireDueCronsOptions } from "./cron-fire.ts";
export { addCron, type AddCronOptions, type CronSchedule, listCrons, parseCron, removeCron } from "./cron.ts";
export { supervise, superviseForever, type SuperviseOptions, type SuperviseOutcome } from "./supervisor.ts";
export { RESUME_EVENTS } from "../core/index.ts";
export {
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_WORKER_CONCURRENCY,
  loadWorkflowsDir,
  MAX_LOAD_RETURNS,
  type RegisteredWorkflow,
  runWorker,
  Worker,
  type WorkerOptions,
  type WorkerOutcome,
} from "./worker.ts";

/** The failed attempts `inspect` and the run page show under each task: code, message and the author's stack frames. */
import type { AttemptError, FailedAttempt } from "../../contract/index.ts";
import type { attempts } from "../../db/index.ts";
import { storedStack } from "../../errors/index.ts";
import { MAX_FAILED_ATTEMPTS_SHOWN } from "../core/index.ts";

type AttemptRow = attempts.AttemptRow;

/** A stored error_json as the report shows it; its stack is the first one along its cause chain. */
export function attemptError(errorJson: string | null): AttemptError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(errorJson ?? "null");
  } catch {
    return { message: errorJson ?? "" };
  }
  if (typeof parsed !== "object" || parsed === null) return {};
  const { code, message } = parsed as { code?: unknown; message?: unknown };
  const stack = storedStack(parsed);
  return {
    ...(typeof code === "string" ? { code } : {}),
    ...(typeof message === "string" ? { message } : {}),
    ...(stack ? { stack } : {}),
  };
}

/** Each node's failed attempts (key `nodeId#iteration`), the last MAX_FAILED_ATTEMPTS_SHOWN of them, oldest first. */
export function failedAttemptsByNode(rows: readonly AttemptRow[]): Map<string, FailedAttempt[]> {
  const byNode = new Map<string, FailedAttempt[]>();
  for (const a of rows) {
    if (a.state !== "failed") continue;
    const key = `${a.nodeId}#${a.iteration}`;
    const list = byNode.get(key) ?? [];
    list.push({ attempt: a.attempt, finishedAtMs: a.finishedAtMs, error: attemptError(a.errorJson) });
    byNode.set(key, list);
  }
  for (const [key, list] of byNode) {
    list.sort((x, y) => x.attempt - y.attempt);
    if (list.length > MAX_FAILED_ATTEMPTS_SHOWN) byNode.set(key, list.slice(-MAX_FAILED_ATTEMPTS_SHOWN));
  }
  return byNode;
}

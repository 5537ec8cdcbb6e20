/**
 * Which props each component takes. A prop outside its list fails the render with
 * UNSUPPORTED_PROP naming it: a workflow never runs with a prop silently ignored (a gated deploy
 * running ungated). Props that smithers-orchestrator documents and this version does not support
 * yet say so, pointing at the docs' list of differences.
 */
import { SmithersError } from "../errors/index.ts";

/** Where the docs list what differs from smithers-orchestrator. */
export const DIFFERENCES = "docs/migrating-from-smithers-orchestrator.md";

/**
 * Props the peer's components take that some component here does not support yet (the peer's
 * meaning is known): where a component accepts one (`cache` on Task and Workflow), the list is
 * not consulted; where it does not (`cache` on Subflow and Approval), the error says "not yet".
 */
export const PEER_ONLY_PROPS: ReadonlySet<string> = new Set([
  "cache",
  "needs",
  "allowedScopes",
  "allowedUsers",
  "allowTools",
  "autoApprove",
  "bind",
  "failurePolicy",
  "fork",
  "heartbeatTimeout",
  "heartbeatTimeoutMs",
  "hijack",
  "onHijackExit",
  "priority",
  "sideEffect",
]);

/**
 * The peer's `<Approval>` (and `<ApprovalGate>`) also take a task's timeout and retries, which there
 * bound reading the decision after it was made; a person's wait has no attempt to time out or retry here.
 */
export const APPROVAL_PEER_ONLY_PROPS: ReadonlySet<string> = new Set([...PEER_ONLY_PROPS, "timeoutMs", "retries", "retryPolicy"]);

/**
 * Props of each host element, as the render reads them. Components that wrap a Task (Approval,
 * Timer, WaitForEvent, Signal, HumanTask) check their own props before they build the element.
 */
export const ACCEPTED_PROPS = {
  Workflow: new Set(["name", "cache", "children"]),
  Task: new Set([
    "id",
    "output",
    "outputSchema",
    "agent",
    "fallbackAgent",
    "retries",
    "retryPolicy",
    "noRetry",
    "maxSchemaRetries",
    "timeoutMs",
    "maxAbandons",
    "skipIf",
    "continueOnFail",
    "dependsOn",
    "needs",
    "deps",
    "depsOptional",
    "needsApproval",
    "async",
    "cache",
    "concurrencyKey",
    "label",
    "meta",
    "sandbox",
    "scorers",
    "groundTruth",
    "context",
    "memory",
    "children",
  ]),
  Sequence: new Set(["label", "skipIf", "children"]),
  Parallel: new Set(["id", "label", "maxConcurrency", "subtreeConcurrency", "skipIf", "children"]),
  Loop: new Set(["id", "until", "maxIterations", "onMaxReached", "continueAsNewEvery", "skipIf", "children"]),
  ContinueAsNew: new Set(["state"]),
  Worktree: new Set(["path", "id", "branch", "baseBranch", "skipIf", "children"]),
  /** budget and primers are accepted only to be refused with the reason (Hindsight-only) by mergeMemoryConfig. */
  Memory: new Set(["bank", "banks", "tags", "recall", "k", "maxTokens", "retain", "tools", "budget", "primers", "skipIf", "children"]),
  Sandbox: new Set(["network", "writableRoot", "memoryBytes", "cpuSeconds", "skipIf", "children"]),
  Branch: new Set(["if", "then", "else", "skipIf"]),
  Approval: new Set([
    "id",
    "output",
    "outputSchema",
    "request",
    "onDeny",
    "mode",
    "options",
    "async",
    "skipIf",
    "continueOnFail",
    "dependsOn",
    "needs",
    "label",
  ]),
  ApprovalGate: new Set(["id", "output", "request", "when", "onDeny", "skipIf", "continueOnFail"]),
  EscalationChain: new Set(["id", "levels", "humanFallback", "humanRequest", "escalationOutput", "skipIf", "children"]),
  /** One entry of `<EscalationChain levels={[…]}>`. */
  EscalationLevel: new Set(["agent", "output", "label", "escalateIf"]),
  Timer: new Set(["id", "duration", "until", "skipIf", "dependsOn", "label"]),
  WaitForEvent: new Set([
    "id",
    "event",
    "output",
    "outputSchema",
    "correlationId",
    "timeoutMs",
    "onTimeout",
    "tagged",
    "async",
    "skipIf",
    "dependsOn",
    "label",
  ]),
  Signal: new Set(["id", "schema", "correlationId", "timeoutMs", "onTimeout", "tagged", "async", "skipIf", "dependsOn", "label", "children"]),
  HumanTask: new Set(["id", "output", "outputSchema", "prompt", "maxAttempts", "timeoutMs", "async", "skipIf", "continueOnFail", "dependsOn", "label"]),
  Subflow: new Set([
    "id",
    "workflow",
    "output",
    "input",
    "mode",
    "retries",
    "retryPolicy",
    "noRetry",
    "timeoutMs",
    "skipIf",
    "continueOnFail",
    "dependsOn",
    "label",
    "meta",
    "children",
  ]),
  TryCatchFinally: new Set(["id", "try", "catch", "catchErrors", "finally", "skipIf"]),
  Saga: new Set(["id", "steps", "onFailure", "skipIf", "children"]),
  SagaStep: new Set(["id", "compensation", "children"]),
  /** One entry of `<Saga steps={[…]}>`. */
  SagaStepDef: new Set(["id", "action", "compensation", "label"]),
} satisfies Record<string, ReadonlySet<string>>;

/**
 * Throws UNSUPPORTED_PROP for the first prop of `props` outside `accepted` (props set to
 * undefined count as absent; the engine's own `smithers:` markers are always accepted).
 */
export function checkProps(component: string, props: object, accepted: ReadonlySet<string>, peerOnly: ReadonlySet<string> = PEER_ONLY_PROPS): void {
  for (const name of Object.keys(props)) {
    if (accepted.has(name) || (props as Record<string, unknown>)[name] === undefined || name.startsWith("smithers:")) continue;
    const id = (props as { id?: unknown }).id;
    const where = `<${component}${typeof id === "string" ? ` id="${id}"` : ""}>`;
    const peer = peerOnly.has(name);
    const message = peer
      ? `${where}: the prop "${name}" of smithers-orchestrator is not supported by this version yet (see ${DIFFERENCES})`
      : `${where} has no prop "${name}"; it takes ${[...accepted].filter((p) => p !== "children").join(", ")}`;
    throw new SmithersError("UNSUPPORTED_PROP", message, { component, prop: name, peerOnly: peer, ...(typeof id === "string" ? { nodeId: id } : {}) });
  }
}

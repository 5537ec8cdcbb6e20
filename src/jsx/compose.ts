/**
 * Composition: `<TryCatchFinally>` (an error boundary with cleanup) and `<Saga>` (steps that are
 * undone in reverse order when a later one fails). Each component returns a host element that
 * render() turns into a PlanTry / PlanSaga with the functions below; the scheduler decides what
 * runs (engine/schedule/scheduler-compose.ts), from the plan and the persisted node states only, so a
 * resumed run picks up a catch or a compensation where it was.
 */
import { SmithersError, type SmithersErrorCode } from "../errors/index.ts";
import { makeElement, type SmithersElement, type SmithersNode } from "./element.ts";
import { catchesCode, type PlanGroup, type PlanSaga, type PlanSagaStep, type PlanTry } from "./plan.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";
import { renderHooks, type ScopeFailure } from "./render-context.ts";

export const COMPOSE_HOST = { tryCatch: "smithers:try", saga: "smithers:saga", sagaStep: "smithers:saga-step" } as const;

/** An error code to catch: one of SMITHERS_ERROR_CODES, or the code of an error a task threw itself. */
export type CatchableCode = SmithersErrorCode | (string & {});

export type TryCatchFinallyProps = {
  /** Names the boundary in frames (default: from its place in the tree). */
  id?: string;
  /** The guarded work: one element (wrap several in `<Sequence>` or `<Parallel>`). */
  try: SmithersElement;
  /**
   * Runs when `try` fails, instead of the run failing. As a function it is called with the
   * failure (a SmithersError: `code`, `message`/`summary`, `nodeId`) once the failure happened.
   */
  catch?: SmithersElement | ((error: SmithersError) => SmithersElement);
  /** Only failures with one of these codes are caught; others go on up (after `finally`). */
  catchErrors?: readonly CatchableCode[];
  /** Runs after `try` succeeded, after `catch`, and also when the failure was not caught or `catch` failed. */
  finally?: SmithersElement;
  skipIf?: boolean;
};

/**
 * An error boundary: `try` runs; when a task in it fails for good (after its retries, and not
 * `continueOnFail`), its other tasks settle and `catch` runs in its place; `finally` runs after
 * either. The run fails only when the failure is not caught, or `catch` or `finally` fail.
 * A node of the failed block still waiting for the world (approval, human task, signal, timer, a
 * `<Subflow>`'s child) is cancelled and its request closed, so nothing waits on an answer no one
 * can use. `dependsOn` only orders (the peer's "until terminal"): a task depending on the caught
 * task runs once it failed; one reading its row through `deps` fails with DEPENDENCY_DEADLOCK.
 * @example
 * <TryCatchFinally
 *   try={<Task id="deploy" output={outputs.deploy}>{deploy}</Task>}
 *   catch={(error) => <Task id="report" output={outputs.report}>{{ reason: error.code }}</Task>}
 *   finally={<Task id="unlock" output={outputs.unlock}>{unlock}</Task>}
 * />
 */
export function TryCatchFinally(props: TryCatchFinallyProps): SmithersNode {
  checkProps("TryCatchFinally", props, ACCEPTED_PROPS.TryCatchFinally);
  return props.skipIf ? null : makeElement(COMPOSE_HOST.tryCatch, props);
}

export type SagaStepDef = {
  id: string;
  /** The forward work of the step. */
  action: SmithersElement;
  /** Undoes the action; runs only if the action completed and a later step failed. */
  compensation: SmithersElement;
  label?: string;
};

export type SagaProps = {
  /** Names the saga in frames and errors (default: from its place in the tree). */
  id?: string;
  /** The steps, in order; when given, `<Saga.Step>` children are ignored. */
  steps?: readonly SagaStepDef[];
  /**
   * On a failed step: "compensate" (default) undoes the completed steps in reverse order and the
   * workflow goes on; "compensate-and-fail" undoes them, then fails with the step's error;
   * "fail" fails at once, undoing nothing.
   */
  onFailure?: "compensate" | "compensate-and-fail" | "fail";
  skipIf?: boolean;
  /** `<Saga.Step>` elements, the alternative to `steps`. */
  children?: SmithersNode;
};

export type SagaStepProps = {
  id: string;
  compensation: SmithersElement;
  /** The step's action. */
  children: SmithersElement;
};

/**
 * One step of a `<Saga>` written as a child (also `<Saga.Step>`): its children are the action.
 * @example
 * <Saga.Step id="staging" compensation={<Task id="rollback-staging" output={outputs.undo}>{rollback}</Task>}>
 *   <Task id="deploy-staging" output={outputs.deploy}>{deploy}</Task>
 * </Saga.Step>
 */
export function SagaStep(props: SagaStepProps): SmithersElement {
  checkProps("Saga.Step", props, ACCEPTED_PROPS.SagaStep);
  return makeElement(COMPOSE_HOST.sagaStep, props);
}

function SagaComponent(props: SagaProps): SmithersNode {
  checkProps("Saga", props, ACCEPTED_PROPS.Saga);
  return props.skipIf ? null : makeElement(COMPOSE_HOST.saga, props);
}

/**
 * Steps that run in order, each with a compensation. When a step fails for good, the
 * compensations of the steps whose action completed run one at a time in reverse order; a
 * compensation that fails stops the unwinding and fails the run with SAGA_COMPENSATION_FAILED
 * (the compensations before it in that order are not run; resuming the run, once the cause is
 * fixed, retries it and goes on).
 * @example
 * <Saga id="deploy" steps={[
 *   { id: "pr", action: <Task id="open-pr" …/>, compensation: <Task id="close-pr" …/> },
 *   { id: "staging", action: <Task id="deploy-staging" …/>, compensation: <Task id="rollback-staging" …/> },
 * ]} />
 */
export const Saga: typeof SagaComponent & { Step: typeof SagaStep } = Object.assign(SagaComponent, { Step: SagaStep });

/** Renders a section (a try block, a step's action…) as a sequence, its scope path extended by `suffix`. */
export type RenderSection = (node: SmithersNode, suffix: string) => PlanGroup;
/** The host elements a node flattens to (components called, fragments and arrays opened). */
export type HostsOf = (node: SmithersNode) => SmithersElement[];

const invalid = (where: string, message: string, details: Record<string, unknown> = {}) =>
  new SmithersError("INVALID_WORKFLOW", `${where} ${message}`, details);

const isAbsent = (value: unknown) => value === undefined || value === null || value === false;

/** The error a catch function is called with, rebuilt from what the node states hold. */
function caughtError(failure: ScopeFailure): SmithersError {
  return new SmithersError(failure.code as SmithersErrorCode, failure.message, {
    ...(failure.nodeId === undefined ? {} : { nodeId: failure.nodeId }),
    ...(failure.iteration === undefined ? {} : { iteration: failure.iteration }),
  });
}

function catchErrorsOf(where: string, value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((c) => typeof c !== "string" || c === "")) {
    throw invalid(where, "catchErrors must be an array of error codes (strings)", { prop: "catchErrors" });
  }
  return [...(value as string[])];
}

export function renderTry(props: TryCatchFinallyProps, path: string, section: RenderSection): PlanTry {
  const id = typeof props.id === "string" && props.id !== "" ? props.id : `try${path}`;
  const where = `<TryCatchFinally id="${id}">`;
  if (isAbsent(props.try) || typeof props.try !== "object") throw invalid(where, "needs try={<…/>}: the work it guards", { prop: "try" });
  const catchErrors = catchErrorsOf(where, props.catchErrors);
  const block = section(props.try, ".try");
  const catchFn = typeof props.catch === "function";
  let catchGroup: PlanGroup | undefined;
  if (typeof props.catch === "function") {
    // Called only once the block has failed with a code it catches: the render that sees the
    // failure mounts the catch, and every later render (also after a resume) mounts the same.
    const failure = renderHooks()?.failureIn(block);
    if (failure && catchesCode(catchErrors, failure.code)) catchGroup = section(props.catch(caughtError(failure)), ".catch");
  } else if (!isAbsent(props.catch)) {
    catchGroup = section(props.catch, ".catch");
  }
  const finallyGroup = isAbsent(props.finally) ? undefined : section(props.finally, ".finally");
  return { kind: "try", id, catchErrors, block, catch: catchGroup, catchFn, finally: finallyGroup };
}

const ON_FAILURE: readonly PlanSaga["onFailure"][] = ["compensate", "compensate-and-fail", "fail"];

/** The steps as written: `steps` when given (it wins over children), else the `<Saga.Step>` children. */
function stepDefs(props: SagaProps, where: string, hosts: HostsOf): SagaStepDef[] {
  if (props.steps !== undefined) {
    if (!Array.isArray(props.steps)) throw invalid(where, "steps must be an array of { id, action, compensation }", { prop: "steps" });
    return props.steps.map((step: unknown) => {
      if (typeof step !== "object" || step === null) throw invalid(where, "each step must be an object { id, action, compensation }", { prop: "steps" });
      checkProps("Saga step", step, ACCEPTED_PROPS.SagaStepDef);
      return step as SagaStepDef;
    });
  }
  return hosts(props.children).map((element) => {
    if (element.type !== COMPOSE_HOST.sagaStep) throw invalid(where, "takes only <Saga.Step> children (or steps={[…]})");
    const p = element.props as SagaStepProps;
    return { id: p.id, action: p.children, compensation: p.compensation };
  });
}

export function renderSaga(props: SagaProps, path: string, section: RenderSection, hosts: HostsOf): PlanSaga {
  const id = typeof props.id === "string" && props.id !== "" ? props.id : `saga${path}`;
  const where = `<Saga id="${id}">`;
  const onFailure = props.onFailure ?? "compensate";
  if (!ON_FAILURE.includes(onFailure)) {
    throw invalid(where, `onFailure must be "compensate", "compensate-and-fail" or "fail", got "${String(onFailure)}"`, { prop: "onFailure" });
  }
  const seen = new Set<string>();
  const steps: PlanSagaStep[] = stepDefs(props, where, hosts).map((def) => {
    if (typeof def.id !== "string" || def.id === "") throw invalid(where, "every step needs a non-empty string id");
    if (seen.has(def.id)) throw invalid(where, `has two steps with the id "${def.id}"`, { stepId: def.id });
    seen.add(def.id);
    if (isAbsent(def.action)) throw invalid(where, `step "${def.id}" needs an action`, { stepId: def.id });
    if (isAbsent(def.compensation)) throw invalid(where, `step "${def.id}" needs a compensation (what undoes its action)`, { stepId: def.id });
    const step = `.${def.id}`;
    return {
      id: def.id,
      label: typeof def.label === "string" ? def.label : undefined,
      action: section(def.action, `${step}.action`),
      compensation: section(def.compensation, `${step}.compensation`),
    };
  });
  return { kind: "saga", id, onFailure, steps };
}

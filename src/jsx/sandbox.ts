/** `<Sandbox>` and a task's `sandbox` prop: the policy a compute task's body or a CLI agent runs under in bubblewrap. */
import { SmithersError } from "../errors/index.ts";
import { makeElement, type SmithersNode } from "./element.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";

export const SANDBOX_HOST = "smithers:sandbox";

/**
 * What a sandboxed body may do. Everything not granted is denied: no network, the whole file
 * system read-only except a fresh work directory (`ctx.cwd`), no limit beyond the task's timeout.
 */
export type SandboxPolicy = {
  /** Share the host's network (loopback included); default false: a network namespace of its own, with no interface up. */
  network?: boolean;
  /** Make the run's root directory (`rootDir`, or the task's `<Worktree>`) writable; default false: read-only. */
  writableRoot?: boolean;
  /** Cap on the body's address space in bytes (RLIMIT_AS); the Bun child needs about 1 GB of it to start. */
  memoryBytes?: number;
  /** Cap on the body's CPU time in whole seconds (RLIMIT_CPU): past it the process is killed. */
  cpuSeconds?: number;
};

export type SandboxProps = SandboxPolicy & { skipIf?: boolean; children?: SmithersNode };

const POLICY_KEYS = ["network", "writableRoot", "memoryBytes", "cpuSeconds"] as const;

const unsupported = (message: string, details: Record<string, unknown>) => new SmithersError("SANDBOX_POLICY_UNSUPPORTED", message, details);

/**
 * A policy, checked: only the fields above, each of its type. A field Smithers cannot enforce is
 * refused here, before any task starts, never ignored.
 */
export function sandboxPolicy(where: string, value: unknown): SandboxPolicy {
  if (value === true) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw unsupported(`${where} sandbox must be true or a policy object`, { where });
  const raw = value as Record<string, unknown>;
  const extra = Object.keys(raw).filter((k) => !(POLICY_KEYS as readonly string[]).includes(k));
  if (extra.length > 0)
    throw unsupported(`${where} sandbox policy has fields Smithers cannot enforce: ${extra.join(", ")} (known: ${POLICY_KEYS.join(", ")})`, {
      where,
      fields: extra,
    });
  const policy: SandboxPolicy = {};
  for (const key of ["network", "writableRoot"] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (typeof v !== "boolean") throw unsupported(`${where} sandbox ${key} must be a boolean`, { where, field: key });
    policy[key] = v;
  }
  for (const key of ["memoryBytes", "cpuSeconds"] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw unsupported(`${where} sandbox ${key} must be a positive integer`, { where, field: key });
    policy[key] = v;
  }
  return policy;
}

/**
 * Its children run in sequence, each compute task's body or CLI agent in a bubblewrap sandbox with this policy
 * (a task's own `sandbox` prop wins). See docs/guides/sandbox.md for what the body can see.
 * @example
 * <Sandbox cpuSeconds={30}><Task id="parse" output={outputs.parse}>{parseUntrusted}</Task></Sandbox>
 */
export function Sandbox(props: SandboxProps): SmithersNode {
  checkProps("Sandbox", props, ACCEPTED_PROPS.Sandbox);
  return props.skipIf ? null : makeElement(SANDBOX_HOST, props);
}

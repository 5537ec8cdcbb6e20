/**
 * A network namespace joined to this one by a veth pair, for partition tests: a process started
 * with `exec(argv)` runs in the namespace and reaches this side at `hostAddress`; `cut()` sets the
 * link down (packets are dropped, connections are not reset, as in a real partition) and `heal()`
 * sets it up again. Needs root and `ip` (scripts/netns/ensure.sh installs it); `netnsUnavailable`
 * says why not otherwise. Namespaces and veths are removed by `remove()` and, at the latest, when
 * this process exits.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";

const live = new Set<string>();
let exitHookInstalled = false;
let made = 0;

function ip(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync("ip", args, { encoding: "utf8", timeout: 10_000 });
  return { ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}`.trim() };
}

function must(args: string[]): void {
  const r = ip(args);
  if (!r.ok) throw new Error(`ip ${args.join(" ")} failed: ${r.output}`);
}

/** Why this machine cannot make network namespaces (undefined when it can): not root, no `ip` and none installable. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "network namespaces need root";
  if (spawnSync("sh", ["-c", "command -v ip"]).status !== 0) {
    const ensure = spawnSync(resolve(import.meta.dir, "../../scripts/netns/ensure.sh"), { encoding: "utf8" });
    if (ensure.status !== 0) return `no \`ip\` (iproute2) and it could not be installed: ${ensure.stderr.trim().split("\n").pop()}`;
  }
  const probe = `smithers-probe-${process.pid}`;
  const added = ip(["netns", "add", probe]);
  ip(["netns", "del", probe]);
  return added.ok ? undefined : `cannot create a network namespace: ${added.output}`;
}

export type Netns = {
  name: string;
  /** This side's address on the link (where a server for the namespace listens). */
  hostAddress: string;
  /** The namespace's address on the link. */
  nsAddress: string;
  /** `argv` run inside the namespace. */
  exec(argv: string[]): string[];
  cut(): void;
  heal(): void;
  remove(): void;
};

/** Creates namespace `smithers-<tag>-<pid>` with a veth pair on 10.<a>.<b>.0/24, both ends up. */
export function createNetns(tag: string): Netns {
  // Several namespaces of one process (test files share it) each get their own subnet and names.
  const k = made++;
  const name = `smithers-${tag}-${process.pid}-${k}`;
  // Interface names are at most 15 characters.
  const hostVeth = `sv${process.pid % 100_000}${tag.slice(0, 3)}${k % 10}h`;
  const nsVeth = `sv${process.pid % 100_000}${tag.slice(0, 3)}${k % 10}n`;
  const subnet = `10.${200 + (process.pid % 50)}.${((process.pid >> 6) + k * 37) % 250}`;
  const hostAddress = `${subnet}.1`;
  const nsAddress = `${subnet}.2`;
  const remove = () => {
    if (!live.delete(name)) return;
    ip(["link", "del", hostVeth]); // takes its peer with it
    ip(["netns", "del", name]);
  };
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const n of [...live]) ip(["netns", "del", n]);
    });
  }
  live.add(name);
  try {
    must(["netns", "add", name]);
    must(["link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth]);
    must(["link", "set", nsVeth, "netns", name]);
    must(["addr", "add", `${hostAddress}/24`, "dev", hostVeth]);
    must(["link", "set", hostVeth, "up"]);
    must(["netns", "exec", name, "ip", "addr", "add", `${nsAddress}/24`, "dev", nsVeth]);
    must(["netns", "exec", name, "ip", "link", "set", nsVeth, "up"]);
    must(["netns", "exec", name, "ip", "link", "set", "lo", "up"]);
  } catch (error) {
    remove();
    throw error;
  }
  return {
    name,
    hostAddress,
    nsAddress,
    exec: (argv) => ["ip", "netns", "exec", name, ...argv],
    cut: () => must(["link", "set", hostVeth, "down"]),
    heal: () => must(["link", "set", hostVeth, "up"]),
    remove,
  };
}

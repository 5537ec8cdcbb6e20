/** Running the `smithers` CLI as a real process, for end-to-end tests. */
import { join, resolve } from "node:path";

export const root = resolve(import.meta.dir, "../..");
export const cli = join(root, "src/cli/index.ts");

/** Runs `smithers args…` to completion. */
export function smithers(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawnSync([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

/** Runs `smithers args…` in the background and resolves with its exit code and output. */
export async function smithersAsync(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** Starts `smithers up` in the background and returns once stdout has shown `marker`. */
export async function startUntil(args: string[], env: Record<string, string>, marker: string) {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    if (seen.includes(marker)) break;
  }
  return proc;
}

/**
 * One life of `smithers args…`: SIGKILLed `delayMs` after its first output unless it exits first.
 * Resolves with its exit code, null when killed; a non-zero exit throws with its stderr.
 */
export async function lifeUntilKilled(args: string[], delayMs: number, env: Record<string, string> = {}): Promise<number | null> {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  let firstOutput!: () => void;
  const started = new Promise<void>((resolve) => (firstOutput = resolve));
  const drained = (async () => {
    for await (const _chunk of proc.stdout) firstOutput();
  })();
  await Promise.race([started.then(() => Bun.sleep(delayMs)), proc.exited]);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await proc.exited;
  await drained;
  const code = proc.signalCode === "SIGKILL" ? null : proc.exitCode;
  if (code !== null && code !== 0) throw new Error(`smithers ${args[0]} exited ${code}: ${await stderr}`);
  return code;
}

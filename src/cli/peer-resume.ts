/** The peer's (smithers-orchestrator's) flag forms that `smithers up` accepts besides its own. */

/**
 * smithers-orchestrator's forms of --resume: `--resume true` (the same as `--resume`), `--resume
 * false` (not resuming), and `--resume <run-id>` (resume that run: `--resume --run-id <run-id>`).
 */
export function peerResume(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    if (arg !== "--resume" || next === undefined || next.startsWith("-") || /\.(tsx?|jsx?|mdx)$/.test(next)) {
      out.push(arg);
      continue;
    }
    i++;
    if (next === "true") out.push("--resume");
    else if (next !== "false") out.push("--resume", "--run-id", next);
  }
  return out;
}

/** The process tools: `grep` (ripgrep or grep) and `bash` (an executable, no shell), confined to the root directory. */
import { relative } from "node:path";
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { defineTool, lazySchema } from "./define-tool.ts";
import { runProcess } from "./process.ts";
import { realRoot, resolveInRoot } from "./sandbox.ts";

/** `rg` when it is on PATH (fast, skips .gitignored and hidden files), else POSIX-ish `grep -r`. */
function grepCommand(pattern: string, operand: string | undefined): [string, string[]] {
  const paths = operand === undefined ? [] : [operand];
  if (Bun.which("rg")) return ["rg", ["-n", "-H", "--no-heading", "--color", "never", "-e", pattern, "--", ...paths]];
  return ["grep", ["-rnHIE", "--color=never", "-e", pattern, "--", ...paths]];
}

const grepInput = lazySchema(() =>
  z.object({
    pattern: z.string().min(1).describe("Regular expression (extended syntax)"),
    path: z.string().min(1).optional().describe("File or directory to search, relative to the working directory; default: all of it"),
  }),
);
const bashInput = lazySchema(() =>
  z.object({
    cmd: z.string().min(1).describe("Executable name or path"),
    args: z.array(z.string()).optional(),
    opts: z.object({ cwd: z.string().min(1).optional().describe("Working directory, relative to the root") }).optional(),
  }),
);

/**
 * Searches files inside the root directory for a regular expression. Input `{ pattern, path? }`
 * (path: a file or directory, default the root); returns `path:line:text` lines with paths
 * relative to the root, or "" when nothing matches. Uses `rg -n` when ripgrep is on PATH, else
 * `grep -rnE`; runs under the same timeout and output cap as `bash`.
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { grep, read } });
 */
export const grep = defineTool({
  name: "grep",
  description: "Search files for a regular expression. Returns path:line:text lines, or an empty string when nothing matches.",
  get schema() {
    return grepInput();
  },
  async execute(args, ctx) {
    const root = realRoot(ctx.rootDir);
    const target = relative(root, resolveInRoot(ctx.rootDir, args.path ?? "."));
    const [cmd, cmdArgs] = grepCommand(args.pattern, target === "" ? undefined : target);
    const result = await runProcess(cmd, cmdArgs, {
      toolName: "grep",
      cwd: root,
      timeoutMs: ctx.timeoutMs,
      maxOutputBytes: ctx.maxOutputBytes,
      signal: ctx.signal,
    });
    if (result.exitCode === 0) return result.output;
    if (result.exitCode === 1) return "";
    throw new SmithersError("TOOL_FAILED", `grep failed: ${result.output.trim() || `exit ${result.exitCode ?? result.exitSignal}`}`, {
      exitCode: result.exitCode,
    });
  },
});

/**
 * Runs an executable with arguments, without a shell (for pipes or redirects call one
 * explicitly: `{ cmd: "sh", args: ["-c", "…"] }`). Input `{ cmd, args?, opts?: { cwd? } }`, the
 * cwd inside the root directory (default the root); returns stdout and stderr interleaved,
 * capped at `maxOutputBytes`. It runs in its own process group, killed as a whole with SIGKILL
 * at `toolTimeoutMs` (TOOL_TIMEOUT), when the attempt stops, and once the executable exits
 * (nothing it started outlives the call). A non-zero exit fails with TOOL_FAILED and the output.
 *
 * Not a security sandbox: only the working directory is checked. The command can read and
 * write anywhere its user can and reach the network; run untrusted agents in a container or VM.
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { bash } });
 */
export const bash = defineTool({
  name: "bash",
  description: "Run an executable with arguments, without a shell (use cmd: 'sh', args: ['-c', '...'] for shell syntax). Returns its output.",
  get schema() {
    return bashInput();
  },
  sideEffect: true,
  idempotent: false,
  async execute(args, ctx) {
    const cwd = resolveInRoot(ctx.rootDir, args.opts?.cwd ?? ".");
    const result = await runProcess(args.cmd, args.args ?? [], {
      toolName: "bash",
      cwd,
      timeoutMs: ctx.timeoutMs,
      maxOutputBytes: ctx.maxOutputBytes,
      signal: ctx.signal,
    });
    if (result.exitCode === 0) return result.output;
    const how = result.exitCode === null ? `was killed by ${result.exitSignal}` : `exited with ${result.exitCode}`;
    throw new SmithersError("TOOL_FAILED", `bash "${args.cmd}" ${how}:\n${result.output}`, { exitCode: result.exitCode, exitSignal: result.exitSignal });
  },
});

#!/usr/bin/env bun
/**
 * The `smithers` command. Exit codes: 0 success, 1 failed run, 2 bad usage or bad input,
 * 130 cancelled by Ctrl-C.
 *
 * Each command's module is imported when that command runs, not before: a process loads only
 * what its command needs (`up` never loads the HTTP server, `--help` no engine at all).
 */
import { exitCodeOf, SmithersError } from "../errors/index.ts";
import { COMMAND_NAMES, EXIT, type CommandName } from "./constants.ts";
import { commandFlags, suggest } from "./help.ts";
import { helpAnswer, helpOf, isCommandName } from "./help-answer.ts";
import { jsonLine, setTraceIdsProvider, wantsJsonLog } from "./log.ts";
import type { Io, StopSignals } from "./shared.ts";
import { USAGE } from "./usage.ts";

export { EXIT };
export { peerResume } from "./peer-resume.ts";
export type { StopSignals } from "./shared.ts";

/** The usage line of `command` (the whole synopsis when the command is unknown). */
function usageLine(command: string | undefined): string {
  const lines = USAGE.split("\n").filter((l) => /^(Usage:)?\s*smithers /.test(l));
  return (
    lines.find((l) =>
      l
        .replace(/^Usage:/, "")
        .trim()
        .startsWith(`smithers ${command} `),
    ) ?? lines.join("\n")
  );
}

type Command = (args: string[], io: Io, signals: StopSignals) => Promise<number>;

/** A command whose module is imported when it first runs. */
const lazy =
  <M>(load: () => Promise<M>, command: (module: M) => Command) =>
  async (): Promise<Command> =>
    command(await load());

/**
 * `load`, after zod: for a command whose module imports zod. In the bundle the core `require`s
 * zod, an ES module, and Bun then loads its files one after another on this thread; a dynamic
 * import loads the same module (the one the workflow file imports too) with its files read and
 * transpiled in parallel, some 3 ms sooner, and the `require` then finds it loaded.
 */
const zodFirst =
  <M>(load: () => Promise<M>) =>
  (): Promise<M> =>
    import("zod").then(load);

/** fork, replay and rewind execute with up --resume (fork --run, replay, rewind --resume). */
const withUp = zodFirst(() => Promise.all([import("./time-travel.ts"), import("./up.ts")]));

const COMMANDS: Record<CommandName, () => Promise<Command>> = {
  up: lazy(
    zodFirst(() => import("./up.ts")),
    (m) => m.upCommand,
  ),
  supervise: lazy(
    () => import("./supervise.ts"),
    (m) => (args, io, signals) => m.superviseCommand(args, io, signals.cancel),
  ),
  frames: lazy(
    zodFirst(() => import("./frames.ts")),
    (m) => m.framesCommand,
  ),
  scores: lazy(
    () => import("./scores.ts"),
    (m) => (args, io) => m.scoresCommand(args, io),
  ),
  timeline: lazy(
    zodFirst(() => import("./timeline.ts")),
    (m) => (args, io) => m.timelineCommand(args, io),
  ),
  diff: lazy(
    zodFirst(() => import("./timeline.ts")),
    (m) => (args, io) => m.diffCommand(args, io),
  ),
  fork: lazy(
    withUp,
    ([t, u]) =>
      (args, io, signals) =>
        t.forkCommand(args, io, u.resumeWith(io, signals)),
  ),
  replay: lazy(
    withUp,
    ([t, u]) =>
      (args, io, signals) =>
        t.forkCommand(args, io, u.resumeWith(io, signals), true),
  ),
  rewind: lazy(
    withUp,
    ([t, u]) =>
      (args, io, signals) =>
        t.rewindCommand(args, io, u.resumeWith(io, signals)),
  ),
  inspect: lazy(
    () => import("./inspect.ts"),
    (m) => m.inspectCommand,
  ),
  eval: lazy(
    () => import("./eval.ts"),
    (m) => m.evalCommand,
  ),
  approve: lazy(
    () => import("./approve.ts"),
    (m) => (args, io) => m.decideCommand("approve", args, io),
  ),
  deny: lazy(
    () => import("./approve.ts"),
    (m) => (args, io) => m.decideCommand("deny", args, io),
  ),
  cron: lazy(
    zodFirst(() => import("./cron.ts")),
    (m) => (args, io) => m.cronCommand(args, io),
  ),
  signal: lazy(
    () => import("./signal.ts"),
    (m) => (args, io) => m.signalCommand(args, io),
  ),
  human: lazy(
    () => import("./human.ts"),
    (m) => (args, io) => m.humanCommand(args, io),
  ),
  serve: lazy(
    zodFirst(() => import("./serve.ts")),
    (m) => (args, io, signals) => m.serveCommand(args, io, signals.cancel),
  ),
  worker: lazy(
    () => import("./worker.ts"),
    (m) => m.workerCommand,
  ),
  prune: lazy(
    zodFirst(() => import("./prune.ts")),
    (m) => (args, io) => m.pruneCommand(args, io),
  ),
  ps: lazy(
    () => import("./ps.ts"),
    (m) => (args, io) => m.psCommand(args, io),
  ),
  sandboxes: lazy(
    () => import("./sandboxes.ts"),
    (m) => (args, io) => m.sandboxesCommand(args, io),
  ),
  limits: lazy(
    () => import("./limits.ts"),
    (m) => (args, io) => m.limitsCommand(args, io),
  ),
  events: lazy(
    () => import("./events.ts"),
    (m) => (args, io, signals) => m.eventsCommand(args, io, signals.cancel),
  ),
  cancel: lazy(
    () => import("./cancel.ts"),
    (m) => (args, io, signals) => m.cancelCommand(args, io, signals.cancel),
  ),
  init: lazy(
    () => import("./init.ts"),
    (m) => (args, io) => m.initCommand(args, io),
  ),
  test: lazy(
    () => import("./init.ts"),
    (m) => (args) => m.testCommand(args),
  ),
};

/** An unknown option of `command` (parseArgs' ERR_PARSE_ARGS_UNKNOWN_OPTION), with the closest known one. */
function unknownOption(command: string, error: Error): string {
  const flag = /'(-[^']*)'/.exec(error.message)?.[1];
  const known = commandFlags(helpOf(command));
  const close = flag === undefined ? undefined : suggest(flag.split("=")[0]!, [...known, "--help"]);
  return `smithers: USAGE: unknown option ${flag ?? ""} for ${command}${close ? `; did you mean ${close}?` : ""} (see smithers ${command} --help)`;
}

/** Runs the CLI with `argv` (without the runtime and script) and returns the exit code. */
export async function main(
  argv: string[],
  io: Io = { out: console.log, err: console.error },
  signal: AbortSignal | StopSignals = new AbortController().signal,
): Promise<number> {
  const signals: StopSignals = signal instanceof AbortSignal ? { cancel: signal } : signal;
  const [command, ...rest] = argv;
  try {
    const help = helpAnswer(argv);
    if (help) {
      io.out(help.text);
      return help.code;
    }
    const named = command === "help" ? rest[0]! : command!;
    if (!isCommandName(named)) {
      const close = suggest(named, COMMAND_NAMES);
      io.err(`smithers: USAGE: unknown command "${named}"${close ? `; did you mean ${close}?` : ""} (smithers --help lists them)`);
      return EXIT.usage;
    }
    const run = await COMMANDS[named]();
    return await run(rest, io, signals);
  } catch (error) {
    // A long-running command asked for JSON lines: its last line, the error, is one too.
    if (wantsJsonLog(command, rest)) {
      const code = error instanceof SmithersError ? error.code : (error as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS") ? "USAGE" : undefined;
      const message = code === "USAGE" || error instanceof SmithersError ? (error as Error).message : ((error as Error)?.stack ?? String(error));
      io.err(jsonLine("error", message, { code, ...(code === "USAGE" ? { usage: usageLine(command).trim() } : {}) }));
      return error instanceof SmithersError ? exitCodeOf(error.code) : code === "USAGE" ? EXIT.usage : EXIT.failed;
    }
    if (error instanceof SmithersError) {
      io.err(`smithers: ${error.code}: ${error.message}`);
      if (error.code === "USAGE") io.err(usageLine(command));
      return exitCodeOf(error.code);
    }
    if ((error as { code?: string })?.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && command !== undefined) {
      io.err(unknownOption(command, error as Error));
      return EXIT.usage;
    }
    if ((error as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`smithers: USAGE: ${(error as Error).message}`);
      return EXIT.usage;
    }
    io.err(`smithers: ${(error as Error)?.stack ?? String(error)}`);
    return EXIT.failed;
  }
}

/**
 * Whether stdout is a terminal, asked of Bun's tty binding: reading process.stdout.isTTY first
 * builds the process.stdout stream, ~15 ms of start-up that a run printing through console.log
 * never needs. Where the binding is missing, the stream answers.
 */
function stdoutIsTty(): boolean {
  try {
    return Boolean((process.binding("tty_wrap") as { isTTY(fd: number): boolean }).isTTY(1));
  } catch {
    return Boolean(process.stdout.isTTY);
  }
}

/** Commands that run or wait for runs: a first Ctrl-C or SIGTERM lets them finish what is in flight. */
const STOPS_GRACEFULLY = new Set(["up", "supervise", "fork", "replay", "rewind", "serve", "worker", "events", "cancel", "eval"]);

/** The long-running commands that export spans when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set. */
const TRACED_COMMANDS = new Set(["up", "worker", "serve", "supervise"]);

/** Runs the command line of this process (`process.argv`) and exits with its code: what the `smithers` bin does. */
export async function runCommandLine(): Promise<never> {
  // First Ctrl-C cancels: running tasks get their grace period to stop. Second: bodies still
  // running are recorded abandoned at once and the run ends. Third: exit without waiting.
  const cancel = new AbortController();
  const abandon = new AbortController();
  // What Ctrl-C or SIGTERM does, on stderr: a JSON line (level warn) when the command logs JSON.
  const json = wantsJsonLog(process.argv[2], process.argv.slice(3));
  const stopLine = (text: string) => console.error(json ? jsonLine("warn", text.replace(/^smithers( worker)?: /, "")) : text);
  // The engine's own warnings (a column changed on disk, say) are JSON lines too when the command logs JSON.
  if (json) {
    const { format } = await import("node:util");
    console.warn = (...args: unknown[]) => console.error(jsonLine("warn", format(...args).replace(/^smithers: /, "")));
  }
  const onStop = () => {
    // A command that neither runs nor waits for runs has nothing to finish: it exits at once,
    // even while it waits on a database another process holds locked.
    if (!STOPS_GRACEFULLY.has(process.argv[2] ?? "") || (process.argv[2] === "up" && process.argv.includes("--detach"))) process.exit(EXIT.cancelled);
    if (!cancel.signal.aborted) {
      stopLine(
        process.argv[2] === "worker"
          ? "smithers worker: taking no more runs; finishing the runs in flight (Ctrl-C again to exit now)"
          : "smithers: cancelling; waiting for running tasks to stop (Ctrl-C again to stop waiting)",
      );
      cancel.abort();
    } else if (!abandon.signal.aborted) {
      stopLine(
        process.argv[2] === "worker"
          ? "smithers worker: exiting now; other workers take its runs over once the lease runs out"
          : "smithers: not waiting any longer: task bodies still running are recorded abandoned (Ctrl-C again to exit at once)",
      );
      abandon.abort();
    } else process.exit(EXIT.cancelled);
  };
  process.on("SIGINT", onStop);
  process.on("SIGTERM", onStop);
  const io: Io = { out: console.log, err: console.error, ...(stdoutIsTty() ? { tty: (text: string) => process.stdout.write(text) } : {}) };
  // Spans leave over OTLP only when an endpoint is set: otherwise the SDK (and the engine, for a command that does not need it) is never loaded.
  const env = process.env;
  let tracing: Awaited<ReturnType<typeof import("../engine/index.ts").startTracingFromEnv>>;
  if (TRACED_COMMANDS.has(process.argv[2] ?? "") && (env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) {
    const engine = await import("../engine/index.ts");
    tracing = await engine.startTracingFromEnv(env, (line) => console.error(json ? jsonLine("warn", line.replace(/^smithers: /, "")) : line));
    // JSON log lines about a run carry the trace and span they belong to.
    if (tracing) setTraceIdsProvider(engine.spanIdsOf);
  }
  const code = await main(process.argv.slice(2), io, { cancel: cancel.signal, abandon: abandon.signal });
  await tracing?.shutdown(); // bounded: a collector that is down or slow costs the exit at most FLUSH_BOUND_MS
  // Everything is persisted by now; a task body still sleeping after a cancel must not keep the process alive.
  process.exit(code);
}

if (import.meta.main) void runCommandLine();

/**
 * What `smithers`, `smithers --help`, `smithers help [command]` and `smithers <command> --help`
 * print, decided from the arguments alone: no command's module (nor the engine) is needed for it.
 * The bundle's command entry asks this first and loads the core only when it has no answer
 * (scripts/build-bundle.ts); main() asks it too, so both give the same answer.
 */
import { COMMAND_NAMES, EXIT, type CommandName } from "./constants.ts";
import { commandHelp } from "./help.ts";
import { USAGE } from "./usage.ts";

export const isCommandName = (word: string): word is CommandName => (COMMAND_NAMES as readonly string[]).includes(word);

/** The help `smithers <command> --help` prints (deny shares approve's description). */
export function helpOf(command: string): string {
  const help = commandHelp(USAGE, command) ?? USAGE;
  if (command !== "deny") return help;
  return `${help}\n\n${(commandHelp(USAGE, "approve") ?? "").split("\n\n")[1] ?? ""}`.trimEnd();
}

/**
 * The text to print and the exit code when `argv` (without the runtime and script) asks for help:
 * nothing (the whole usage, exit 2), `--help`, `-h` or a bare `help` (the usage, exit 0), `help
 * <command>` or `<command> … --help` before a lone `--` (that command's part, exit 0). Undefined
 * otherwise, and for an unknown command, which main() reports.
 */
export function helpAnswer(argv: readonly string[]): { text: string; code: number } | undefined {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || (command === "help" && rest.length === 0)) {
    return { text: USAGE, code: command === undefined ? EXIT.usage : EXIT.ok };
  }
  const named = command === "help" ? rest[0]! : command;
  if (!isCommandName(named)) return undefined;
  const beforeDashes = rest.indexOf("--") === -1 ? rest : rest.slice(0, rest.indexOf("--"));
  if (command === "help" || beforeDashes.includes("--help") || beforeDashes.includes("-h")) return { text: helpOf(named), code: EXIT.ok };
  return undefined;
}

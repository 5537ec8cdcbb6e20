/**
 * The command line's option parser: node:util's `parseArgs` in the strict form the commands use
 * (string and boolean options, `short`, `multiple`, `allowPositionals`), with its results, its
 * errors' codes (ERR_PARSE_ARGS_*) and their messages. Loading node:util for it cost every
 * command ~2 ms of its start (Bun's node:util loads its inspect and more); this is the same
 * algorithm on its own (test/cli/parse-args.test.ts holds both to the same answers).
 */
import type { parseArgs as nodeParseArgs, ParseArgsConfig } from "node:util";

type OptionConfig = { type: "string" | "boolean"; short?: string; multiple?: boolean };
/** What the commands pass: strict parsing of `args`, no defaults, no tokens, no negated booleans. */
type Config = ParseArgsConfig & {
  args: string[];
  options: Record<string, OptionConfig>;
  strict?: true;
  tokens?: false;
  allowNegative?: false;
};
/**
 * An option as Bun's parseArgs reads it: `shown` is what its errors call it (the argument, or the
 * letter alone inside a group such as -df), `raw` the argument it came from.
 */
type Token = { kind: "option"; name: string; shown: string; raw: string; value: string | undefined; inline: boolean } | { kind: "positional"; value: string };

/** A TypeError with node's code, as node:util's parseArgs throws. */
function parseError(code: string, message: string): TypeError {
  return Object.assign(new TypeError(message), { code });
}

/** The long name of a short option (the letter itself when no option has it). */
function longOf(letter: string, options: Record<string, OptionConfig>): string {
  for (const [name, option] of Object.entries(options)) if (option.short === letter) return name;
  return letter;
}

const takesValue = (name: string, options: Record<string, OptionConfig>) => Object.hasOwn(options, name) && options[name]!.type === "string";

/** The arguments as options and positionals, in order (Bun's tokenizer: node's, with a group's letters shown alone). */
function* tokens(args: readonly string[], options: Record<string, OptionConfig>): Generator<Token> {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = i + 1 < args.length ? args[i + 1] : undefined;
    if (arg === "--") {
      for (const value of args.slice(i + 1)) yield { kind: "positional", value };
      return;
    }
    if (arg.length >= 2 && arg[0] === "-" && arg[1] !== "-") {
      const name = longOf(arg[1]!, options);
      if (arg.length === 2) {
        // -f, and its value from the next argument when it takes one
        const value = takesValue(name, options) ? next : undefined;
        if (value !== undefined) i++;
        yield { kind: "option", name, shown: arg, raw: arg, value, inline: value === undefined };
      } else if (takesValue(name, options)) {
        // -fVALUE
        yield { kind: "option", name, shown: arg.slice(0, 2), raw: arg.slice(0, 2), value: arg.slice(2), inline: true };
      } else {
        // -abc: -a -b -c; a letter taking a value takes the rest (-abfVALUE), or the next argument when last
        for (let at = 1; at < arg.length; at++) {
          const letter = arg[at]!;
          const long = longOf(letter, options);
          if (takesValue(long, options) && at < arg.length - 1) {
            yield { kind: "option", name: long, shown: letter, raw: arg, value: arg.slice(at + 1), inline: true };
            break;
          }
          const value = takesValue(long, options) ? next : undefined;
          if (value !== undefined) i++;
          yield { kind: "option", name: long, shown: letter, raw: arg, value, inline: value === undefined };
        }
      }
      continue;
    }
    if (arg.length > 2 && arg.startsWith("--")) {
      const equals = arg.indexOf("=");
      if (equals < 3) {
        // --name, and its value from the next argument when it takes one
        const name = arg.slice(2);
        const value = takesValue(name, options) ? next : undefined;
        if (value !== undefined) i++;
        yield { kind: "option", name, shown: arg, raw: arg, value, inline: value === undefined };
      } else {
        yield { kind: "option", name: arg.slice(2, equals), shown: arg.slice(0, equals), raw: arg, value: arg.slice(equals + 1), inline: true };
      }
      continue;
    }
    yield { kind: "positional", value: arg };
  }
}

/** node:util's parseArgs for the command line's options: the same values, positionals and errors. */
export function parseArgs<T extends Config>(config: T): ReturnType<typeof nodeParseArgs<T>> {
  const { args, options, allowPositionals = false } = config;
  if ((config.strict as boolean | undefined) === false || config.tokens || config.allowNegative)
    throw new TypeError("parseArgs (src/cli/parse-args.ts) parses strictly, without tokens or negated options");
  const values: Record<string, string | boolean | (string | boolean)[]> = Object.create(null);
  const positionals: string[] = [];
  for (const token of tokens(args, options)) {
    if (token.kind === "positional") {
      if (!allowPositionals)
        throw parseError("ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL", `Unexpected argument '${token.value}'. This command does not take positional arguments`);
      positionals.push(token.value);
      continue;
    }
    const { name, shown, value } = token;
    if (!Object.hasOwn(options, name)) {
      const dashDash = allowPositionals
        ? `. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- "${shown}"`
        : "";
      throw parseError("ERR_PARSE_ARGS_UNKNOWN_OPTION", `Unknown option '${shown}'${dashDash}`);
    }
    const option = options[name]!;
    const shortAndLong = `${option.short ? `-${option.short}, ` : ""}--${name}`;
    if (option.type === "string" && value === undefined)
      throw parseError("ERR_PARSE_ARGS_INVALID_OPTION_VALUE", `Option '${shortAndLong} <value>' argument missing`);
    if (option.type === "boolean" && value !== undefined)
      throw parseError("ERR_PARSE_ARGS_INVALID_OPTION_VALUE", `Option '${shortAndLong}' does not take an argument`);
    if (!token.inline && value !== undefined && value.length > 1 && value[0] === "-") {
      const example = token.raw.startsWith("--") ? `'${shown}=-XYZ'` : `'--${name}=-XYZ' or '${shown}-XYZ'`;
      throw parseError(
        "ERR_PARSE_ARGS_INVALID_OPTION_VALUE",
        `Option '${shown}' argument is ambiguous.\nDid you forget to specify the option argument for '${shown}'?\nTo specify an option argument starting with a dash use ${example}.`,
      );
    }
    if (name === "__proto__") continue;
    const stored = value ?? true;
    if (option.multiple) {
      const list = values[name];
      if (Array.isArray(list)) list.push(stored);
      else values[name] = [stored];
    } else values[name] = stored;
  }
  return { values, positionals } as ReturnType<typeof nodeParseArgs<T>>;
}

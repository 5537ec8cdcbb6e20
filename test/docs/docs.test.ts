/**
 * The docs stay true to the code: the error page is the generated one, every error code the docs
 * name exists, every CLI flag docs/reference/cli.md lists is one the command takes (and every flag
 * it takes is listed), and every relative link leads to a file and heading that exist.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { renderErrorsPage } from "../../scripts/docs-errors.ts";
import { main } from "../../src/cli/index.ts";
import { ERROR_TABLE } from "../../src/errors/index.ts";
import { ACCEPTED_PROPS } from "../../src/jsx/props.ts";

const ROOT = resolve(import.meta.dir, "../..");
const CODES = new Set(Object.keys(ERROR_TABLE));

/**
 * UPPER_SNAKE names in the docs that are not error codes. Anything else in backticks that looks
 * like a code (capitals with an underscore) must be one, so a renamed or removed code is caught.
 */
const NOT_CODES = new Set(["SAFE_JSON_LIMITS", "CODE"]); // CODE: the placeholder in `smithers: CODE: message`
/** Environment variables: Smithers' own, and the agent CLIs' and providers' (which the agent guide names). */
const isEnvVar = (name: string) =>
  name === "PATH" || /^(?:SMITHERS|ANTHROPIC|CLAUDE|CODEX|OPENAI|GEMINI|GOOGLE|OPENCODE|DISABLE|XDG|OTEL)_/.test(name) || name === "IS_SANDBOX";

/** README.md, CONTRIBUTING.md and every Markdown file under docs/. */
function markdownFiles(): string[] {
  const files = [join(ROOT, "README.md"), join(ROOT, "CONTRIBUTING.md")];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".md")) files.push(path);
    }
  };
  walk(join(ROOT, "docs"));
  return files;
}

const FILES = markdownFiles();
const read = (path: string) => readFileSync(path, "utf8");
const rel = (path: string) => relative(ROOT, path);

/** The text inside backticks: inline spans and fenced blocks. */
function codeTexts(markdown: string): string[] {
  const texts: string[] = [];
  const fences = /^```[^\n]*\n([\s\S]*?)^```/gm;
  for (const m of markdown.matchAll(fences)) texts.push(m[1]!);
  const prose = markdown.replace(fences, "");
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) texts.push(m[1]!);
  return texts;
}

/** Words that look like error codes: capitals and digits with at least one underscore. */
function codeLikeNames(markdown: string): string[] {
  const names: string[] = [];
  for (const text of codeTexts(markdown)) {
    for (const m of text.matchAll(/(?<![A-Za-z0-9_$.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])/g)) names.push(m[0]);
    // `smithers: CODE: …` names a code even without an underscore (USAGE, FORBIDDEN).
    for (const m of text.matchAll(/smithers: ([A-Z][A-Z_]*):/g)) names.push(m[1]!);
  }
  return names.filter((name) => !NOT_CODES.has(name) && !isEnvVar(name));
}

describe("docs/reference/errors.md", () => {
  test("is what scripts/docs-errors.ts generates from the error table", () => {
    expect(read(join(ROOT, "docs/reference/errors.md"))).toBe(renderErrorsPage());
  });

  test("lists every code of the error table", () => {
    const page = read(join(ROOT, "docs/reference/errors.md"));
    const missing = [...CODES].filter((code) => !page.includes(`\`${code}\``));
    expect(missing).toEqual([]);
  });
});

describe("error codes in the docs", () => {
  test("every code the README and docs/ name exists in the error table", () => {
    const unknown: string[] = [];
    for (const file of FILES) for (const name of codeLikeNames(read(file))) if (!CODES.has(name)) unknown.push(`${rel(file)}: ${name}`);
    expect([...new Set(unknown)]).toEqual([]);
  });

  test("the rule finds codes in spans, in code blocks and after `smithers:`", () => {
    const names = codeLikeNames("a `RUN_NOT_FOUND` b `404 FRAME_NOT_FOUND`\n```sh\nsmithers: USAGE: bad\n```\n`SMITHERS_DB_PATH` `NodeFinished`");
    expect(names).toEqual(["USAGE", "RUN_NOT_FOUND", "FRAME_NOT_FOUND"]);
  });
});

/** What `smithers <command> --help` prints. */
async function helpOf(command: string): Promise<string> {
  const out: string[] = [];
  const code = await main(command === "" ? ["--help"] : [command, "--help"], { out: (l) => out.push(l), err: (l) => out.push(l) });
  if (code !== 0) throw new Error(`smithers ${command} --help exited ${code}`);
  return out.join("\n");
}

/** The flags a command takes: those of its usage lines and of its option lines. */
function flagsTaken(help: string): Set<string> {
  const flags = new Set<string>();
  for (const line of help.split("\n")) {
    if (/^(Usage:)?\s*smithers /.test(line) || /^ {2}--/.test(line)) {
      const part = /^ {2}--/.test(line) ? line.split(/ {2,}/)[1]! : line;
      for (const m of part.matchAll(/--[a-z][a-z0-9-]*/g)) flags.add(m[0]);
    }
  }
  flags.delete("--help");
  return flags;
}

/** Every --word of the help, descriptions included (aliases such as --accept-workflow-change). */
function flagsMentioned(help: string): Set<string> {
  return new Set([...help.matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]));
}

/** docs/reference/cli.md's sections: `## smithers <command>` → the flags in its option table's first column. */
function documentedFlags(markdown: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of markdown.split("\n")) {
    const heading = /^## `smithers ([a-z]+)`/.exec(line);
    if (heading) {
      current = [];
      sections.set(heading[1]!, current);
      continue;
    }
    if (line.startsWith("## ")) current = undefined;
    const cell = /^\| *([^|]*)\|/.exec(line)?.[1];
    if (current && cell?.trim().startsWith("`--")) for (const m of cell.matchAll(/--[a-z][a-z0-9-]*/g)) current.push(m[0]);
  }
  return sections;
}

// The commands the usage names, and each one's help, read before the tests are declared (one per command).
const commands = [...new Set([...(await helpOf("")).matchAll(/^(?:Usage:)?\s*smithers ([a-z]+)/gm)].map((m) => m[1]!))];
const helps = new Map(await Promise.all(commands.map(async (c) => [c, await helpOf(c)] as const)));

describe("docs/reference/cli.md", () => {
  const sections = documentedFlags(read(join(ROOT, "docs/reference/cli.md")));

  test("has a section for every command", () => {
    expect(commands.filter((c) => !sections.has(c))).toEqual([]);
    expect([...sections.keys()].filter((c) => !commands.includes(c))).toEqual([]);
  });

  for (const command of commands) {
    test(`lists exactly the flags \`smithers ${command} --help\` shows`, () => {
      const help = helps.get(command)!;
      const documented = new Set(sections.get(command) ?? []);
      expect({ command, undocumented: [...flagsTaken(help)].filter((f) => !documented.has(f)) }).toEqual({ command, undocumented: [] });
      const mentioned = flagsMentioned(help);
      expect({ command, unknown: [...documented].filter((f) => !mentioned.has(f)) }).toEqual({ command, unknown: [] });
    });
  }

  test("every `smithers <command> --flag` example in the README and docs/ uses a flag that command takes", () => {
    const wrong: string[] = [];
    for (const file of FILES) {
      for (const text of codeTexts(read(file))) {
        for (const line of text.split("\n")) {
          const m = /(?:^|[\s(`$])smithers ([a-z]+)\b(.*)$/.exec(line);
          if (!m || !helps.has(m[1]!)) continue;
          // Stop at a comment, a pipe or a second command on the line.
          const args = m[2]!.split(/ #|\||&&|;/)[0]!;
          const known = flagsMentioned(helps.get(m[1]!)!);
          for (const flag of args.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g))
            if (!known.has(flag[0]) && flag[0] !== "--help") wrong.push(`${rel(file)}: smithers ${m[1]} ${flag[0]}`);
        }
      }
    }
    expect([...new Set(wrong)]).toEqual([]);
  });
});

describe("docs/reference/components.md", () => {
  const page = read(join(ROOT, "docs/reference/components.md"));
  /** The table row of a component (`| `<Name>` …`), or for Task its own table's first column. */
  const documented = (component: string): string => {
    if (component === "Task") return page.slice(page.indexOf("`<Task>` props"), page.indexOf("## Waits"));
    const label = component === "SagaStep" ? "Saga.Step" : component;
    return page.split("\n").find((line) => line.startsWith(`| \`<${label}>\``)) ?? "";
  };

  for (const [component, props] of Object.entries(ACCEPTED_PROPS)) {
    // The entries of <Saga steps> and <EscalationChain levels>, spelled out in those rows.
    if (component === "SagaStepDef" || component === "EscalationLevel") continue;
    test(`lists every prop <${component}> takes`, () => {
      const text = documented(component);
      const missing = [...props].filter((prop) => prop !== "children" && !text.includes(`\`${prop}\``));
      expect({ component, missing }).toEqual({ component, missing: [] });
    });
  }
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, "");
  for (const m of withoutFences.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

describe("links", () => {
  test("anchors follow GitHub's rule", () => {
    expect([...anchorsOf("# Waits: `<Timer>` and more\n## Set-up\n## Set-up\n")]).toEqual(["waits-timer-and-more", "set-up", "set-up-1"]);
  });

  test("every relative link in the README and docs/ leads to a file, and to a heading there", () => {
    const broken: string[] = [];
    for (const file of FILES) {
      const text = read(file).replace(/^```[^\n]*\n[\s\S]*?^```/gm, "");
      for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split("#") as [string, string | undefined];
        const to = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(to)) {
          broken.push(`${rel(file)}: ${target} (no such file)`);
          continue;
        }
        if (anchor && to.endsWith(".md") && !anchorsOf(read(to)).has(anchor)) broken.push(`${rel(file)}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

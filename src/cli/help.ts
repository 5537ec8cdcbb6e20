/**
 * Per-command help and "did you mean" suggestions, both read from the one USAGE text: a
 * command's synopsis lines (`smithers <command> …`) and its description block (the lines from
 * `<command>  …` up to the next unindented one). Its flags are the `--flag` words in them.
 */

/** `command`'s part of `usage`: its synopsis lines, a blank line, its description; null for a command `usage` does not describe. */
export function commandHelp(usage: string, command: string): string | null {
  const lines = usage.split("\n");
  const synopsis = lines.filter(
    (l) =>
      l
        .replace(/^Usage:/, "")
        .trim()
        .startsWith(`smithers ${command} `) || l.trim() === `smithers ${command}`,
  );
  const start = lines.findIndex((l) => l.startsWith(`${command} `) && !l.startsWith(`${command} <`));
  const block: string[] = [];
  if (start >= 0) {
    block.push(lines[start]!);
    for (const l of lines.slice(start + 1)) {
      if (!/^\s/.test(l) || l.trim() === "") break;
      block.push(l);
    }
  }
  if (synopsis.length === 0 && block.length === 0) return null;
  const usageLines = synopsis.map((l, i) => (i === 0 ? `Usage: ${l.replace(/^Usage:/, "").trim()}` : `       ${l.trim()}`));
  return [...usageLines, ...(block.length > 0 ? ["", ...block] : [])].join("\n");
}

/** The `--flags` a command's help mentions, once each. */
export function commandFlags(help: string): string[] {
  return [...new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? [])];
}

/** Levenshtein distance between two short strings. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The candidate closest to `word`, when it is close enough to be a likely typo (or `word` is its prefix). */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(word) && word.length >= 2 ? 1 : editDistance(word, candidate);
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(best.candidate.length / 3)) ? best.candidate : undefined;
}

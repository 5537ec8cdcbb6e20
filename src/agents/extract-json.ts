import { SmithersError } from "../errors/index.ts";

const PREVIEW_CHARS = 200;
// Bounds the balanced-span search on pathological replies (thousands of unclosed brackets).
const MAX_SCAN_STEPS = 5_000_000;
const FENCE = /```([^\n`]*)\n([\s\S]*?)```/g;

type Parsed = { ok: true; value: unknown } | { ok: false };

function tryParse(text: string): Parsed {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false };
  try {
    return { ok: true, value: JSON.parse(trimmed) };
  } catch {
    return { ok: false };
  }
}

function fromFences(text: string): Parsed {
  const tagged: string[] = [];
  const all: string[] = [];
  for (const match of text.matchAll(FENCE)) {
    const info = (match[1] ?? "").trim().toLowerCase();
    const body = match[2] ?? "";
    all.push(body);
    if (info.startsWith("json")) tagged.push(body);
  }
  for (const bodies of [tagged, all]) {
    for (let i = bodies.length - 1; i >= 0; i--) {
      const parsed = tryParse(bodies[i] ?? "");
      if (parsed.ok) return parsed;
    }
  }
  return { ok: false };
}

/** Index of the bracket closing the one at `start`, skipping brackets inside JSON strings; -1 if none. */
function matchingClose(text: string, start: number, budget: { steps: number }): number {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    if (--budget.steps < 0) return -1;
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === "{") stack.push("}");
    else if (ch === "[") stack.push("]");
    else if (ch === "}" || ch === "]") {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

/**
 * Outermost balanced {...} / [...] spans that parse. The longest one wins (ties: the later one)
 * because prose around a reply often carries small bracketed bits such as "[1]" citations.
 */
function fromSpans(text: string): Parsed {
  const budget = { steps: MAX_SCAN_STEPS };
  let best: { value: unknown; length: number } | undefined;
  let i = 0;
  while (i < text.length && budget.steps > 0) {
    const ch = text[i];
    if (ch !== "{" && ch !== "[") {
      i++;
      continue;
    }
    const end = matchingClose(text, i, budget);
    const parsed = end === -1 ? undefined : tryParse(text.slice(i, end + 1));
    if (parsed?.ok) {
      const length = end - i + 1;
      if (!best || length >= best.length) best = { value: parsed.value, length };
      i = end + 1;
    } else {
      i++;
    }
  }
  return best ? { ok: true, value: best.value } : { ok: false };
}

/**
 * Pulls a JSON value out of a model reply: the whole text if it parses; else the last ```json
 * fenced block (then any fenced block) that parses; else the outermost balanced {...} or [...]
 * span that parses. Throws SmithersError `AGENT_REPLY_NOT_JSON` when nothing parses.
 *
 * @example
 * extractJson('Here you go:\n```json\n{"ok": true}\n```'); // { ok: true }
 */
export function extractJson(text: string): unknown {
  for (const attempt of [tryParse, fromFences, fromSpans]) {
    const parsed = attempt(text);
    if (parsed.ok) return parsed.value;
  }
  const preview = text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
  throw new SmithersError("AGENT_REPLY_NOT_JSON", `Agent reply contains no parseable JSON: ${JSON.stringify(preview)}`, { preview, length: text.length });
}

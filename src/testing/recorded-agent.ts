/**
 * Recorded agents: recordAgent wraps a real agent and writes each of its replies to a transcript
 * (a JSON file); replayAgent answers from that transcript later, without the real agent. A replay
 * that runs out, or is asked a prompt the transcript does not hold, fails with REPLAY_EXHAUSTED or
 * REPLAY_MISMATCH (never retried: it would answer the same again), so a changed prompt is seen.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Agent, AgentGenerateArgs, AgentReply } from "../agents/index.ts";
import { SMITHERS_ERROR_CODES, SmithersError, type SmithersErrorCode } from "../errors/index.ts";

/** One call: its prompt, and the reply it got or the error it failed with. */
export type TranscriptEntry = {
  prompt: string;
  reply?: { text: string; output?: unknown; usage?: unknown };
  error?: { message: string; code?: string };
};

/** What a transcript file holds. */
export type Transcript = { version: 1; agentId?: string; entries: TranscriptEntry[] };

export interface RecordingAgent extends Agent {
  /** The calls recorded so far (also in the file, rewritten after each one). */
  readonly transcript: Transcript;
  generate(args: AgentGenerateArgs): Promise<AgentReply>;
}

export interface ReplayAgent extends Agent {
  /** The calls the replay answered, in order. */
  readonly calls: AgentGenerateArgs[];
  generate(args: AgentGenerateArgs): Promise<AgentReply>;
}

export type ReplayOptions = {
  id?: string;
  /**
   * How a call finds its entry: `prompt` (default) takes the first unused entry recorded with the
   * same prompt, so tasks running in parallel may call in any order; `order` takes the next entry
   * whatever its prompt.
   */
  match?: "prompt" | "order";
};

const PROMPT_SHOWN = 120;
const shown = (prompt: string) => JSON.stringify(prompt.length > PROMPT_SHOWN ? `${prompt.slice(0, PROMPT_SHOWN)}…` : prompt);

function save(path: string, transcript: Transcript): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(transcript, null, 2)}\n`);
}

/**
 * Wraps `agent`: every reply (or error) it gives is appended to the transcript at `path`, which is
 * written anew after each call. A call stopped by its abort signal (a cancel, a timeout) is not
 * recorded: it is no answer of the agent's.
 * @example
 * const agent = process.env.RECORD ? recordAgent(new ClaudeCodeAgent(), "test/transcripts/review.json") : replayAgent("test/transcripts/review.json");
 */
export function recordAgent(agent: Agent, path: string, options: { id?: string } = {}): RecordingAgent {
  const id = options.id ?? agent.id;
  const transcript: Transcript = { version: 1, ...(id === undefined ? {} : { agentId: id }), entries: [] };
  save(path, transcript);
  return {
    ...(id === undefined ? {} : { id }),
    transcript,
    async generate(args) {
      let reply: AgentReply;
      try {
        reply = await agent.generate(args);
      } catch (error) {
        if (!args.abortSignal?.aborted) {
          const code = SmithersError.is(error) ? error.code : undefined;
          transcript.entries.push({ prompt: args.prompt, error: { message: (error as Error)?.message ?? String(error), ...(code ? { code } : {}) } });
          save(path, transcript);
        }
        throw error;
      }
      const { text, output, usage } = reply;
      transcript.entries.push({
        prompt: args.prompt,
        reply: { text, ...(output === undefined ? {} : { output }), ...(usage === undefined ? {} : { usage }) },
      });
      save(path, transcript);
      return reply;
    },
  };
}

function invalid(source: string, why: string): SmithersError {
  return new SmithersError("TRANSCRIPT_INVALID", `${source} is not a transcript recordAgent wrote: ${why}`, { source });
}

/** The transcript in `source` checked for its shape (a file path, or one in memory). */
function readTranscript(source: string | Transcript): Transcript {
  const name = typeof source === "string" ? source : "The transcript given";
  let value: unknown = source;
  if (typeof source === "string") {
    try {
      value = JSON.parse(readFileSync(source, "utf8"));
    } catch (cause) {
      throw invalid(name, (cause as Error).message);
    }
  }
  const t = value as Partial<Transcript> | null;
  if (typeof t !== "object" || t === null || t.version !== 1 || !Array.isArray(t.entries)) throw invalid(name, "expected { version: 1, entries: [...] }");
  for (const [i, e] of t.entries.entries()) {
    const ok = typeof e?.prompt === "string" && (typeof e.reply?.text === "string" || typeof e.error?.message === "string");
    if (!ok) throw invalid(name, `entry ${i} needs a prompt and a reply { text } or an error { message }`);
  }
  return t as Transcript;
}

function replayedError(entry: Required<Pick<TranscriptEntry, "error">>): SmithersError {
  const recorded = entry.error.code;
  const code: SmithersErrorCode = recorded && (SMITHERS_ERROR_CODES as readonly string[]).includes(recorded) ? (recorded as SmithersErrorCode) : "AGENT_FAILED";
  return new SmithersError(code, entry.error.message, { replayed: true });
}

/**
 * An agent that answers from a transcript recordAgent wrote (a file path, or the transcript
 * itself), each entry once. TRANSCRIPT_INVALID when it cannot be read; a call with no entry left
 * is REPLAY_EXHAUSTED, one whose prompt no unused entry has (with `match: "prompt"`) is
 * REPLAY_MISMATCH. A recorded error is thrown again with its code.
 * @example
 * const reviewer = replayAgent("test/transcripts/review.json");
 */
export function replayAgent(source: string | Transcript, options: ReplayOptions = {}): ReplayAgent {
  const transcript = readTranscript(source);
  const id = options.id ?? transcript.agentId ?? "replay";
  const name = typeof source === "string" ? source : "its transcript";
  const used = transcript.entries.map(() => false);
  const calls: AgentGenerateArgs[] = [];
  return {
    id,
    calls,
    async generate(args) {
      if (args.abortSignal?.aborted) throw args.abortSignal.reason;
      const next = used.indexOf(false);
      if (next < 0) {
        throw new SmithersError("REPLAY_EXHAUSTED", `replayAgent "${id}" was called ${calls.length + 1} times but ${name} holds ${used.length} replies`, {
          agentId: id,
          prompt: args.prompt,
        });
      }
      const index = options.match === "order" ? next : transcript.entries.findIndex((e, i) => !used[i] && e.prompt === args.prompt);
      if (index < 0) {
        const expected = transcript.entries[next]!.prompt;
        throw new SmithersError(
          "REPLAY_MISMATCH",
          `replayAgent "${id}" was asked ${shown(args.prompt)}, which ${name} does not hold; the next recorded prompt is ${shown(expected)}`,
          {
            agentId: id,
            prompt: args.prompt,
            expected,
          },
        );
      }
      used[index] = true;
      calls.push({ ...args });
      const entry = transcript.entries[index]!;
      if (entry.error) throw replayedError({ error: entry.error });
      const reply = entry.reply!;
      return {
        text: reply.text,
        ...(reply.output === undefined ? {} : { output: reply.output }),
        ...(reply.usage === undefined ? {} : { usage: reply.usage }),
      };
    },
  };
}

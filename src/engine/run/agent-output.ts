/**
 * A running agent's text, tool calls and tool results on their way to NodeOutput events: text
 * that arrives in pieces is joined per attempt, and staged events are stored within
 * OUTPUT_FLUSH_MS, by the step under way when there is one, else in a transaction of their own.
 */
import { attempts as attemptRows, type Sql, type SmithersDb } from "../../db/index.ts";
import type { AgentEvent } from "../../agents/index.ts";
import { safeStringify } from "../../errors/index.ts";
import type { EventBus } from "./event-bus.ts";
import type { EventBody } from "../core/index.ts";
import { OUTPUT_FLUSH_MS, OUTPUT_TEXT_MAX } from "../core/index.ts";

type AttemptIds = { nodeId: string; iteration: number; attempt: number };

export type AgentOutputDeps = {
  runId: string;
  db: SmithersDb;
  bus: EventBus;
  /** Stages an event with the run's next transaction. */
  emit: (event: EventBody) => void;
  /** First in the output's own transaction: throws once another process owns the run. */
  checkOwner: (q: Sql) => Promise<void>;
};

export class AgentOutput {
  /** A step is between its render and its commit: agent output waits for that commit instead of a transaction of its own. */
  stepInProgress = false;
  /** Nothing more runs: the run's last transaction is being written (late agent output is dropped). */
  closed = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Agent text not yet staged as an event, per attempt (joined until the next flush, a tool call or the step). */
  private readonly textBuffers = new Map<string, { ids: AttemptIds; text: string }>();

  constructor(private readonly deps: AgentOutputDeps) {}

  /**
   * What a running agent reports: its text, tool calls and tool results become NodeOutput events
   * (stored and heard within OUTPUT_FLUSH_MS), its subprocess is recorded on the attempt for a
   * later resume.
   */
  onAgentEvent(ids: AttemptIds, event: AgentEvent): void {
    if (event.type === "process") {
      attemptRows.recordAgentProcess(this.deps.db, { runId: this.deps.runId, ...ids }, event.pid, event.startTime).catch(() => undefined);
      return;
    }
    let stream: "text" | "tool";
    let text: string;
    if (event.type === "text") {
      stream = "text";
      text = event.text;
    } else if (event.type === "tool-call") {
      stream = "tool";
      text = event.input === undefined ? event.toolName : `${event.toolName} ${safeStringify(event.input)}`;
    } else if (event.type === "tool-result") {
      // `name → output` after its call (`name {input}`), or `name failed: error`.
      stream = "tool";
      const name = event.toolName ?? "tool";
      const output = event.output === undefined ? "" : shown(event.output);
      text = event.isError === true ? `${name} failed${output === "" ? "" : `: ${output}`}` : `${name} →${output === "" ? "" : ` ${output}`}`;
    } else return;
    if (text === "" || this.closed) return;
    const key = `${ids.nodeId}#${ids.iteration}#${ids.attempt}`;
    if (stream === "text") {
      // Pieces that arrive together (a CLI streaming deltas) become one event per flush.
      const buffered = this.textBuffers.get(key);
      if (buffered) buffered.text += text;
      else this.textBuffers.set(key, { ids, text });
      if ((buffered?.text.length ?? text.length) >= OUTPUT_TEXT_MAX) this.emitText(key);
    } else {
      this.emitText(key); // what it said before the call comes first
      this.deps.emit({ type: "NodeOutput", ...ids, stream, text: capText(text) });
    }
    this.flushSoon();
  }

  /** Stages the text buffered for one attempt (or for all) as NodeOutput events. */
  emitText(key?: string): void {
    if (this.textBuffers.size === 0) return;
    for (const k of key === undefined ? [...this.textBuffers.keys()] : [key]) {
      const buffered = this.textBuffers.get(k);
      if (!buffered) continue;
      this.textBuffers.delete(k);
      this.deps.emit({ type: "NodeOutput", ...buffered.ids, stream: "text", text: capText(buffered.text) });
    }
  }

  /** The run is over: no flush is pending any more. */
  cancelFlush(): void {
    clearTimeout(this.timer);
  }

  /**
   * Stores staged events (agent output) in a transaction of their own, soon, unless a step is
   * under way: that step's commit carries them, with the frame and rows they go with.
   */
  private flushSoon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.closed) return;
      if (this.stepInProgress) return this.flushSoon(); // that step may already have committed: look again
      this.emitText();
      const { bus, db } = this.deps;
      if (bus.stagedCount === 0) return;
      db.withTransaction("agentOutput", async (q) => {
        if (this.stepInProgress || this.closed) return; // a step (or the run's end) began meanwhile: its commit stores them
        await this.deps.checkOwner(q);
        await bus.writeStagedIn(q);
      }).catch(() => undefined); // kept staged: the next step stores them
    }, OUTPUT_FLUSH_MS);
    this.timer.unref?.();
  }
}

/** A tool's input or output as text: a string as it is, anything else as JSON. */
function shown(value: unknown): string {
  return typeof value === "string" ? value : safeStringify(value);
}

/** At most OUTPUT_TEXT_MAX characters, a longer text cut with "…". */
function capText(text: string): string {
  return text.length > OUTPUT_TEXT_MAX ? `${text.slice(0, OUTPUT_TEXT_MAX - 1)}…` : text;
}

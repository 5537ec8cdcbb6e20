/**
 * One approval waiting for a decision, on the run page and in the inbox: its title, summary and
 * metadata, an optional note, and Approve / Deny. A `select` gate asks for one option (radio
 * buttons); a `rank` gate for every option in order (move up / down buttons, all by keyboard).
 */
import { Fragment, type ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ErrorNote } from "./shared.tsx";
import type { ApprovalOption, PendingApproval } from "./types.ts";

export type Choice = { note?: string; select?: string; rank?: string[] };

type Props = {
  approval: PendingApproval;
  /** Throws (or sets its own error) when the server refuses. */
  onDecide: (verb: "approve" | "deny", choice: Choice) => Promise<void>;
  /** Shown under the title (the inbox names the run). */
  context?: ComponentChildren;
};

const optionText = (o: ApprovalOption) => o.label ?? o.key;

export function ApprovalCard({ approval, onDecide, context }: Props) {
  const { request } = approval;
  const options = request.options ?? [];
  const [note, setNote] = useState("");
  const [selected, setSelected] = useState<string>("");
  const [order, setOrder] = useState<string[]>(options.map((o) => o.key));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const id = `approval-${approval.runId ?? ""}-${approval.nodeId}-${approval.iteration}`.replace(/[^\w-]/g, "_");
  const title = request.title ?? approval.nodeId;
  const byKey = new Map(options.map((o) => [o.key, o]));

  const decide = async (verb: "approve" | "deny") => {
    if (verb === "approve" && request.mode === "select" && selected === "") {
      setError(new Error("Choose an option before approving."));
      return;
    }
    setBusy(true);
    try {
      const choice: Choice = {
        ...(note.trim() ? { note: note.trim() } : {}),
        ...(verb === "approve" && request.mode === "select" ? { select: selected } : {}),
        ...(verb === "approve" && request.mode === "rank" ? { rank: order } : {}),
      };
      await onDecide(verb, choice);
      setError(null);
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  const move = (i: number, by: -1 | 1) => {
    const next = [...order];
    const [item] = next.splice(i, 1);
    next.splice(i + by, 0, item!);
    setOrder(next);
  };

  return (
    <section class="card approval" aria-labelledby={`${id}-title`} data-approval={approval.nodeId}>
      <h2 id={`${id}-title`}>Waiting for approval: {title}</h2>
      {context}
      {request.summary && <p>{request.summary}</p>}
      {request.metadata && Object.keys(request.metadata).length > 0 && (
        <dl class="facts metadata">
          {Object.entries(request.metadata).map(([k, v]) => (
            <Fragment key={k}>
              <dt>{k}</dt>
              <dd>{typeof v === "string" ? v : JSON.stringify(v)}</dd>
            </Fragment>
          ))}
        </dl>
      )}
      {request.mode === "select" && (
        <fieldset>
          <legend>Choose one option</legend>
          {options.map((o) => (
            <label key={o.key} class="option">
              <input type="radio" name={`${id}-select`} value={o.key} checked={selected === o.key} onChange={() => setSelected(o.key)} />
              {optionText(o)}
              {o.summary && <span class="muted"> — {o.summary}</span>}
            </label>
          ))}
        </fieldset>
      )}
      {request.mode === "rank" && (
        <fieldset>
          <legend>Order the options, best first</legend>
          <ol class="rank" aria-label={`Ranking for ${title}`}>
            {order.map((key, i) => {
              const text = optionText(byKey.get(key) ?? { key });
              return (
                <li key={key} data-option={key}>
                  <span>{text}</span>
                  <button type="button" aria-label={`Move ${text} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                    ↑
                  </button>
                  <button type="button" aria-label={`Move ${text} down`} disabled={i === order.length - 1} onClick={() => move(i, 1)}>
                    ↓
                  </button>
                </li>
              );
            })}
          </ol>
        </fieldset>
      )}
      <label for={`${id}-note`}>Note (optional)</label>
      <textarea id={`${id}-note`} rows={2} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      <div class="actions">
        <button type="button" class="primary" disabled={busy} onClick={() => void decide("approve")}>
          Approve
        </button>
        <button type="button" disabled={busy} onClick={() => void decide("deny")}>
          Deny
        </button>
      </div>
      {error !== null && <ErrorNote error={error} />}
    </section>
  );
}

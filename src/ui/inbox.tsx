/**
 * The inbox at `/inbox`: what waits for a person across runs. Approvals (gate, select, rank) are
 * decided with a note; human tasks are answered through a form generated from their JSON Schema.
 * Reloaded every 2 s (polling: one small request, and decisions made elsewhere drop out).
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, getJson, postJson } from "./api.ts";
import { ApprovalCard } from "./approval-card.tsx";
import { time } from "./format.ts";
import { linkClick } from "./nav.ts";
import { placeErrors } from "./field-errors.ts";
import { type FieldErrors, SchemaForm } from "./schema-form.tsx";
import { ErrorNote } from "./shared.tsx";
import type { InboxApproval, InboxHuman } from "./types.ts";

const POLL_MS = 2000;

type Inbox = { approvals: InboxApproval[]; human: InboxHuman[] };

function RunLink({ runId, workflow }: { runId: string; workflow: string | null }) {
  const href = `/runs/${encodeURIComponent(runId)}`;
  return (
    <p class="muted">
      Run{" "}
      <a href={href} onClick={linkClick(href)}>
        <code>{runId.slice(0, 12)}</code>
      </a>
      {workflow ? ` of ${workflow}` : ""}
    </p>
  );
}

export function InboxPage() {
  const [inbox, setInbox] = useState<Inbox | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  const load = useCallback(async () => {
    try {
      setInbox(await getJson<Inbox>("/inbox"));
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, []);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), POLL_MS);
    return () => clearInterval(timer);
  }, [load]);

  const answer = async (item: InboxHuman, data: unknown): Promise<FieldErrors | null> => {
    try {
      await postJson(`/human/${encodeURIComponent(item.requestId)}/answer`, { data });
    } catch (e) {
      if (e instanceof ApiError && e.fields) return placeErrors(item.schema ?? {}, e.fields);
      return { "": e instanceof Error ? e.message : String(e) };
    }
    setDone(`Answer to ${item.nodeId} sent; run ${item.runId.slice(0, 12)} continues.`);
    await load();
    return null;
  };

  const count = inbox ? inbox.approvals.length + inbox.human.length : 0;
  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title" ref={heading} tabIndex={-1}>
        Inbox{inbox ? ` (${count})` : ""}
      </h1>
      <p role="status" class="muted">
        {done}
      </p>
      {error !== null && <ErrorNote error={error} />}
      {inbox === null ? (
        <p>Loading…</p>
      ) : count === 0 ? (
        <p>Nothing waits for a decision.</p>
      ) : (
        <>
          {inbox.approvals.map((a) => (
            <ApprovalCard
              key={`${a.runId}#${a.nodeId}#${a.iteration}`}
              approval={a}
              context={<RunLink runId={a.runId} workflow={a.workflowName} />}
              onDecide={async (verb, choice) => {
                await postJson(`/runs/${encodeURIComponent(a.runId)}/${verb}`, { node: a.nodeId, iteration: a.iteration, ...choice });
                setDone(`${a.request.title ?? a.nodeId}: ${verb === "approve" ? "approved" : "denied"}.`);
                await load();
              }}
            />
          ))}
          {inbox.human.map((h) => (
            <section key={h.requestId} class="card human" aria-labelledby={`human-${h.requestId}-title`.replace(/[^\w-]/g, "_")} data-request={h.requestId}>
              <h2 id={`human-${h.requestId}-title`.replace(/[^\w-]/g, "_")}>Asks for an answer: {h.nodeId}</h2>
              <RunLink runId={h.runId} workflow={h.workflowName} />
              <p>{h.prompt}</p>
              <p class="muted">Asked {time(h.requestedAtMs)}</p>
              {h.expired ? (
                <p class="error">This request expired and can no longer be answered.</p>
              ) : (
                <SchemaForm schema={h.schema ?? {}} idPrefix={`h-${h.requestId}`} onSubmit={(data) => answer(h, data)} />
              )}
            </section>
          ))}
        </>
      )}
    </section>
  );
}

/**
 * An OTLP/HTTP traces receiver on loopback for tests: decodes http/json and http/protobuf (with a
 * small wire-format reader for the fields tests look at) into plain spans. `mode` makes it a
 * collector that answers errors or answers slowly.
 */

export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  events: { name: string; attributes: Record<string, unknown> }[];
  resource: Record<string, unknown>;
};

type Field = { no: number; wire: number; value: bigint | Uint8Array };

function* fields(buf: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >> 3;
    const wire = tag & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.slice(i, i + 8) };
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, value: buf.slice(i, i + len) };
      i += len;
    } else if (wire === 5) {
      yield { no, wire, value: buf.slice(i, i + 4) };
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (v: bigint | Uint8Array) => new TextDecoder().decode(v as Uint8Array);
const hex = (v: bigint | Uint8Array) => Buffer.from(v as Uint8Array).toString("hex");

function anyValue(buf: Uint8Array): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return text(f.value);
    if (f.no === 2) return f.value === 1n;
    if (f.no === 3) return Number(f.value as bigint);
    if (f.no === 4) return new DataView((f.value as Uint8Array).buffer).getFloat64(0, true);
  }
  return undefined;
}

function protoAttributes(list: Uint8Array[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    let key = "";
    let value: unknown;
    for (const f of fields(kv)) {
      if (f.no === 1) key = text(f.value);
      if (f.no === 2) value = anyValue(f.value as Uint8Array);
    }
    out[key] = value;
  }
  return out;
}

const sub = (buf: Uint8Array, no: number) => [...fields(buf)].filter((f) => f.no === no).map((f) => f.value as Uint8Array);

function decodeProtobuf(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of sub(body, 1)) {
    const resource = protoAttributes(sub(rs, 1).flatMap((r) => sub(r, 1)));
    for (const ss of sub(rs, 2))
      for (const s of sub(ss, 2)) {
        const span: ReceivedSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", attributes: {}, status: 0, events: [], resource };
        const attrs: Uint8Array[] = [];
        for (const f of fields(s)) {
          if (f.no === 1) span.traceId = hex(f.value);
          else if (f.no === 2) span.spanId = hex(f.value);
          else if (f.no === 4) span.parentSpanId = hex(f.value);
          else if (f.no === 5) span.name = text(f.value);
          else if (f.no === 9) attrs.push(f.value as Uint8Array);
          else if (f.no === 11) {
            let name = "";
            const eventAttrs: Uint8Array[] = [];
            for (const g of fields(f.value as Uint8Array)) {
              if (g.no === 2) name = text(g.value);
              if (g.no === 3) eventAttrs.push(g.value as Uint8Array);
            }
            span.events.push({ name, attributes: protoAttributes(eventAttrs) });
          } else if (f.no === 15) for (const g of fields(f.value as Uint8Array)) if (g.no === 3) span.status = Number(g.value as bigint);
        }
        span.attributes = protoAttributes(attrs);
        spans.push(span);
      }
  }
  return spans;
}

type JsonKv = { key: string; value: Record<string, unknown> };
const jsonAttributes = (list: JsonKv[] = []) =>
  Object.fromEntries(
    list.map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? value.doubleValue : Number(value.intValue))]),
  );
/** The JS exporter writes ids as hex; other senders use base64 (the proto3 JSON mapping). */
const jsonId = (id: string | undefined) => (!id ? "" : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, "base64").toString("hex"));

function decodeJson(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans: {
      resource?: { attributes?: JsonKv[] };
      scopeSpans: {
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          attributes?: JsonKv[];
          status?: { code?: number };
          events?: { name: string; attributes?: JsonKv[] }[];
        }[];
      }[];
    }[];
  };
  return request.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        traceId: jsonId(s.traceId),
        spanId: jsonId(s.spanId),
        parentSpanId: jsonId(s.parentSpanId),
        name: s.name,
        attributes: jsonAttributes(s.attributes),
        status: s.status?.code ?? 0,
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        resource: jsonAttributes(rs.resource?.attributes),
      })),
    ),
  );
}

export type OtlpReceiver = {
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the requests received, in order. */
  contentTypes: string[];
  headers: Headers[];
  stop(): Promise<void>;
};

/** Starts a receiver; `mode` "error" answers 500 to every export, "slow" answers after `delayMs`. */
export function startOtlpReceiver(mode: "ok" | "error" | "slow" = "ok", delayMs = 10_000): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const headers: Headers[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const type = req.headers.get("content-type") ?? "";
      contentTypes.push(type);
      headers.push(req.headers);
      if (mode === "error") return new Response("collector is broken", { status: 500 });
      if (mode === "slow") await Bun.sleep(delayMs);
      const body = new Uint8Array(await req.arrayBuffer());
      spans.push(...(type.includes("json") ? decodeJson(new TextDecoder().decode(body)) : decodeProtobuf(body)));
      return new Response(type.includes("json") ? "{}" : new Uint8Array(), { headers: { "content-type": type } });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, spans, contentTypes, headers, stop: () => server.stop(true) };
}

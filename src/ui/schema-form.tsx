/**
 * A form generated from a JSON Schema (what zod's toJSONSchema wrote for a human task's output):
 * strings, numbers, integers and booleans as inputs, enums as selects, arrays of primitives as one
 * item per line, nested objects as fieldsets; every field labelled. The client checks only what
 * a browser can say for sure (a required number left empty, text that is not a number, a
 * fraction for an integer); the server checks the rest with the Zod schema, and each of its
 * problems comes back at its field's path and is shown beside that field.
 */
import { useState } from "preact/hooks";
import { type FieldErrors, kindOf } from "./field-errors.ts";
import type { JsonSchema } from "./types.ts";

export type { FieldErrors };

type Values = Record<string, string | boolean>;

const titleOf = (s: JsonSchema, key: string) => s.title ?? key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase());

/** The answer the inputs make, and the problems the client can see. */
function collect(schema: JsonSchema, values: Values, path: string[], required: boolean, errors: FieldErrors): unknown {
  const key = path.join(".");
  const kind = kindOf(schema);
  const raw = values[key];
  const text = typeof raw === "string" ? raw : "";
  switch (kind) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        const value = collect(child, values, [...path, name], (schema.required ?? []).includes(name), errors);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case "boolean":
      return raw === true;
    case "number":
    case "integer": {
      if (text.trim() === "") {
        if (required) errors[key] = "Required";
        return undefined;
      }
      const n = Number(text);
      if (!Number.isFinite(n)) errors[key] = "Enter a number";
      else if (kind === "integer" && !Number.isInteger(n)) errors[key] = "Enter a whole number";
      return n;
    }
    case "enum": {
      if (text === "") {
        if (required) errors[key] = "Choose one";
        return undefined;
      }
      return (schema.enum ?? []).find((v) => String(v) === text);
    }
    case "list": {
      const item = kindOf(schema.items!);
      const lines = text
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l !== "");
      return lines.map((l, i) => {
        if (item === "boolean") return l === "true";
        if (item !== "number" && item !== "integer") return l;
        const n = Number(l);
        if (!Number.isFinite(n)) errors[key] ??= `Line ${i + 1}: enter a number`;
        else if (item === "integer" && !Number.isInteger(n)) errors[key] ??= `Line ${i + 1}: enter a whole number`;
        return n;
      });
    }
    case "json": {
      if (text.trim() === "") return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        errors[key] = "Enter JSON";
        return undefined;
      }
    }
    default:
      return text === "" && !required ? undefined : text;
  }
}

type FormProps = {
  schema: JsonSchema;
  /** Prefix of the inputs' ids (unique on the page). */
  idPrefix: string;
  /** Sends the answer; resolves with the server's field problems, or null when it was taken. */
  onSubmit: (data: unknown) => Promise<FieldErrors | null>;
  submitLabel?: string;
};

export function SchemaForm({ schema, idPrefix, onSubmit, submitLabel = "Submit answer" }: FormProps) {
  const [values, setValues] = useState<Values>({});
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const set = (key: string, v: string | boolean) => setValues((old) => ({ ...old, [key]: v }));

  const submit = async () => {
    const found: FieldErrors = {};
    const data = collect(schema, values, kindOf(schema) === "object" ? [] : ["answer"], true, found);
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setBusy(true);
    setErrors((await onSubmit(data)) ?? {});
    setBusy(false);
  };

  const field = (s: JsonSchema, path: string[], required: boolean) => {
    const key = path.join(".");
    const id = `${idPrefix}-${path.join("-")}`.replace(/[^\w-]/g, "_");
    const label = titleOf(s, path[path.length - 1] ?? "");
    const error = errors[key];
    const kind = kindOf(s);
    if (kind === "object") {
      return (
        <fieldset key={key} data-field={key}>
          <legend>{label}</legend>
          {Object.entries(s.properties ?? {}).map(([name, child]) => field(child, [...path, name], (s.required ?? []).includes(name)))}
          {error && <FieldError id={`${id}-error`} text={error} />}
        </fieldset>
      );
    }
    const described = {
      "aria-invalid": error ? ("true" as const) : undefined,
      "aria-describedby": error ? `${id}-error` : s.description ? `${id}-hint` : undefined,
    };
    const value = values[key];
    const text = typeof value === "string" ? value : "";
    let input: preact.JSX.Element;
    if (kind === "boolean") {
      input = <input id={id} type="checkbox" checked={value === true} onChange={(e) => set(key, e.currentTarget.checked)} {...described} />;
    } else if (kind === "enum") {
      input = (
        <select id={id} value={text} onChange={(e) => set(key, e.currentTarget.value)} {...described}>
          <option value="">choose…</option>
          {(s.enum ?? []).map((v) => (
            <option key={String(v)} value={String(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
    } else if (kind === "list" || kind === "json") {
      input = <textarea id={id} rows={3} value={text} onInput={(e) => set(key, e.currentTarget.value)} {...described} />;
    } else {
      const numeric = kind === "number" || kind === "integer";
      input = (
        <input
          id={id}
          type="text"
          inputMode={kind === "integer" ? "numeric" : numeric ? "decimal" : undefined}
          value={text}
          onInput={(e) => set(key, e.currentTarget.value)}
          {...described}
        />
      );
    }
    const suffix = kind === "list" ? " (one per line)" : kind === "json" ? " (JSON)" : "";
    return (
      <div key={key} class={`field${kind === "boolean" ? " check" : ""}`} data-field={key}>
        <label for={id}>
          {label}
          {suffix}
          {required && kind !== "boolean" ? <span class="muted"> (required)</span> : null}
        </label>
        {input}
        {s.description && s.title === undefined && label !== s.description && (
          <span id={`${id}-hint`} class="muted hint">
            {s.description}
          </span>
        )}
        {error && <FieldError id={`${id}-error`} text={error} />}
      </div>
    );
  };

  const rootError = errors[""];
  return (
    <form
      class="schema-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      {kindOf(schema) === "object"
        ? Object.entries(schema.properties ?? {}).map(([name, child]) => field(child, [name], (schema.required ?? []).includes(name)))
        : field(schema, ["answer"], true)}
      {rootError && <FieldError id={`${idPrefix}-error`} text={rootError} />}
      <button type="submit" class="primary" disabled={busy}>
        {submitLabel}
      </button>
    </form>
  );
}

function FieldError({ id, text }: { id: string; text: string }) {
  return (
    <span id={id} class="error field-error" role="alert">
      {text}
    </span>
  );
}

/** Pieces the pages share: the status badge, an error note that asks for the token on a 401, a filter select and a table's column heads. */
import { useState } from "preact/hooks";
import { ApiError, getToken, setToken } from "./api.ts";

export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 401) return <TokenForm />;
  return (
    <p class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** Asks for the server's bearer token (`smithers serve --token`) and keeps it for this tab. */
function TokenForm() {
  const [value, setValue] = useState("");
  return (
    <form
      class="card"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(value.trim());
        location.reload();
      }}
    >
      <p role="alert">{getToken() ? "The server refused this token." : "This server needs a token."}</p>
      <label for="token">Bearer token</label>
      <input id="token" type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      <button type="submit">Sign in</button>
    </form>
  );
}

/** A filter's select: "any" (the empty value), then each option. Named by its span alone, not by the option shown. */
export function FilterSelect(p: { id: string; label: string; value: string; options: readonly string[]; onChange: (value: string) => void }) {
  return (
    <label>
      <span id={p.id}>{p.label}</span>
      <select aria-labelledby={p.id} value={p.value} onChange={(e) => p.onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {p.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
}

export function ColumnHeads({ names }: { names: readonly string[] }) {
  return (
    <thead>
      <tr>
        {names.map((n) => (
          <th key={n} scope="col">
            {n}
          </th>
        ))}
      </tr>
    </thead>
  );
}

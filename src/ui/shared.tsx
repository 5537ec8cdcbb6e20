/** Pieces both pages use: the status badge, and an error note that asks for the token on a 401. */
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

/**
 * The dashboard's entry: picks the page from the URL (`/`, `/runs`: the runs list; `/runs/<id>`:
 * a run; `/runs/<id>/events`: its journal; `/runs/<a>/compare/<b>`: two runs side by side;
 * `/inbox`: what waits for a person).
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { adoptTokenFromUrl } from "./api.ts";
import { ComparePage } from "./compare-page.tsx";
import { EventsPage } from "./events-page.tsx";
import { InboxPage } from "./inbox.tsx";
import { linkClick } from "./nav.ts";
import { RunPage } from "./run-page.tsx";
import { RunsList } from "./runs-list.tsx";
import { applyStoredTheme, ThemeToggle } from "./theme.tsx";
import "./styles.css";

function page(path: string) {
  const events = /^\/runs\/([^/]+)\/events\/?$/.exec(path);
  if (events) {
    const runId = decodeURIComponent(events[1]!);
    return { section: "runs", view: <EventsPage key={`events-${runId}`} runId={runId} /> };
  }
  const compare = /^\/runs\/([^/]+)\/compare\/([^/]+)\/?$/.exec(path);
  if (compare) {
    const [a, b] = [decodeURIComponent(compare[1]!), decodeURIComponent(compare[2]!)];
    return { section: "runs", view: <ComparePage key={`compare-${a}-${b}`} a={a} b={b} /> };
  }
  const run = /^\/runs\/([^/]+)\/?$/.exec(path);
  if (run) {
    const runId = decodeURIComponent(run[1]!);
    return { section: "runs", view: <RunPage key={runId} runId={runId} /> };
  }
  if (/^\/inbox\/?$/.test(path)) return { section: "inbox", view: <InboxPage /> };
  return { section: "list", view: <RunsList /> };
}

function App() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  const { section, view } = page(path);
  return (
    <>
      <header class="top">
        <a class="brand" href="/" onClick={linkClick("/")}>
          Smithers
        </a>
        <nav aria-label="Main">
          <a href="/" onClick={linkClick("/")} aria-current={section === "list" ? "page" : undefined}>
            Runs
          </a>
          <a href="/inbox" onClick={linkClick("/inbox")} aria-current={section === "inbox" ? "page" : undefined}>
            Inbox
          </a>
        </nav>
        <ThemeToggle />
      </header>
      <main id="main">{view}</main>
    </>
  );
}

applyStoredTheme();
adoptTokenFromUrl();
render(<App />, document.getElementById("app")!);

/** The dashboard's entry: picks the page from the URL (`/`, `/runs`: the runs list; `/runs/<id>`: a run). */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { adoptTokenFromUrl } from "./api.ts";
import { linkClick } from "./nav.ts";
import { RunPage } from "./run-page.tsx";
import { RunsList } from "./runs-list.tsx";
import "./styles.css";

function App() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);
  const match = /^\/runs\/([^/]+)\/?$/.exec(path);
  return (
    <>
      <header class="top">
        <a class="brand" href="/" onClick={linkClick("/")}>
          Smithers
        </a>
        <nav aria-label="Main">
          <a href="/" onClick={linkClick("/")} aria-current={match ? undefined : "page"}>
            Runs
          </a>
        </nav>
      </header>
      <main id="main">{match ? <RunPage key={match[1]} runId={decodeURIComponent(match[1]!)} /> : <RunsList />}</main>
    </>
  );
}

adoptTokenFromUrl();
render(<App />, document.getElementById("app")!);

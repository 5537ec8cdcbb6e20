/**
 * Preloaded by every `bun test` run (bunfig.toml): the suite's temporary files (databases, fake
 * CLIs, repositories, tool sandboxes) go under one directory of its own, TMPDIR for this process
 * and every process it starts, removed when the run ends. Without it each run left thousands of
 * directories in the system's temp directory, and a crowded /tmp slows every Bun process that
 * starts under it (Bun reads the directory when resolving modules).
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A PostgreSQL test server's directory stays in the system's: it is stopped and removed from
// there by a watchdog after this process ends (scripts/postgres/server.ts).
process.env.SMITHERS_PG_TMPDIR ??= tmpdir();
const root = mkdtempSync(join(tmpdir(), "smithers-suite-"));
process.env.TMPDIR = root;
// A hook in a preloaded file runs once, after the last test file (bun test emits no process exit event).
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Counts the SQL statements a process executes: every execution of a prepared statement, i.e. each
 * call of run, get, all, values, raw or iterate on the native statement prototype that every
 * bun:sqlite Statement delegates to (a JS Statement's own methods are set per instance, so its
 * prototype cannot be wrapped), plus each Database.prototype.exec/run call (BEGIN, COMMIT, PRAGMA …).
 * Every connection of the process is counted. Preparing counts nothing; an exec holding several
 * statements counts once. Used by bench/daemon and bench/compare's `rest` rows.
 */
import { Database } from "bun:sqlite";

const EXECUTE = ["run", "get", "all", "values", "raw", "iterate"] as const;

export type Counted = { total: number; byKind: Map<string, number>; sql: string[] };

const kindOf = (text: string) => /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "?";

/** Starts counting (by first keyword; with `keepSql`, each statement's text too); the returned `stop` uninstalls the wrappers. */
export function startCounting(keepSql = false): { counted: Counted; stop: () => void } {
  const probe = new Database(":memory:");
  const nativeProto = Object.getPrototypeOf((probe.prepare("SELECT 1") as unknown as { native: object }).native) as Record<string, unknown>;
  probe.close();
  const counted: Counted = { total: 0, byKind: new Map(), sql: [] };
  const kinds = new WeakMap<object, string>();
  const note = (kind: string) => {
    counted.total++;
    counted.byKind.set(kind, (counted.byKind.get(kind) ?? 0) + 1);
  };
  const restore: (() => void)[] = [];
  const wrap = (
    target: Record<string, unknown>,
    name: string,
    kind: (self: object, args: unknown[]) => string,
    text: (self: object, args: unknown[]) => string,
  ) => {
    const original = target[name];
    if (typeof original !== "function") return;
    target[name] = function (this: object, ...args: unknown[]) {
      note(kind(this, args));
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (keepSql) counted.sql.push(text(this, args)); // after the call: the text then shows the bound values
      return result;
    };
    restore.push(() => (target[name] = original));
  };
  // A statement's kind is read from its text once (toString expands the bound parameters).
  const statementKind = (self: object) => {
    let kind = kinds.get(self);
    if (kind === undefined) kinds.set(self, (kind = kindOf(String(self))));
    return kind;
  };
  for (const name of EXECUTE) wrap(nativeProto, name, statementKind, (self) => String(self));
  const dbProto = Database.prototype as unknown as Record<string, unknown>;
  for (const name of ["exec", "run"])
    wrap(
      dbProto,
      name,
      (_self, args) => kindOf(String(args[0])),
      (_self, args) => String(args[0]),
    );
  return { counted, stop: () => restore.reverse().forEach((undo) => undo()) };
}

/** Runs `fn` with every statement execution of the process counted (see the header). */
export async function countStatements<T>(fn: () => Promise<T>, keepSql = false): Promise<{ value: T; counted: Counted }> {
  const { counted, stop } = startCounting(keepSql);
  try {
    return { value: await fn(), counted };
  } finally {
    stop();
  }
}

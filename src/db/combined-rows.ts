/**
 * Rows combined into multi-row statements, for both executors (SqliteSql, PgSql): inside a write
 * transaction a statement text marked `combinable` (an INSERT, or an INSERT … ON CONFLICT upsert,
 * of one VALUES row of placeholders) is not run at once; its rows are held and written many per
 * statement just before any other statement of the connection runs, and before COMMIT. A step
 * of the engine that settles many tasks writes their attempt, output and node rows in a few
 * statements instead of one each, and nothing inside the transaction can tell: every statement
 * sees every row held before it. A row that breaks a constraint fails the statement that writes
 * it, later in the same transaction, which then rolls back as it would have.
 */

const COMBINABLE = new Set<string>();

/**
 * Marks an INSERT text (one `VALUES (?, …)` row, no RETURNING, its change count not needed) whose
 * rows a write transaction may combine (see HeldRows). Returns the text.
 */
export function combinable(text: string): string {
  COMBINABLE.add(text);
  return text;
}

/**
 * Row counts of multi-row statements, largest first: a few texts to prepare, however many rows.
 * Fewer rows than the smallest go in one statement of their own count (a step's few events or
 * frames: one statement, not one per row; at most 15 more texts, each prepared once).
 */
const ROW_CHUNKS = [64, 16];
const multiRowTexts = new Map<string, string>();

/** `text` (an INSERT with one `VALUES (…)` row of placeholders) with `count` rows of them. */
export function multiRowText(text: string, count: number): string {
  if (count === 1) return text;
  const key = `${count}\0${text}`;
  let found = multiRowTexts.get(key);
  if (found === undefined) {
    const open = text.indexOf(" VALUES (") + " VALUES ".length;
    const close = text.indexOf(")", open) + 1; // placeholders hold no parenthesis
    const row = text.slice(open, close);
    multiRowTexts.set(key, (found = text.slice(0, close) + `, ${row}`.repeat(count - 1) + text.slice(close)));
  }
  return found;
}

/** How many rows the next statement of `remaining` rows writes: one of ROW_CHUNKS, else all of them. */
export function chunkSize(remaining: number): number {
  return ROW_CHUNKS.find((size) => size <= remaining) ?? remaining;
}

/** The parameters of rows `at` .. `at + count - 1` (rows of one statement text: one width), in one array. */
export function chunkParams(rows: readonly (readonly unknown[])[], at: number, count: number): unknown[] {
  const width = rows[at]!.length;
  const params = new Array<unknown>(count * width);
  for (let r = 0; r < count; r++) {
    const row = rows[at + r]!;
    for (let c = 0; c < width; c++) params[r * width + c] = row[c];
  }
  return params;
}

/**
 * The positions, among the inserted columns, of the conflict target of an `ON CONFLICT (…) DO
 * UPDATE` text; null for any other text. Undefined when a target column is not among them.
 */
function conflictKeyOf(text: string): number[] | null | undefined {
  const at = text.indexOf(" ON CONFLICT (");
  if (at === -1 || !text.includes(" DO UPDATE ", at)) return null;
  const names = (list: string) => list.split(",").map((name) => name.trim().replace(/^"(.*)"$/, "$1"));
  const open = text.indexOf("(") + 1;
  const columns = names(text.slice(open, text.indexOf(")", open)));
  const targetOpen = at + " ON CONFLICT (".length;
  const positions = names(text.slice(targetOpen, text.indexOf(")", targetOpen))).map((name) => columns.indexOf(name));
  return positions.includes(-1) ? undefined : positions;
}

/** The rows held of one text; with distinct keys, its conflict target's positions and the keys held. */
type Held = { rows: unknown[][]; keyAt: number[] | null; keys: Set<string> | undefined };

/** conflictKeyOf by text, worked out once. */
const keyPositions = new Map<string, number[] | null | undefined>();

/**
 * The rows an executor holds while it combines (see the header), by statement text, in the order
 * each text was first held. `distinctKeys`: a multi-row upsert must not update one key twice
 * (PostgreSQL refuses it; SQLite applies the rows in order), so a row whose conflict key is held
 * already is not held: the caller writes what is held first, then runs the row's own statement.
 */
export class HeldRows {
  private holding = false;
  private readonly held = new Map<string, Held>();

  constructor(private readonly distinctKeys = false) {}

  get isEmpty(): boolean {
    return this.held.size === 0;
  }

  /** From now until `stop` (or `discard`), rows of combinable texts are held. */
  start(): void {
    this.holding = true;
  }

  /** Stops holding; the rows held stay until taken. */
  stop(): void {
    this.holding = false;
  }

  /** Forgets the rows held and stops holding (the transaction rolls back). */
  discard(): void {
    this.held.clear();
    this.holding = false;
  }

  /** Holds the row when holding and `text` is combinable; false when its statement must run now (after what is held). */
  hold(text: string, params: unknown[]): boolean {
    if (!this.holding || !COMBINABLE.has(text)) return false;
    let held = this.held.get(text);
    if (held === undefined) {
      const keyAt = this.distinctKeys ? this.keyAt(text) : null;
      if (keyAt === undefined) return false;
      this.held.set(text, (held = { rows: [], keyAt, keys: undefined }));
    }
    if (held.keyAt !== null) {
      let key = "";
      for (const at of held.keyAt) key += `${String(params[at])}\0`;
      held.keys ??= new Set();
      if (held.keys.has(key)) return false;
      held.keys.add(key);
    }
    held.rows.push(params);
    return true;
  }

  private keyAt(text: string): number[] | null | undefined {
    if (!keyPositions.has(text)) keyPositions.set(text, conflictKeyOf(text));
    return keyPositions.get(text);
  }

  /** The statements that write every row held, many rows each: text and parameters. Nothing is held afterwards. */
  take(): [text: string, params: unknown[]][] {
    const statements: [string, unknown[]][] = [];
    for (const [text, { rows }] of this.held) {
      for (let at = 0; at < rows.length; ) {
        const count = chunkSize(rows.length - at);
        statements.push([multiRowText(text, count), chunkParams(rows, at, count)]);
        at += count;
      }
    }
    this.held.clear();
    return statements;
  }
}

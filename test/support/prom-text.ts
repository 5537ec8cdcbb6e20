/** Reading samples out of a Prometheus text-format body, for the metrics tests. */

/** The value of the sample `name{labels}` in a text-format body (undefined: absent). */
export function sample(body: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of body.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.keys(labels).length === Object.keys(got).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

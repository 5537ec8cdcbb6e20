/** `smithers frames <run> [--frame N]`: the run's frames, or one frame's XML. */
import { parseArgs } from "./parse-args.ts";
import { frames, runs } from "../db/index.ts";
import { readFrameXml } from "../engine/history/index.ts";
import { SmithersError } from "../errors/index.ts";
import { EXIT, frameNumber, openExistingDb, usageError, type Io } from "./shared.ts";

export async function framesCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { frame: { type: "string" }, db: { type: "string" } } });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("frames takes exactly one run id");
  const frameNo = values.frame === undefined ? undefined : frameNumber(values.frame, "--frame");
  const db = openExistingDb(values.db);
  try {
    if (!(await runs.getRun(db, runId))) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
    if (frameNo !== undefined) {
      io.out(await readFrameXml(db, runId, frameNo));
      return EXIT.ok;
    }
    const list = await frames.listFrames(db, runId);
    io.out("frame  encoding  bytes");
    for (const f of list) io.out(`${String(f.frameNo).padStart(5)}  ${f.encoding.padEnd(8)}  ${f.bytes}`);
    const total = list.reduce((n, f) => n + f.bytes, 0);
    io.out(`${list.length} frames, ${total} bytes`);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}

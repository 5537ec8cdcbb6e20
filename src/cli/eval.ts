/** `smithers eval`: `eval compare <run-a> <run-b>` compares two runs; `eval <workflow.tsx> --cases FILE` runs a dataset. */
import type { Io, StopSignals } from "./shared.ts";

export async function evalCommand(args: string[], io: Io, signals: StopSignals): Promise<number> {
  if (args[0] === "compare") return (await import("./eval-compare.ts")).evalCompareCommand(args.slice(1), io);
  return (await import("./eval-dataset.ts")).evalDatasetCommand(args, io, signals);
}

/** Exit codes of `smithers`: 0 success, 1 failed run, 2 bad usage or bad input, 3 waiting, 130 cancelled by Ctrl-C. */
export const EXIT = { ok: 0, failed: 1, usage: 2, waiting: 3, cancelled: 130 } as const;

/** What a built-in tool returns (or accepts as content) at most, in bytes, unless the context says otherwise. */
export const DEFAULT_MAX_OUTPUT_BYTES = 200_000;

/** How long `bash` and `grep` may run before their process group is killed, unless the context says otherwise. */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;

import { describe, expect, test } from "bun:test";
import { GeminiStreamParser, geminiUsage } from "../../../src/agents/cli/gemini-stream.ts";

const tokens = (input: number, output: number) => ({ total_tokens: input + output, input_tokens: input, output_tokens: output, cached: 0, input });

describe("geminiUsage", () => {
  test("with the model router ('auto'), names the model that used the most tokens and keeps each model's share", () => {
    const stats = { input_tokens: 750, output_tokens: 80, cached: 0, models: { "gemini-3.5-flash-lite": tokens(50, 10), "gemini-3.8-flash": tokens(700, 70) } };
    expect(geminiUsage(stats, "auto")).toEqual({
      inputTokens: 750,
      cachedInputTokens: 0,
      outputTokens: 80,
      model: "gemini-3.8-flash",
      models: {
        "gemini-3.5-flash-lite": { inputTokens: 50, cachedInputTokens: 0, outputTokens: 10 },
        "gemini-3.8-flash": { inputTokens: 700, cachedInputTokens: 0, outputTokens: 70 },
      },
    });
  });

  test("one model that used tokens: that model, no breakdown (a model listed with none is left out)", () => {
    const stats = { input_tokens: 100, output_tokens: 20, cached: 0, models: { "gemini-2.5-pro": tokens(100, 20), "gemini-2.5-flash": tokens(0, 0) } };
    expect(geminiUsage(stats, "gemini-2.5-pro")).toEqual({ inputTokens: 100, cachedInputTokens: 0, outputTokens: 20, model: "gemini-2.5-pro" });
  });

  test("no tokens used: the model asked for, never 'auto'", () => {
    expect(geminiUsage({ input_tokens: 0, output_tokens: 0, cached: 0, models: {} }, "gemini-2.5-pro").model).toBe("gemini-2.5-pro");
    expect(geminiUsage({ input_tokens: 0, output_tokens: 0, cached: 0, models: {} }, "auto").model).toBeUndefined();
  });
});

/** The parser after an error result with `message`, asked about a call that ended so. */
function failureOf(message: string | undefined, exitCode: number | null, stderr = "", signal: NodeJS.Signals | null = null) {
  const parser = new GeminiStreamParser(1 << 20);
  parser.record({ type: "init", model: "auto" }, () => {});
  if (message !== undefined) parser.record({ type: "result", status: "error", error: { type: "unknown", message }, stats: {} }, () => {});
  return parser.failure({ exitCode, signal, stderr });
}

describe("GeminiStreamParser.failure", () => {
  test("401 and 403, from the exit code (status & 255) or Google's error in the message, and exit 41 are refused credentials", () => {
    expect(failureOf('[API Error: {"error":{"code":401,"message":"bad","status":"UNAUTHENTICATED"}}]', 145)).toMatchObject({
      code: "AGENT_AUTH_FAILED",
      details: { httpStatus: 401 },
    });
    expect(failureOf("[API Error: denied]", 147)).toMatchObject({ code: "AGENT_AUTH_FAILED", details: { httpStatus: 403 } });
    expect(failureOf(undefined, 41, "Please set an Auth method in your settings.json\n")?.code).toBe("AGENT_AUTH_FAILED");
  });

  test("a 400 is refused credentials only with Google's invalid-key wording", () => {
    expect(failureOf("[API Error: API key not valid. Please pass a valid API key.]", 144)?.code).toBe("AGENT_AUTH_FAILED");
    expect(failureOf("[API Error: Request contains an invalid argument.]", 144)).toBeUndefined();
  });

  test("429 is a rate limit with the delay Google suggested, in ms", () => {
    const message = "[API Error: Resource has been exhausted (e.g. check quota).\nSuggested retry after 2s.]\nPlease wait and try again later.";
    expect(failureOf(message, 173)).toMatchObject({ code: "AGENT_RATE_LIMITED", details: { httpStatus: 429, retryAfterMs: 2000 } });
    expect(failureOf("[API Error: quota]", 173)?.details).toEqual({ httpStatus: 429 });
    expect(failureOf("[API Error: quota. Please retry in 1.5s.]", 173)?.details).toMatchObject({ retryAfterMs: 1500 });
  });

  test("an unknown model (the CLI exits 1 then, naming ModelNotFoundError on stderr, or Google's wording) is AGENT_MODEL_NOT_FOUND", () => {
    expect(failureOf("[API Error: no such thing]", 1, "Error when talking to Gemini API ModelNotFoundError: no such thing\n")?.code).toBe(
      "AGENT_MODEL_NOT_FOUND",
    );
    expect(failureOf("[API Error: models/gemini-9 is not found for API version v1beta]", 1)?.code).toBe("AGENT_MODEL_NOT_FOUND");
  });

  test("death by a signal is a crash; any other failure is left to AGENT_CLI_EXIT", () => {
    expect(failureOf(undefined, null, "", "SIGKILL")).toMatchObject({ code: "AGENT_CLI_CRASHED", message: "the CLI was killed by SIGKILL" });
    expect(failureOf("[API Error: internal]", 244)).toBeUndefined();
    expect(failureOf(undefined, 55, "\u001b[31mGemini CLI is not running in a trusted directory.\u001b[0m\n")).toBeUndefined();
  });
});

/**
 * Text taken from other extensions' files before it reaches a message or a tool result.
 *
 * Invariant: the output has no control characters or terminal escapes, no recognizable
 * secrets, and at most `maxChars` characters (with a marker saying how much was cut).
 */
import { boundText, redactSecrets, sanitizeText } from "../session/redact.ts";

export function cleanText(value: string, maxChars: number): string {
  const { text } = redactSecrets(sanitizeText(value).trim());
  const bounded = boundText(text, maxChars);
  return bounded.omittedChars === 0 ? bounded.text : `${bounded.text}… [${bounded.omittedChars} more characters]`;
}

/** One line: newlines folded into spaces, then cleaned. */
export function cleanLine(value: string, maxChars: number): string {
  return cleanText(sanitizeText(value).replace(/\s+/g, " "), maxChars);
}

export function formatTime(ms: number | undefined): string | undefined {
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Turning a caught error into text for a one-sentence message. One place, so every module words
 * a failure the same way.
 */
import { oneLine, stripPeriod } from "./text.ts";

/** The error's own message (or the thrown value as text). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The message as a clause to embed in a sentence: one line, no trailing period. */
export function errorClause(error: unknown): string {
  return stripPeriod(oneLine(errorMessage(error)));
}

/** The message as a sentence of its own: one line, ending in a period (or the question mark it asks with). */
export function errorSentence(error: unknown): string {
  const clause = errorClause(error);
  return clause.endsWith("?") ? clause : `${clause}.`;
}

/** The thrown value as an Error (a non-Error becomes one with its text as the message). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

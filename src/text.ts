/**
 * Small text rules every module shares: one line, no trailing period, control characters, how a
 * wait reads, and the levels a notice is told at.
 *
 * Invariants: pure functions; one definition of each rule, so a message or a check reads the
 * same wherever it is made.
 */

/** How loudly something is told: the TUI's notification levels, and in print mode the exit code. */
export type NoticeLevel = "info" | "warning" | "error";

/** Control characters (C0 and DEL): a keystroke when typed into a terminal, a break in a line. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** Whether `text` holds a control character. */
export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTERS.test(text);
}

/** All whitespace runs (newlines included) as one space, trimmed. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Without its trailing periods and whitespace, to embed in a sentence. */
export function stripPeriod(text: string): string {
  return text.replace(/[.\s]+$/, "");
}

/** A wait or a time waited as every message says it: "40 ms", "0.5 s", "3 s", "1.5 s", "45 s". */
export function formatWait(ms: number): string {
  if (ms > 0 && ms < 99.5) return `${Math.round(ms)} ms`;
  // Rounded to tenths first, so 999 ms is "1 s" and 9.96 s is "10 s".
  const tenths = Math.round(ms / 100) / 10;
  return Number.isInteger(tenths) || tenths >= 10 ? `${Math.round(tenths)} s` : `${tenths.toFixed(1)} s`;
}

/**
 * Small text rules every module shares: one line, no trailing period, control characters, and
 * the levels a notice is told at.
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

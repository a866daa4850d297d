/**
 * Small text rules every module shares: one line, no trailing period, control characters, variable
 * names, how a count and a wait read, the likeliest meant word, and the levels a notice is told at.
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

/** A name `export NAME=...` takes in every POSIX shell: letters, digits and `_`, not starting with a digit. */
export const ENV_VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** All whitespace runs (newlines included) as one space, trimmed. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Without its trailing periods and whitespace, to embed in a sentence. */
export function stripPeriod(text: string): string {
  return text.replace(/[.\s]+$/, "");
}

/** A count and its noun in the right number: "1 commit", "2 commits", "0 commits" (`plural` for an irregular noun). */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}

/**
 * The one candidate a mistyped word most likely meant, for a "did you mean" (`--no-focs` ->
 * `--no-focus`): the nearest by edit distance (a swap of two neighbours counts as one edit),
 * if it is near enough (at most a third of the word's length, at least one edit) and no other
 * candidate is as near; otherwise none.
 */
export function closestMatch(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  let tied = false;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tied = false;
    } else if (distance === bestDistance && candidate !== best) tied = true;
  }
  return best !== undefined && bestDistance <= limit && !tied ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, at(i - 2, j - 2) + 1);
      row[j] = value;
    }
  }
  return at(a.length, b.length);
}

/** A wait or a time waited as every message says it: "40 ms", "0.5 s", "3 s", "1.5 s", "45 s". */
export function formatWait(ms: number): string {
  if (ms > 0 && ms < 99.5) return `${Math.round(ms)} ms`;
  // Rounded to tenths first, so 999 ms is "1 s" and 9.96 s is "10 s".
  const tenths = Math.round(ms / 100) / 10;
  return Number.isInteger(tenths) || tenths >= 10 ? `${Math.round(tenths)} s` : `${tenths.toFixed(1)} s`;
}

/**
 * What a terminal would act on or that reorders what it shows: C0 controls, DEL, C1 controls, and
 * the bidirectional marks, overrides and isolates (a commit subject or a file name holding them
 * can hide or fake the lines of a plan a person confirms).
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNPRINTABLE_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `\u001b` for ESC: the JSON escape, so text that is JSON stays the same JSON. */
function escaped(character: string): string {
  return `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** One field (a file name, a commit subject, a branch) as text to show: every character of `UNPRINTABLE`, newlines and tabs included, written as its escape. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escaped);
}

/** Whole output for a terminal: like `printable`, but newlines and tabs stay (the text's own lines); JSON stays valid, equal JSON. */
export function terminalSafe(text: string): string {
  return text.replace(UNPRINTABLE_BUT_LINES, escaped);
}

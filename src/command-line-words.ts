/**
 * Splitting a command typed into Pi (`/handoff-worktree ...`, `/handoffs ...`) into words, the way
 * a shell user expects, for every command of this package.
 *
 * Invariants: pure; nothing is expanded (no variables, globs, backslash escapes or command
 * substitution); every refusal is one sentence. Completion of the word being typed follows one
 * rule for every command (`completionsFor`).
 */

export type SplitLine = { ok: true; words: Word[]; rest?: string } | { ok: false; message: string };

/** One word of the command line, its quotes removed. */
export interface Word {
  text: string;
  /** Whether any part of it was quoted: a quoted `--` or `-x` is a value, not a separator or an option. */
  quoted: boolean;
}

const QUOTES = new Set(["'", '"']);

/**
 * Splits like a shell, without expanding anything: whitespace separates words, and a word that
 * starts with `'` or `"` runs to the partner quote (whitespace included), the quotes dropped.
 * Quotes inside a word are ordinary characters, so branch names such as `quote'd` stay as typed;
 * a quote that opens a word and is never closed is refused (`"feat/x` was meant to be quoted).
 * Backslashes are literal (git refuses them in a branch name, so they never silently vanish).
 * Stops at the first unquoted `--` word: what follows is `rest`, taken verbatim from the line
 * (the task of /handoff-worktree).
 */
export function splitCommandLine(raw: string): SplitLine {
  const words: Word[] = [];
  const isSpace = (index: number): boolean => /\s/.test(raw[index] ?? "");
  let i = 0;
  for (;;) {
    while (i < raw.length && isSpace(i)) i++;
    if (i >= raw.length) return { ok: true, words };
    let text = "";
    let quoted = false;
    const opening = raw[i] ?? "";
    if (QUOTES.has(opening)) {
      const close = raw.indexOf(opening, i + 1);
      if (close === -1) {
        const rest =
          raw
            .slice(i + 1)
            .trim()
            .split(/\s/)[0] ?? "";
        return {
          ok: false,
          message: `The quote ${opening} before ${JSON.stringify(rest)} is never closed; close it, or leave the quotes out.`,
        };
      }
      text = raw.slice(i + 1, close);
      quoted = true;
      i = close + 1;
    }
    const start = i;
    while (i < raw.length && !isSpace(i)) i++;
    text += raw.slice(start, i);
    if (!quoted && text === "--") {
      const rest = raw.slice(i).trim();
      return rest.length > 0 ? { ok: true, words, rest } : { ok: true, words };
    }
    words.push({ text, quoted });
  }
}

/**
 * The candidates completion offers for the word being typed: those that start with it, or none
 * when it already is one of them. Pi's editor takes Enter to accept the highlighted suggestion
 * rather than to submit, so a suggestion left up for a complete word costs a second Enter (and
 * could turn a typed `--carry` into `--carry=all`).
 */
export function completionsFor<T extends string>(candidates: readonly T[], typed: string): T[] {
  if (typed !== "" && candidates.includes(typed as T)) return [];
  return candidates.filter((candidate) => candidate.startsWith(typed));
}

/**
 * The one quoting function for a POSIX sh: a word a script holds as data, whatever it contains.
 * Every sh word this package writes (the launcher and its params, postCreate, `export` lines, the
 * batch shell of `runGitInEach`, the commands shown to be typed by hand, the bash and zsh
 * completion scripts) is quoted here. fish has its own rule (cli/shell-completion.ts).
 *
 * Invariants:
 * - Total and exact: any string (newlines, quotes, `$`, backquotes, non-ASCII, a leading dash)
 *   quotes to one word that sh reads back as exactly that string (tested through a real `sh -c`).
 * - A word of only characters no shell reads specially stays bare (so shown commands read as typed
 *   by hand); anything else, the empty word included, goes in single quotes, a `'` as `'\''`. A
 *   bare `NAME=value` is an argument, not an assignment, only after the command's name: callers
 *   put a program first.
 * - It refuses nothing: whether a word may be typed into a terminal (no control characters) is
 *   the typing side's rule (child/launch-command.ts).
 * - A leaf: it imports nothing, so every room (mux, launch, git, the CLI) may use it.
 */

/**
 * Characters no POSIX shell reads specially in an argument (a leading `-` matters only to the
 * program); `=` not first, where zsh would expand `=name` to a command's path.
 */
const SAFE_WORD = /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/;

/** `word` as one POSIX sh word that reads back as exactly `word`. */
export function shQuote(word: string): string {
  if (word.length > 0 && SAFE_WORD.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

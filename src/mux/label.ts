/**
 * Text that a multiplexer may interpret: window/workspace labels and tmux start directories.
 *
 * Invariants:
 * - `muxLabel` is the one place a label (made from a branch name) is made safe for tmux and Herdr:
 *   tmux expands formats in `new-window -n` (`#(cmd)` runs a shell command, `#{...}` substitutes),
 *   so a valid branch such as `tmux#(touch${IFS}x)` would run a command. Only letters, digits and
 *   `._/-` are kept; every run of anything else becomes one `-`. No `#` can survive.
 * - `tmuxLiteral` makes any string a literal in a tmux format (`#` doubled), for arguments that
 *   must keep their exact value, such as a worktree path given to `new-window -c`.
 */

/** Window names longer than this only crowd the status line. */
const MAX_LABEL_CHARS = 60;

export function muxLabel(text: string): string {
  const label = text.replace(/[^\p{L}\p{N}._/-]+/gu, "-").replace(/^-+|-+$/g, "");
  const cut = Array.from(label).slice(0, MAX_LABEL_CHARS).join("");
  return cut.length > 0 ? cut : "handoff";
}

/** `value` as a tmux format that expands to exactly `value` (tmux reads `##` as one `#`). */
export function tmuxLiteral(value: string): string {
  return value.replace(/#/g, "##");
}

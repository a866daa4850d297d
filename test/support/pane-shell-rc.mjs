/**
 * The start-up file of every pane shell the Herdr tests run, on the double and on the real Herdr
 * (written as the shell's rc file there): a fixed prompt, and the slow start-ups Herdr users report,
 * each switched on by a variable in the pane's environment. Plain JavaScript: the double (any
 * Node >= 20) imports it as it is.
 *
 * - PANE_SHELL_DELAY_S: a start-up job that holds the terminal's foreground and swallows typed input;
 * - PANE_SHELL_SWALLOW_S: a start-up of builtins only (the shell owns the foreground from the first
 *   instant) that reads and throws away everything typed before the prompt;
 * - PANE_SHELL_SWALLOW_UNTIL: the same, until that file exists.
 */
export function paneShellRc() {
  return [
    "# The pane shell's only start-up file (test/support/pane-shell-rc.mjs).",
    "PS1='$ '",
    'if [ -n "${PANE_SHELL_DELAY_S:-}" ]; then',
    "  # A start-up job that holds the terminal's foreground and swallows typed input, like a slow",
    "  # shell plugin: text typed before the shell owns the foreground is lost.",
    "  set -m",
    '  ( while read -r -t "$PANE_SHELL_DELAY_S" _swallowed; do :; done )',
    "fi",
    'if [ -n "${PANE_SHELL_SWALLOW_S:-}" ]; then',
    "  # A start-up that runs only builtins (as shell plugins do): the shell itself owns the foreground",
    "  # from the first instant, and everything typed before its prompt is read and thrown away.",
    '  read -r -t "$PANE_SHELL_SWALLOW_S" -d "" _swallowed',
    "fi",
    "# The same start-up, for as long as a test says: until its file exists.",
    'while [ -n "${PANE_SHELL_SWALLOW_UNTIL:-}" ] && [ ! -e "$PANE_SHELL_SWALLOW_UNTIL" ]; do read -r -t 0.1 -d "" _swallowed; done',
    "unset PANE_SHELL_DELAY_S PANE_SHELL_SWALLOW_S PANE_SHELL_SWALLOW_UNTIL _swallowed",
    "",
  ].join("\n");
}

/** The pane environment that switches those start-ups on, from the tests' options (milliseconds). */
export function paneShellVars({ shellDelayMs = 0, shellSwallowMs = 0, shellSwallowUntil = "" } = {}) {
  const vars = {};
  if (shellDelayMs > 0) vars.PANE_SHELL_DELAY_S = (shellDelayMs / 1000).toFixed(3);
  if (shellSwallowMs > 0) vars.PANE_SHELL_SWALLOW_S = (shellSwallowMs / 1000).toFixed(3);
  if (shellSwallowUntil) vars.PANE_SHELL_SWALLOW_UNTIL = shellSwallowUntil;
  return vars;
}

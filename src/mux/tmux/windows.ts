/**
 * A tmux window for a handoff: made unfocused, running the launcher followed by the shell tmux
 * would have started there.
 *
 * Invariants:
 * - Arguments tmux expands as formats (the name, the start directory) go through
 *   `muxLabel`/`tmuxLiteral` (label.ts), so no `#(...)` in a branch or a path ever runs.
 * - Only `-d` windows: nothing here changes the active window.
 */
import { muxLabel, tmuxLiteral } from "../label.ts";
import type { MuxFailure } from "../types.ts";
import { isId, SERVER_FORMAT, SERVER_PATTERN, type TmuxCallResult } from "./client.ts";
import type { TmuxLocation } from "../../manifest/locations.ts";

/** One tmux call on the server at `socketPath`, with the backend's bound. */
export type RunTmux = (socketPath: string, args: string[]) => Promise<TmuxCallResult>;

/**
 * A window (unfocused); with `command`, the window runs it followed by the shell tmux would have
 * started there (`default-command` through `default-shell`, else `default-shell` as a login
 * shell), so the pane goes on as the user's shell. tmux expands no format in a command's words.
 */
export async function newWindow(
  run: RunTmux,
  socketPath: string,
  sessionId: string,
  cwd: string,
  label: string,
  command?: readonly string[],
  /** The session's shell, when the caller asked for it already (`userShell`). */
  askedShell?: Promise<{ ok: true; argv: string[] } | MuxFailure>,
): Promise<{ ok: true; location: TmuxLocation; commandStarted: boolean } | MuxFailure> {
  let windowCommand: string[] = [];
  if (command !== undefined && command.length > 0) {
    const shell = await (askedShell ?? userShell(run, socketPath, sessionId));
    if (!shell.ok) return shell;
    windowCommand = ["--", ...command, ...shell.argv];
  }
  const created = await run(socketPath, [
    "new-window",
    "-d",
    "-t",
    `${sessionId}:`,
    // tmux expands formats in both: `#(...)` in a path or a branch name would run a command.
    "-c",
    tmuxLiteral(cwd),
    "-n",
    muxLabel(label),
    "-P",
    "-F",
    `#{session_id} #{window_id} #{pane_id} ${SERVER_FORMAT}`,
    ...windowCommand,
  ]);
  if (!created.ok) return created;
  const [shownSession, windowId, paneId, server] = created.stdout.trim().split(" ");
  if (!isId(shownSession, "$") || !isId(windowId, "@") || !isId(paneId, "%")) {
    return {
      ok: false,
      code: "window_create_failed",
      message: `tmux reported an unexpected window description: ${JSON.stringify(created.stdout)}.`,
    };
  }
  return {
    ok: true,
    location: {
      kind: "tmux",
      socketPath,
      sessionId: shownSession,
      windowId,
      paneId,
      ...(server !== undefined && SERVER_PATTERN.test(server) ? { server } : {}),
    },
    commandStarted: windowCommand.length > 0,
  };
}

/** The argv of the shell tmux starts in a new window of `sessionId` (see `newWindow`). */
export async function userShell(
  run: RunTmux,
  socketPath: string,
  sessionId: string,
): Promise<{ ok: true; argv: string[] } | MuxFailure> {
  const shown = await run(socketPath, ["display-message", "-p", "-t", `${sessionId}:`, SHELL_FORMAT]);
  if (!shown.ok) return shown;
  return { ok: true, argv: shellArgv(shown.stdout) };
}

/**
 * The session `target` (a session or pane id) names and the shell tmux starts in a new window
 * there, in one call: a session option is read in the context of any of its panes.
 */
export async function sessionAndShell(
  run: RunTmux,
  socketPath: string,
  target: string,
): Promise<{ ok: true; sessionId: string; shell: string[] } | MuxFailure> {
  const shown = await run(socketPath, ["display-message", "-p", "-t", target, `#{session_id}\n${SHELL_FORMAT}`]);
  if (!shown.ok) return shown;
  const newline = shown.stdout.indexOf("\n");
  const sessionId = (newline < 0 ? shown.stdout : shown.stdout.slice(0, newline)).trim();
  if (!isId(sessionId, "$") || newline < 0)
    return { ok: false, code: "pane_not_found", message: `tmux has no session or pane ${target}.` };
  return { ok: true, sessionId, shell: shellArgv(shown.stdout.slice(newline + 1)) };
}

/** The session's `default-shell`, then its `default-command` (which may span lines: it comes last). */
const SHELL_FORMAT = "#{default-shell}\n#{default-command}";

function shellArgv(shown: string): string[] {
  const [shell = "", ...rest] = shown.split("\n");
  const defaultCommand = rest.join("\n").trim();
  const program = shell.trim() !== "" ? shell.trim() : "/bin/sh";
  return defaultCommand !== "" ? [program, "-c", defaultCommand] : [program, "-l"];
}

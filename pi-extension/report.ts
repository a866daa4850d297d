/**
 * How the adapter tells the user something: a notification in the TUI, stderr in print mode.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { terminalSafe, type NoticeLevel } from "../src/text.ts";

/**
 * Print mode has no UI: results go to stderr, and anything but success sets a failing exit
 * code, so `pi -p "/handoff-worktree b"` can be scripted.
 */
export function report(ctx: ExtensionContext, text: string, level: NoticeLevel): void {
  // What a repository holds (a commit subject, a file name) is shown escaped, never acted on.
  const message = terminalSafe(text);
  if (ctx.hasUI) {
    ctx.ui.notify(message, level);
    return;
  }
  // Print mode keeps stdout for the assistant's text, so reports go to stderr.
  process.stderr.write(`${message}\n`);
  if (level !== "info") process.exitCode = 1;
}

/**
 * How the adapter tells the user something: a notification in the TUI, stderr in print mode.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { NoticeLevel } from "../src/text.ts";

/**
 * Print mode has no UI: results go to stderr, and anything but success sets a failing exit
 * code, so `pi -p "/handoff-worktree b"` can be scripted.
 */
export function report(ctx: ExtensionContext, message: string, level: NoticeLevel): void {
  if (ctx.hasUI) {
    ctx.ui.notify(message, level);
    return;
  }
  // Print mode keeps stdout for the assistant's text, so reports go to stderr.
  process.stderr.write(`${message}\n`);
  if (level !== "info") process.exitCode = 1;
}

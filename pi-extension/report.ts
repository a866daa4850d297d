/**
 * How the adapter tells the user something: a notification in the TUI, stderr in print mode.
 *
 * Invariants:
 * - Pi shows an info notice in one slot at the end of the chat, and the next info notice replaces
 *   it while nothing came between (Pi's `showStatus`). So a notice nobody asked for (the restore
 *   offer) asks `userActivitySince` first and stays silent once the user ran a command of ours or
 *   was told something by it: it must never take the place of a command's outcome.
 * - In print mode, a command's outcome (`reportOutcome`) is the last thing the process writes: Pi
 *   prints the conversation's last assistant answer on stdout after every prompt, a slash command's
 *   too, so after a command that answers nothing that is the previous turn's answer. The outcome
 *   goes to stderr as the process exits, after it; stdout stays Pi's.
 */
import { writeSync } from "node:fs";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { terminalSafe, type NoticeLevel } from "../src/text.ts";

/** Counts the commands of ours that started and the notices we showed, in this Pi. */
let activity = 0;

/** A mark to compare with later: `userActivitySince(mark)`. */
export function userActivityMark(): number {
  return activity;
}

/** Whether a command of ours started, or a notice of ours was shown, since `mark`. */
export function userActivitySince(mark: number): boolean {
  return activity !== mark;
}

/** A command of ours starts: its outcome is a notice that nothing unasked may replace. */
export function noteCommandStarted(): void {
  activity += 1;
}

/**
 * Print mode has no UI: results go to stderr, and anything but success sets a failing exit
 * code, so `pi -p "/handoff-worktree b"` can be scripted.
 */
export function report(ctx: ExtensionContext, text: string, level: NoticeLevel): void {
  // What a repository holds (a commit subject, a file name) is shown escaped, never acted on.
  const message = terminalSafe(text);
  if (ctx.hasUI) {
    activity += 1;
    ctx.ui.notify(message, level);
    return;
  }
  // Print mode keeps stdout for the assistant's text, so reports go to stderr.
  process.stderr.write(`${message}\n`);
  if (level !== "info") process.exitCode = 1;
}

/**
 * A command's outcome: in the TUI as `report`; in print mode on stderr as the process exits (after
 * what Pi prints on stdout then, see the header), with the exit code set at once.
 */
export function reportOutcome(ctx: ExtensionContext, text: string, level: NoticeLevel): void {
  if (ctx.hasUI) return report(ctx, text, level);
  const message = terminalSafe(text);
  if (level !== "info") process.exitCode = 1;
  process.once("exit", () => {
    try {
      writeSync(2, `${message}\n`);
    } catch {
      // stderr closed: nothing else can be told either.
    }
  });
}

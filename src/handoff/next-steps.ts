/**
 * The end of the handoff's final notice: what to do next, as commands a person can type.
 *
 * Invariants:
 * - Pure: decides from the outcome, the parent's environment (to name the way back) and whether
 *   files exist (injected); reads nothing else and changes nothing.
 * - Every command named is a real one of this package (`/handoffs`, `pi-handoff <command> <id>`,
 *   `/handoff-worktree`) or of the multiplexer that holds the child (`tmux select-window -t`,
 *   `herdr workspace focus`), with the ids this handoff recorded.
 * - A refusal gets nothing: its one sentence already says what to do, and nothing was created.
 */
import { existsSync } from "node:fs";
import type { Manifest, MuxLocation } from "../manifest/schema.ts";
import { shellQuote } from "../launch/launch-command.ts";
import { isHerdrId } from "../mux/herdr-protocol.ts";

/** The part of a handoff outcome this needs (the transaction's `HandoffOutcome` fits). */
export type NoticeOutcome =
  | { code: "refused" }
  | { code: "running" | "launch_unconfirmed"; manifest: Manifest }
  | { code: "failed"; manifest: Manifest };

export interface NextStepsContext {
  /** The parent Pi's environment: `$TMUX_PANE` / `$HERDR_WORKSPACE_ID` name the way back. */
  env: Readonly<Record<string, string | undefined>>;
  exists?: (path: string) => boolean;
}

/** Lines to append to the final notice (empty for a refusal). */
export function nextSteps(outcome: NoticeOutcome, context: NextStepsContext): string[] {
  if (outcome.code === "refused") return [];
  const { manifest } = outcome;
  const exists = context.exists ?? existsSync;
  const id = manifest.id;
  const goTo = switchCommand(manifest.mux);
  const inspect = `/handoffs here, or pi-handoff inspect ${id} in a shell`;

  switch (outcome.code) {
    case "running": {
      const back = backCommand(manifest.mux, context.env);
      const focused = manifest.focus !== undefined && !("error" in manifest.focus);
      const lines: string[] = [];
      if (goTo !== undefined) {
        lines.push(
          focused
            ? `Next: you are in its ${windowWord(manifest.mux)} now; come back with ${back ?? "your multiplexer's switch key"}, return with ${goTo}.`
            : `Next: switch to it with ${goTo}${back === undefined ? "" : `, come back with ${back}`}.`,
        );
      }
      lines.push(`Later: ${inspect} (relaunch its Pi, switch to it, remove it).`);
      return lines;
    }
    case "launch_unconfirmed":
      return [
        `Next: look at its ${windowWord(manifest.mux)}${goTo === undefined ? "" : ` (${goTo})`}: answer what Pi asks there, or if no Pi runs, pi-handoff relaunch ${id}.`,
        `What exists: ${inspect}; clean up with pi-handoff remove ${id} (keeps the branch, refuses uncommitted work).`,
      ];
    case "failed": {
      const worktreeExists = exists(manifest.worktree.path);
      if (!worktreeExists) {
        return [`Next: fix the cause above and run /handoff-worktree ${manifest.branch} again; pi-handoff prune retires this record.`];
      }
      const sessionExists = manifest.child.sessionFile !== undefined && exists(manifest.child.sessionFile);
      return [
        `Next: see what exists with ${inspect}${sessionExists ? `; pi-handoff relaunch ${id} starts its Pi` : ""}; pi-handoff remove ${id} cleans up (keeps the branch, refuses uncommitted work).`,
      ];
    }
  }
}

/** The command that brings the child's window/workspace to the front, when its id is known. */
export function switchCommand(location: MuxLocation): string | undefined {
  if (location.kind === "tmux") return location.windowId === undefined ? undefined : `tmux select-window -t ${location.windowId}`;
  return location.workspaceId === undefined ? undefined : `herdr workspace focus ${location.workspaceId}`;
}

/** The command that brings the parent back, from the parent Pi's own environment. */
function backCommand(location: MuxLocation, env: NextStepsContext["env"]): string | undefined {
  if (location.kind === "tmux") {
    // A pane id is a valid window target: tmux selects the window that holds it.
    const pane = env.TMUX_PANE;
    return pane !== undefined && /^%\d+$/.test(pane) ? `tmux select-window -t ${pane}` : undefined;
  }
  const workspace = env.HERDR_WORKSPACE_ID;
  // Any id Herdr prints (legacy hex ones too), quoted: it is shown as a command to type.
  return isHerdrId(workspace) ? `herdr workspace focus ${shellQuote(workspace)}` : undefined;
}

function windowWord(location: MuxLocation): string {
  return location.kind === "tmux" ? "window" : "workspace";
}

/**
 * The end of the handoff's final notice: what to do next, as commands a person can type.
 *
 * Invariants:
 * - Pure: decides from the outcome, the parent's environment (to name the way back) and whether
 *   files exist (injected); reads nothing else and changes nothing.
 * - Every command named is a real one of this package (`/handoffs`, `pi-handoff <command> <id>`,
 *   `/handoff-worktree`) or of the terminal that holds the child (its descriptor's switch
 *   commands, mux/registry.ts), with the ids this handoff recorded; `pi-handoff` as the caller
 *   says it runs in the user's shell (`cli`, child/pi-command.ts).
 * - The way between the parent's window and the child's can be taken where the person is, inside
 *   a Pi that holds the terminal: the terminal's keys when it said them (tmux: `Ctrl-b 0`), else a
 *   line typed in that Pi (`/handoffs` in the parent; in the child, its switch command after `!!`,
 *   Pi's way to run a shell command without adding it to the conversation).
 * - A refusal gets nothing: its one sentence already says what to do, and nothing was created.
 */
import { existsSync } from "node:fs";
import type { Manifest } from "../manifest/schema.ts";
import { backCommand, switchCommand, windowNoun } from "../mux/registry.ts";
import type { SwitchKeys } from "../mux/types.ts";

/** The part of a handoff outcome this needs (the transaction's `HandoffOutcome` fits). */
export type NoticeOutcome =
  | { code: "refused" }
  | { code: "running" | "launch_unconfirmed"; manifest: Manifest; keys?: SwitchKeys }
  | { code: "failed"; manifest: Manifest };

export interface NextStepsContext {
  /** The parent Pi's environment: its terminal's own variables name the way back. */
  env: Readonly<Record<string, string | undefined>>;
  exists?: (path: string) => boolean;
  /** How `pi-handoff` is typed in the user's shell (default `pi-handoff`). */
  cli?: string;
}

/** Lines to append to the final notice (empty for a refusal). */
export function nextSteps(outcome: NoticeOutcome, context: NextStepsContext): string[] {
  if (outcome.code === "refused") return [];
  const { manifest } = outcome;
  const exists = context.exists ?? existsSync;
  const cli = context.cli ?? "pi-handoff";
  const id = manifest.id;
  const goTo = switchCommand(manifest.mux);
  const inspect = `/handoffs here, or ${cli} inspect ${id} in a shell`;

  switch (outcome.code) {
    case "running": {
      const keys = outcome.keys ?? {};
      const back = backCommand(manifest.mux, context.env);
      // Typed where the person is: the child's Pi runs a shell command after `!!`; the parent's has /handoffs.
      const comeBack =
        keys.back ?? (back === undefined ? "your multiplexer's switch key" : `!!${back} typed in its Pi`);
      const goThere = keys.goTo ?? "/handoffs here";
      const focused = manifest.focus !== undefined && !("error" in manifest.focus);
      const lines: string[] = [];
      if (goTo !== undefined) {
        lines.push(
          focused
            ? `Next: you are in its ${windowNoun(manifest.mux)} now; come back with ${comeBack}, return with ${goThere}.`
            : `Next: switch to it with ${goThere}, come back with ${comeBack}.`,
        );
      }
      lines.push(`Later: ${inspect} (relaunch its Pi, switch to it, remove it).`);
      return lines;
    }
    case "launch_unconfirmed":
      return [
        `Next: look at its ${windowNoun(manifest.mux)}${goTo === undefined ? "" : ` (${outcome.keys?.goTo ?? "/handoffs here"})`}: answer what Pi asks there, or if no Pi runs, ${cli} relaunch ${id}.`,
        `What exists: ${inspect}; clean up with ${cli} remove ${id} (keeps the branch, refuses uncommitted work).`,
      ];
    case "failed": {
      const worktreeExists = exists(manifest.worktree.path);
      if (!worktreeExists) {
        return [
          `Next: fix the cause above and run /handoff-worktree ${manifest.branch} again; ${cli} prune retires this record.`,
        ];
      }
      const sessionExists = manifest.child.sessionFile !== undefined && exists(manifest.child.sessionFile);
      return [
        `Next: see what exists with ${inspect}${sessionExists ? `; ${cli} relaunch ${id} starts its Pi` : ""}; ${cli} remove ${id} cleans up (keeps the branch, refuses uncommitted work).`,
      ];
    }
  }
}

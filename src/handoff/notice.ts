/**
 * The words of a handoff's outcome: every refusal rendered from its code, the success notice, and
 * what a failure kept. One place, so the wording of an outcome can change without touching the
 * decisions that produce it.
 *
 * Invariants:
 * - Pure text from values: decides nothing, writes nothing (it only looks whether kept files still exist).
 * - Every refusal is one sentence that says what to do; paths and names are quoted as a shell
 *   user would type them.
 */
import { existsSync } from "node:fs";
import type { Manifest } from "../manifest/schema.ts";
import { PORT_ENV, PORTS_ENV } from "../child/launch-command.ts";
import { shQuote } from "../process/sh-quote.ts";
import { describeLocation } from "../mux/registry.ts";
import { counted, hasControlCharacter } from "../text.ts";

/** Why a handoff was refused before anything was written, with what the sentence names. */
export type Refusal =
  | { code: "environment"; detail: string }
  | { code: "session_not_saved" }
  | { code: "session_empty"; printMode: boolean }
  | { code: "no_model" }
  | { code: "model_unavailable"; model: string }
  | { code: "no_multiplexer"; detail: string }
  | { code: "not_a_repository"; cwd: string }
  | { code: "setup_git_missing" }
  | { code: "invalid_branch"; branch: string }
  | { code: "branch_unstorable"; detail: string }
  | { code: "branch_checked_out"; branch: string; path: string; existing: boolean }
  | { code: "branch_exists"; branch: string }
  | { code: "branch_missing"; branch: string }
  | { code: "branch_without_commit"; branch: string }
  | { code: "base_is_option"; base: string }
  | { code: "base_unresolved"; base: string }
  | { code: "no_commits"; repo: string }
  | { code: "base_freshness"; detail: string }
  | { code: "worktree_path"; detail: string }
  | { code: "worktree_path_control"; path: string }
  | { code: "carry_unreadable"; detail: string }
  | { code: "branch_claimed"; branch: string; handoffId: string; state: string }
  | { code: "ports_unavailable"; detail: string };

export type RefusalCode = Refusal["code"];

/** The sentence for a handoff cancelled at the TUI's questions: at the branch, or at the task once a branch was given. */
export function cancelledText(answered: { branch?: string }): string {
  return answered.branch === undefined
    ? "Handoff cancelled: no branch was given."
    : `Handoff to ${answered.branch} cancelled at the task question; nothing was created.`;
}

/** The one sentence a refusal is shown as. */
export function refusalText(refusal: Refusal): string {
  switch (refusal.code) {
    case "session_not_saved":
      return "This session is not saved (--no-session), so there is nothing to hand off; start Pi with a saved session.";
    case "session_empty":
      // In print mode there is no "first" to send a message in: the handoff must name a saved session.
      return refusal.printMode
        ? 'This session has no messages on disk yet, and print mode cannot send one first; hand off from a saved session: pi -p --session <file> "/handoff-worktree ..." (or -c for the latest one here).'
        : "This session has no messages on disk yet; send a message first, then hand off.";
    case "no_model":
      return "No model is selected; choose one with /model, then hand off.";
    case "model_unavailable":
      return `No usable model is selected (${refusal.model} is not available in this Pi); choose one with /model, then hand off.`;
    case "environment":
    case "no_multiplexer":
    case "branch_unstorable":
    case "base_freshness":
    case "worktree_path":
    case "ports_unavailable":
      return refusal.detail;
    case "not_a_repository":
      return `${refusal.cwd} is not inside a git repository; start Pi in a repository to hand off into a worktree.`;
    case "setup_git_missing":
      return "This Pi cannot carry changes, copy files or fetch for a handoff (no setup git); hand off without --carry, --fetch and copy/symlink settings.";
    case "invalid_branch":
      return `${JSON.stringify(refusal.branch)} is not a valid branch name; pick a name git accepts (see git check-ref-format).`;
    case "branch_checked_out":
      return refusal.existing
        ? `Branch ${refusal.branch} is already checked out at ${refusal.path}; work on it there, or hand off to another branch.`
        : `Branch ${refusal.branch} is already checked out at ${refusal.path}; pick a new branch name.`;
    case "branch_exists":
      return `Branch ${refusal.branch} already exists; pick a new branch name (or add --existing to hand off into it).`;
    case "branch_missing":
      return `Branch ${refusal.branch} does not exist; leave out --existing to create it.`;
    case "branch_without_commit":
      return `Branch ${refusal.branch} does not point at a commit; check it with git log ${refusal.branch}.`;
    case "base_is_option":
      return `Base ${JSON.stringify(refusal.base)} does not name a commit; give a branch, tag or commit.`;
    case "base_unresolved":
      return `Base ${JSON.stringify(refusal.base)} does not resolve to a commit; give a branch, tag or commit.`;
    case "no_commits":
      return `The repository at ${refusal.repo} has no commits yet, so a branch has nothing to start from; make a first commit, then hand off.`;
    case "worktree_path_control":
      return `The worktree path ${JSON.stringify(refusal.path)} would contain a control character, which cannot be typed into a terminal; rename the repository's directory first.`;
    case "carry_unreadable":
      return `Cannot carry the changes: ${refusal.detail}`;
    case "branch_claimed":
      return `Branch ${refusal.branch} is already claimed by handoff ${refusal.handoffId} (${refusal.state}); pick a new branch name.`;
  }
}

/**
 * The note for uncommitted work that stays in the parent checkout (none was asked to be carried,
 * or `--carry` left untracked files), saying how to take it along; undefined when nothing stayed.
 */
export function leftBehindNote(
  counts: { tracked: number; untracked: number },
  carry: "tracked" | "all" | undefined,
  checkout: string,
): string | undefined {
  if (carry === "all") return undefined;
  const tracked = carry === undefined ? counts.tracked : 0;
  const untracked = counts.untracked;
  if (tracked + untracked === 0) return undefined;
  const parts = [
    ...(tracked > 0 ? [`${counted(tracked, "uncommitted change")} to tracked files`] : []),
    ...(untracked > 0 ? [counted(untracked, "untracked file")] : []),
  ];
  const how =
    tracked > 0
      ? untracked > 0
        ? "--carry takes the changes along, --carry=all the untracked files too"
        : "--carry takes them along"
      : "--carry=all takes them along";
  return `Not carried: ${parts.join(" and ")} stayed in ${checkout} (the new worktree does not have them); ${how}.`;
}

/**
 * The note that says what the handoff reserved and sets (for the user, and in the child's handoff
 * message, so its Pi runs servers on its own ports); undefined when it reserves and sets nothing.
 * `cli` is how the user runs `pi-handoff` (src/child/pi-command.ts `recoveryCommand`).
 */
export function environmentNote(manifest: Pick<Manifest, "id" | "ports" | "env">, cli: string): string | undefined {
  const names = Object.keys(manifest.env ?? {});
  const ports =
    manifest.ports === undefined
      ? undefined
      : `Ports reserved for this handoff: ${manifest.ports.join(", ")} ($${PORT_ENV} is the first, $${PORTS_ENV} all of them); run its servers on these, not on the project's usual ports.`;
  const variables = names.length === 0 ? undefined : `Variables set for it: ${names.join(", ")}.`;
  const parts = [ports, variables].filter((part) => part !== undefined);
  return parts.length === 0
    ? undefined
    : `${parts.join(" ")} Everything run for it gets them (postCreate, its Pi and what that Pi runs); ${cli} env ${manifest.id} prints them for another shell.`;
}

/** A message followed by the plan's notes (base freshness, what the setup did), one per line. */
export function withNotes(message: string, notes: readonly string[]): string {
  return notes.length > 0 ? `${message}\n${notes.join("\n")}` : message;
}

/** The notice of a confirmed handoff. */
export function describeSuccess(manifest: Manifest): string {
  const lines = [
    manifest.setup?.existingBranch === true
      ? `Handed off to the existing branch ${manifest.branch} (at ${manifest.base.sha.slice(0, 12)}).`
      : `Handed off to branch ${manifest.branch} (from ${manifest.base.ref} at ${manifest.base.sha.slice(0, 12)}).`,
    `Worktree: ${manifest.worktree.path}`,
    `Child session: ${manifest.child.sessionFile ?? "?"}`,
    `Window: ${describeLocation(manifest.mux)}${manifest.child.pid !== undefined ? `, Pi pid ${manifest.child.pid}` : ""}`,
  ];
  if (manifest.focus !== undefined && "error" in manifest.focus)
    lines.push(`Could not switch to it: ${manifest.focus.error}`);
  lines.push(`Handoff id: ${manifest.id}`);
  return lines.join("\n");
}

/** The notice of a handoff that failed at `step`: the cause, then what was kept. */
export function describeFailure(step: string, message: string, manifest: Manifest): string {
  return `The handoff failed at the ${step} step: ${message} ${describeRetained(manifest)}`;
}

/** A path or name as a user would type it in a shell; one with control characters is shown JSON-escaped. */
function quoteForDisplay(word: string): string {
  return hasControlCharacter(word) ? JSON.stringify(word) : shQuote(word);
}

/** What exists after a failure, and what the user can do about it. */
export function describeRetained(manifest: Manifest): string {
  const kept: string[] = [];
  const worktreeExists = existsSync(manifest.worktree.path);
  if (worktreeExists) kept.push(`worktree ${manifest.worktree.path} on branch ${manifest.branch}`);
  const location = describeLocation(manifest.mux);
  if (!location.startsWith("no ")) kept.push(location);
  if (manifest.child.sessionFile !== undefined && existsSync(manifest.child.sessionFile)) {
    kept.push(`child session ${manifest.child.sessionFile}`);
  }
  const lines = [
    kept.length > 0 ? `Kept (nothing was deleted): ${kept.join("; ")}.` : "No worktree or session was created.",
    `Manifest: handoff ${manifest.id}.`,
  ];
  if (manifest.child.command !== undefined)
    lines.push(`To start the child by hand, run in its pane: ${manifest.child.command}`);
  if (worktreeExists) {
    const root = quoteForDisplay(manifest.repo.root);
    lines.push(
      `To clean up by hand: git -C ${root} worktree remove ${quoteForDisplay(manifest.worktree.path)} (add --force to drop its changes), then git -C ${root} branch -d ${quoteForDisplay(manifest.branch)}.`,
    );
  }
  return lines.join("\n");
}

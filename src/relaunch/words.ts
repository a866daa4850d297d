/**
 * The words of `relaunch`: every refusal and what a relaunch that ran says, rendered from codes
 * and facts (relaunch.ts) in this one place.
 *
 * Invariants:
 * - Pure: no I/O; each function renders facts it is given.
 * - Every refusal is one sentence that names the handoff and why nothing was started.
 */
import { stripPeriod } from "../text.ts";
import { describeLocation } from "../mux/registry.ts";
import type { Manifest } from "../manifest/schema.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";

/** Why a relaunch may not start, by its code, with the facts its sentence names. */
export type RelaunchRefusalFacts =
  | { code: "removed"; id: string }
  | { code: "child_running"; id: string; pids: number[] }
  | { code: "writer_unknown"; id: string; why: string }
  | { code: "in_progress"; id: string; state: string; updatedAt: string }
  /** `sessionFile`: the recorded one that no longer exists; undefined: none was recorded. */
  | { code: "no_child_session"; id: string; state: string; sessionFile: string | undefined }
  | { code: "worktree_not_present"; id: string; path: string; worktree: HandoffReport["worktree"] }
  | { code: "workspace_unknown"; id: string; why: string; muxKind: string }
  /** A Pi started on the session (or its lease became unreadable) since the inventory. */
  | { code: "raced"; id: string; why: string; reopenedIn: Manifest["mux"] | undefined };

export function relaunchRefusalSentence(facts: RelaunchRefusalFacts): string {
  const { id } = facts;
  switch (facts.code) {
    case "removed":
      return `Handoff ${id} was removed, so it cannot be relaunched.`;
    case "child_running":
      return `Handoff ${id} already has a live Pi on its session (pid ${facts.pids.join(", ")}), so no second one was started.`;
    case "writer_unknown":
      return `Handoff ${id} was not relaunched because it could not be checked whether a Pi still writes its session: ${facts.why}.`;
    case "in_progress":
      return `Handoff ${id} is still being set up (${facts.state}, updated ${facts.updatedAt}); try again once it has finished.`;
    case "no_child_session":
      return facts.sessionFile === undefined
        ? `Handoff ${id} has no child session (it stopped at ${facts.state}), so there is nothing to relaunch.`
        : `The child session ${facts.sessionFile} of handoff ${id} no longer exists, so there is nothing to relaunch.`;
    case "worktree_not_present":
      return `The worktree ${facts.path} of handoff ${id} is ${describeWorktree(facts.worktree)}, so Pi cannot be started in it.`;
    case "workspace_unknown":
      return `Handoff ${id} was not relaunched: ${stripPeriod(facts.why)}; try again once the ${facts.muxKind} server answers.`;
    case "raced": {
      const left =
        facts.reopenedIn === undefined
          ? ""
          : `; the window opened for it stays in ${describeLocation(facts.reopenedIn)}`;
      return `Handoff ${id} was not relaunched: ${facts.why}${left}.`;
    }
  }
}

/** What a relaunch whose Pi confirmed says; `focusError`: why switching to it failed, if it did. */
export function relaunchedSentence(id: string, manifest: Manifest, childSessionFile: string): string {
  const focusError =
    manifest.focus !== undefined && "error" in manifest.focus ? ` Could not switch to it: ${manifest.focus.error}` : "";
  return `Relaunched handoff ${id}: Pi${manifest.child.pid === undefined ? "" : ` pid ${manifest.child.pid}`} runs on ${childSessionFile} in ${describeLocation(manifest.mux)}.${focusError}`;
}

function describeWorktree(worktree: { code: string; reason?: string }): string {
  switch (worktree.code) {
    case "missing":
      return "gone";
    case "prunable":
      return "gone (git still lists it)";
    case "claimed":
      return "never checked out (an empty directory)";
    case "orphaned":
      return `no longer the handoff's checkout (${worktree.reason ?? "?"})`;
    default:
      return worktree.code;
  }
}

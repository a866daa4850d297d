/**
 * The words of `rebase`: every refusal, the plan a dry run and a question show, what a done rebase
 * says, and the note its child's Pi is told, rendered from codes and facts (rebase.ts) in this one
 * place.
 *
 * Invariants:
 * - Pure: no I/O; each function renders facts it is given.
 * - A refusal says that nothing was rebased (but `up_to_date`, which has nothing to rebase) and,
 *   where there is one, what to do instead.
 */
import type { Manifest, Rebase } from "../manifest/schema.ts";
import { counted } from "../text.ts";
import { listed } from "../land/land-words.ts";
import type { RebasePlan } from "./rebase.ts";

/** Why a rebase may not be planned, by its code, with the facts its sentence names. */
export type RebaseRefusalFacts =
  | { code: "removed"; id: string; branch: string }
  | { code: "in_progress"; id: string; state: string }
  | { code: "child_working"; id: string; label: string; basis: string }
  | { code: "no_worktree"; id: string; path: string; fact: string }
  /** `files`: the uncommitted and untracked ones; undefined: they could not be read. */
  | { code: "worktree_dirty"; path: string; files: readonly string[] | undefined }
  | { code: "branch_gone"; id: string; branch: string }
  | { code: "no_target"; id: string; baseRef: string }
  | { code: "up_to_date"; branch: string; into: string; ontoSha: string }
  | { code: "not_linear"; branch: string; into: string }
  | { code: "hooks"; names: readonly string[]; dir: string; into: string }
  | { code: "conflict"; branch: string; into: string; conflicts: string[] };

export function rebaseRefusalSentence(facts: RebaseRefusalFacts): string {
  switch (facts.code) {
    case "removed":
      return `Handoff ${facts.id} was removed; its branch ${facts.branch} can be rebased with git directly.`;
    case "in_progress":
      return `Handoff ${facts.id} is still being set up (${facts.state}); rebase it once it has started.`;
    case "child_working":
      return `Handoff ${facts.id}'s Pi is in a turn (${facts.label}: ${facts.basis}); nothing was rebased. Let it finish (or stop its turn), then rebase again.`;
    case "no_worktree":
      return `Handoff ${facts.id} has no worktree to rebase in (${facts.path} is ${facts.fact}); nothing was rebased.`;
    case "worktree_dirty":
      return facts.files === undefined
        ? `Could not read the uncommitted changes in ${facts.path}; nothing was rebased.`
        : `The worktree ${facts.path} has uncommitted changes (${listed(facts.files)}); nothing was rebased. Commit or stash them there, then rebase again.`;
    case "branch_gone":
      return `Branch ${facts.branch} of handoff ${facts.id} could not be read; nothing was rebased.`;
    case "no_target":
      return `Handoff ${facts.id} started from ${facts.baseRef}, which is not a branch it could follow; nothing was rebased.`;
    case "up_to_date":
      return `${facts.branch} already has ${facts.into}'s tip ${facts.ontoSha.slice(0, 12)}; nothing to rebase.`;
    case "not_linear":
      return `${facts.branch} contains merge commits, which a rebase would flatten; nothing was rebased. Merge ${facts.into} into it in the worktree instead.`;
    case "hooks":
      return `Rebasing makes commits without running the repository's hooks that git rebase runs (${facts.names.join(", ")} in ${facts.dir}); nothing was rebased. Rebase in the worktree with git (git rebase ${facts.into}), or pass --no-verify to rebase without them.`;
    case "conflict":
      return `Rebasing ${facts.branch} onto ${facts.into} would conflict in ${listed(facts.conflicts)}; nothing was rebased. Merge ${facts.into} into ${facts.branch} in the worktree and resolve them there.`;
  }
}

/** Plain lines saying what the rebase does (a new commit's id is not known before it is made). */
export function describeRebasePlan(plan: RebasePlan): string[] {
  return [
    `Rebase ${counted(plan.commits.length, "commit")} of ${plan.branch} onto ${plan.onto.ref} at ${plan.onto.sha.slice(0, 12)} (${plan.onto.ref} has moved ${counted(plan.behind, "commit")} past it):`,
    ...plan.commits.map((commit) => `  ${commit.sha.slice(0, 12)} ${commit.subject}`),
    `${plan.branch} then points at the last of them (new commits, authors, dates and messages kept), and its worktree ${plan.worktree} follows: ${counted(plan.touched.length, "file")} change there.`,
    "Its Pi is told at its next idle point.",
  ];
}

/** What a done rebase says; `told`: why its Pi could not be told, when it could not. */
export function rebasedSentence(plan: RebasePlan, told: string | undefined): string {
  return [
    `Rebased ${counted(plan.commits.length, "commit")} of ${plan.branch} onto ${plan.onto.ref} at ${plan.onto.sha.slice(0, 12)}: ${plan.branch} is now at ${plan.to}.`,
    told ?? "Its Pi is told at its next idle point.",
  ].join(" ");
}

/** The note the child's Pi is told once its branch was rebased. */
export function rebasedNoteText(
  manifest: Pick<Manifest, "branch">,
  rebase: Pick<Rebase, "onto" | "from" | "to" | "commits">,
): string {
  return [
    `The base of this handoff moved: ${rebase.onto.ref} went on to ${rebase.onto.sha.slice(0, 12)}, and pi-handoff rebase re-made this branch's ${counted(rebase.commits.length, "commit")} on it.`,
    `Branch ${manifest.branch} is now at ${rebase.to.slice(0, 12)} (it was at ${rebase.from.slice(0, 12)}); the worktree's files were updated with it.`,
    `What ${rebase.onto.ref} brought is in: git log ${rebase.from.slice(0, 12)}..${rebase.to.slice(0, 12)} shows your commits re-made, git diff ${rebase.from.slice(0, 12)} ${rebase.to.slice(0, 12)} what changed.`,
  ].join("\n");
}

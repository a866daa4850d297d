/**
 * The words of `remove` and `prune`: every sentence a removal's plan, its refusals, what it did
 * (or why it stopped), and prune's actions, notes and results say, rendered from their codes
 * (plan.ts, remove.ts, prune.ts) in this one place, so a dry run, a confirmation and the real run
 * read alike.
 *
 * Invariants:
 * - Pure: no I/O; each function renders facts it is given.
 * - A plan is worded in one of two tenses: `would` when it is only shown (a dry run, a refusal, a
 *   question), `will` right before it is carried out.
 * - A file name or subject with terminal escapes or line breaks must not hide or fake a line: the
 *   lines of a plan and of a prune action are made printable.
 */
import type { MergedBy } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { mergeTargetOf } from "../inventory/classify.ts";
import { counted, printable, stripPeriod } from "../text.ts";
import { describeLocation } from "../mux/registry.ts";
import type { BranchPlan, ForceStake, RefusalFacts, RemovalPlan } from "./plan.ts";
import type { EntryKept, PruneAction, PruneNote, PruneResultFacts } from "./prune.ts";

/** The sentence of a refusal to remove, from its code and the facts it names. */
export function removalRefusalSentence(facts: RefusalFacts): string {
  const { id } = facts;
  switch (facts.reason) {
    case "removed": {
      const branch =
        facts.keptBranch === undefined
          ? ""
          : `; its branch ${facts.keptBranch} is kept (git branch -d ${facts.keptBranch} deletes it once merged)`;
      return `Handoff ${id} was already removed, so there is nothing left to remove${branch}; pi-handoff inspect ${id} shows its record.`;
    }
    case "in_progress":
      return `Handoff ${id} is still being set up (${facts.state}); try again once it has finished.`;
    case "child_running":
      return `Handoff ${id} still has a live Pi (pid ${facts.pids.join(", ")}); quit it first, then remove the handoff.`;
    case "moved":
      return `The worktree of handoff ${id} was moved by hand to ${facts.movedTo}, which still uses git's entry for it (${facts.entryDir}); nothing was removed. Tell git where it is (git worktree repair ${facts.movedTo}); then pi-handoff remove ${id} records the handoff removed and leaves that checkout alone.`;
    case "blocked":
      return `${facts.why} Handoff ${id} was not removed.`;
    case "needs_force": {
      const stakes = facts.stakes.map(stakeWords);
      return `Handoff ${id} has ${stakes.map((stake) => stake.phrase).join(" and ")}; nothing was removed (${facts.forceHint ?? "add --force"} to remove it anyway: ${stakes.map((stake) => stake.forced).join(", ")}).`;
    }
  }
}

/** What a stake is, and what `force` does to it, one phrase each. */
function stakeWords(stake: ForceStake): { phrase: string; forced: string } {
  switch (stake.code) {
    case "lost_files":
      return {
        phrase: counted(stake.count, "uncommitted, untracked or ignored file"),
        forced: stake.count === 1 ? "the file listed is deleted" : "the files listed are deleted",
      };
    case "staged":
      return {
        phrase: `${counted(stake.count, "change")} staged in git's entry for its vanished checkout`,
        forced: "git's entry goes with what is staged in it",
      };
    case "unread":
      return { phrase: stake.fact, forced: "it is removed without that check" };
    case "unmerged":
      return {
        phrase: `${counted(stake.count, "commit")} not merged into ${stake.target}`,
        forced: `the ${stake.count === 1 ? "commit stays" : "commits stay"} on branch ${stake.branch}`,
      };
    case "changes_unread":
      return { phrase: "changes that could not be read", forced: "whatever is uncommitted there is deleted" };
    case "writer_unknown":
      return {
        phrase: `a session that could not be checked for a running Pi (${stripPeriod(stake.why)})`,
        forced: "the checkout goes even if a Pi still works in it",
      };
  }
}

/** The question offered after a confirmed removal when deleting the branch too would lose nothing. */
export function branchDeletionWords(
  branchName: string,
  branch: Extract<BranchPlan, { code: "delete" }>,
): { question: string; detail: string } {
  return {
    question: `Also delete branch ${branchName}?`,
    detail:
      branch.by.rule === "ancestry"
        ? `Everything on it is in ${branch.mergeTarget.ref}, so no commit is lost.`
        : `${capitalized(mergedPhrase(branch.by, branch.mergeTarget.ref))}, so no change is lost.`,
  };
}

/** How a merge rule reads in a plan (`in main (rebased: every commit's patch is there)`). */
function mergedPhrase(by: MergedBy, into: string): string {
  switch (by.rule) {
    case "ancestry":
      return `everything on it is in ${into}`;
    case "landing":
      return `it was landed into its target, which still holds the landed commit ${by.result.slice(0, 12)}`;
    case "patch":
      return `every commit's change is in ${into} (a rebase or cherry-picks landed it; its own commits go with it)`;
    case "tree":
      return `merging it into ${into} would change nothing (a squash landed it; its own commits go with it)`;
  }
}

/**
 * Plain lines that say exactly what a removal does and loses: `would` when it is only shown (a
 * dry run, a refusal, a question), `will` right before it is carried out.
 */
export function describeRemovalPlan(plan: RemovalPlan, tense: Tense = "would"): string[] {
  const { report } = plan;
  const lines = [worktreeLine(plan, tense)];
  if (report.unrecorded?.includes("window")) {
    lines.push(
      `Its window (${describeLocation(report.mux)}) was made but never recorded (the handoff was killed first); it was found by its name and is treated as the handoff's.`,
    );
  }
  if (report.unrecorded?.includes("session")) {
    lines.push(
      `Its child session ${report.childSessionFile ?? "?"} was written but never recorded (the handoff was killed first); it is kept and recorded.`,
    );
  }
  lines.push(...lossLines(plan, tense), branchLine(plan, tense));
  if (report.writerUnknown !== undefined && plan.worktree === "remove") {
    lines.push(
      `It could not be checked whether a Pi still works in it (${stripPeriod(report.writerUnknown)}); quit any Pi there first.`,
    );
  }
  if (report.workspace.code === "open" && !plan.closesWorkspace) {
    lines.push(`Its window ${tense} stay open (it is no longer the worktree's); close it yourself.`);
  }
  // A file name or subject with terminal escapes or line breaks must not hide or fake a line.
  return lines.map(printable);
}

/** Whether a plan is only shown (`would`) or about to be carried out (`will`). */
export type Tense = "would" | "will";

function worktreeLine({ manifest, report, worktree, closesWorkspace }: RemovalPlan, tense: Tense): string {
  switch (worktree) {
    case "remove":
      return `The worktree ${manifest.worktree.path} ${tense} be deleted${closesWorkspace ? " and its window closed" : ""}.`;
    case "unregister":
      return `The worktree ${manifest.worktree.path} is not where the handoff made it; git's entry for it ${tense} be dropped (a checkout moved by hand elsewhere would lose its link to git: git worktree repair <its new path> first).`;
    case "release_claim":
      return `The empty directory ${manifest.worktree.path}, claimed for a checkout git never made, ${tense} be removed${closesWorkspace ? " and its window closed" : ""}.`;
    case "already_gone":
      return `The worktree ${manifest.worktree.path} is already gone${closesWorkspace ? `; its window ${tense} be closed if it still shows that directory` : ""}.`;
    case "leave_orphaned":
      return `The directory ${manifest.worktree.path} ${tense} be left in place: ${report.worktree.code === "orphaned" ? report.worktree.reason : "git does not know it"}; delete it yourself if you do not need it.`;
  }
}

/** The files lost for good, the commits kept under refs, and the unmerged commits that stay on the kept branch. */
function lossLines({ manifest, report, lostFiles, unmerged, kept, entry }: RemovalPlan, tense: Tense): string[] {
  const lines: string[] = [];
  const changed = lostFiles.dirty.length + lostFiles.untracked.length + lostFiles.ignored.length;
  if (changed > 0) {
    lines.push(
      `${tense === "would" ? "Would" : "Will"} be lost for good (${counted(changed, "file")} with uncommitted work):`,
    );
    for (const file of lostFiles.dirty) lines.push(`  modified   ${file}`);
    for (const file of lostFiles.untracked) lines.push(`  untracked  ${file}`);
    for (const file of lostFiles.ignored) lines.push(`  ignored    ${file}`);
  }
  if (entry !== undefined && entry.staged.length > 0) {
    lines.push(
      `${tense === "would" ? "Would" : "Will"} be lost for good (${counted(entry.staged.length, "change")} staged in git's entry ${entry.dir}):`,
    );
    for (const file of entry.staged) lines.push(`  staged     ${file}`);
  }
  if (kept.commits.length > 0) {
    lines.push(
      `${counted(kept.commits.length, "commit")} only the worktree's own HEAD history holds ${tense} be kept under refs/pi-handoff/${manifest.id}/kept/:`,
    );
    for (const commit of kept.commits.slice(0, 50)) lines.push(`  ${commit.sha.slice(0, 12)} ${commit.subject}`);
    if (kept.commits.length > 50) lines.push(`  ... and ${kept.commits.length - 50} more`);
  }
  if (unmerged !== undefined && unmerged.total > 0) {
    lines.push(
      `${counted(unmerged.total, "commit")} not merged into ${mergeTargetOf(report)} ${tense} stay on branch ${manifest.branch}, which ${tense} be kept:`,
    );
    for (const commit of unmerged.commits) lines.push(`  ${commit.sha.slice(0, 12)} ${commit.subject}`);
    if (unmerged.commits.length < unmerged.total)
      lines.push(`  ... and ${unmerged.total - unmerged.commits.length} more`);
  }
  return lines;
}

function branchLine({ manifest, branch }: RemovalPlan, tense: Tense): string {
  switch (branch.code) {
    case "keep":
      return `Branch ${manifest.branch} ${tense} be kept.`;
    case "keep_preexisting":
      return `Branch ${manifest.branch} ${tense} be kept: it existed before this handoff (--existing), so it is not this handoff's to delete.`;
    case "delete":
      return `Branch ${manifest.branch} ${tense} be deleted: ${mergedPhrase(branch.by, branch.mergeTarget.ref)}.`;
    case "keep_unmerged":
      return `Branch ${manifest.branch} ${tense} be kept: it has ${counted(branch.unmerged, "unmerged commit")}, and an unmerged branch is never deleted, even with --force.`;
    case "gone":
      return `Branch ${manifest.branch} no longer exists.`;
    case "unknown":
      return `Branch ${manifest.branch} ${tense} be kept: ${branch.message}`;
  }
}

function capitalized(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

export function describePruneAction(action: PruneAction): string[] {
  return pruneActionLines(action).map(printable);
}

function pruneActionLines(action: PruneAction): string[] {
  if (action.code === "retire_merged") {
    const rule =
      action.plan.report.branchState.code === "present" ? action.plan.report.branchState.merged?.rule : undefined;
    return [
      `retire handoff ${action.id}: branch ${action.branch} is merged${rule === undefined ? "" : ` (${rule})`}`,
      ...describeRemovalPlan(action.plan).map((line) => `  ${line}`),
    ];
  }
  if (action.code === "drop_entry") {
    const kept =
      action.kept.length === 0
        ? ""
        : ` (keeping what only its HEAD history held under refs/pi-handoff/${action.id}/kept/)`;
    return [`drop git's entry ${action.entry} for the vanished worktree ${action.path} of handoff ${action.id}${kept}`];
  }
  if (action.code === "sweep_leftovers") {
    return [
      `delete ${counted(action.leftovers.length, "leftover file")} in the store:`,
      ...action.leftovers.map((leftover) => `  ${leftover.name}: ${leftover.reason}`),
    ];
  }
  const why =
    action.reason === "failed_before_worktree"
      ? "it failed before its worktree existed"
      : action.reason === "worktree_gone_branch_gone"
        ? `its worktree and branch ${action.branch} are gone`
        : `its worktree is gone and branch ${action.branch} is merged (the branch is kept)`;
  const released = action.ports === undefined ? "" : ` (releases its ports ${action.ports.join(", ")})`;
  return [`mark handoff ${action.id} removed: ${why}${released}${action.closesWindow ? ", and close its window" : ""}`];
}

/** What `prune` says of what it leaves alone. */
export function pruneNoteSentence(note: PruneNote): string {
  switch (note.code) {
    case "merged_left":
      return `left handoff ${note.id} (${note.branch}, merged) alone: ${note.why}`;
    case "entry_left":
      return `left git's entry for ${note.path} (handoff ${note.id}) alone: ${entryKeptClause(note.why, note.id)}`;
    case "store_left":
      return `left in the store: ${note.name}: ${note.reason}`;
  }
}

function entryKeptClause(why: EntryKept, id: string): string {
  switch (why.code) {
    case "not_found":
      return "it could not be found";
    case "moved":
      return `the checkout was moved by hand to ${why.movedTo}, which uses it`;
    case "staged":
      return `it holds ${counted(why.count, "staged change")} (pi-handoff remove ${id} --dry-run lists them)`;
    case "unread":
      return why.facts.join("; ");
  }
}

/** What `prune` says of an action it did not carry out, or of what a done one left. */
export function pruneResultSentence(facts: PruneResultFacts): string {
  switch (facts.code) {
    case "removal_refused":
      return `${stripPeriod(facts.message)}; it was left alone.`;
    case "busy":
      return `${facts.message.replace(/; nothing was done.*$/, "")}; ${facts.left === "entry" ? "its entry was" : "it was"} left alone.`;
    case "entry_changed":
      return `Handoff ${facts.id}'s worktree entry changed since it was checked; it was left alone.`;
    case "handoff_changed":
      return `Handoff ${facts.id} changed since it was checked; it was left alone.`;
    case "retired_with_problem":
      return `Handoff ${facts.id} was retired, but it ${facts.problem}.`;
    case "retired_with_note":
      return `Handoff ${facts.id} was retired; ${facts.note}.`;
    case "leftovers_in_use":
      return `${counted(facts.names.length, "leftover file")} in the store ${facts.names.length === 1 ? "was" : "were"} in use again when swept (${facts.names.join(", ")}); they were left alone.`;
  }
}

/** What a removal did, one clause each, for its message and its record. */
export type RemovalDone =
  | { code: "kept_commits"; count: number; id: string }
  | { code: "deleted_worktree"; path: string }
  | { code: "dropped_entry"; path: string }
  | { code: "released_claim"; directory: string }
  | { code: "closed_window" }
  | { code: "window_left_open" }
  | { code: "kept_branch"; branch: string; why?: string }
  | { code: "deleted_branch"; branch: string }
  | { code: "released_ports"; ports: readonly number[] }
  | { code: "swept_temp_files"; count: number }
  /** A clause already worded (a window that stays open, a store file that could not go). */
  | { code: "said"; clause: string };

export function doneClause(done: RemovalDone): string {
  switch (done.code) {
    case "kept_commits":
      return `kept ${counted(done.count, "commit")} of its HEAD history under refs/pi-handoff/${done.id}/kept/`;
    case "deleted_worktree":
      return `deleted worktree ${done.path}`;
    case "dropped_entry":
      return `dropped git's entry for ${done.path}`;
    case "released_claim":
      return `removed the empty directory ${done.directory}`;
    case "closed_window":
      return "closed its window";
    case "window_left_open":
      return "left its window open (it no longer shows the worktree)";
    case "kept_branch":
      return done.why === undefined ? `kept branch ${done.branch}` : `kept branch ${done.branch} (${done.why})`;
    case "deleted_branch":
      return `deleted branch ${done.branch}`;
    case "released_ports":
      return `released ports ${done.ports.join(", ")}`;
    case "swept_temp_files":
      return `deleted ${counted(done.count, "temp file")} a killed writer left in the store`;
    case "said":
      return done.clause;
  }
}

/** What a removal that ran says: done, or why it stopped (the plan's refusals are `removalRefusalSentence`'s). */
export type RemovalActFacts =
  | { code: "not_found"; id: string; storeDir: string }
  | { code: "not_confirmed"; id: string }
  | { code: "keep_failed"; id: string; error: string }
  /** The backend refused the worktree step (`why`: its sentence). */
  | { code: "step_refused"; id: string; why: string }
  | { code: "worktree_failed"; id: string; error: string }
  | { code: "claim_changed"; id: string; directory: string }
  | { code: "claim_failed"; id: string; directory: string; error: string }
  | { code: "removed"; id: string; done: readonly RemovalDone[] };

export function removalActSentence(facts: RemovalActFacts): string {
  const { id } = facts;
  switch (facts.code) {
    case "not_found":
      return `There is no handoff with id ${id} in ${facts.storeDir}.`;
    case "not_confirmed":
      return `Handoff ${id} changed since it was shown; nothing was removed.`;
    case "keep_failed":
      return `Could not keep the commits only the worktree's HEAD history holds (${facts.error}); handoff ${id} was not removed.`;
    case "step_refused":
      return `${facts.why} Handoff ${id} was not removed.`;
    case "worktree_failed":
      return `Could not remove the worktree: ${facts.error} Handoff ${id} was not removed.`;
    case "claim_changed":
      return `The directory ${facts.directory} is no longer an empty directory; handoff ${id} was not removed.`;
    case "claim_failed":
      return `Could not remove the empty directory ${facts.directory}: ${facts.error}; handoff ${id} was not removed.`;
    case "removed":
      return `Removed handoff ${id}: ${facts.done.map(doneClause).join(", ")}.`;
  }
}

/** Why a retired handoff's window stays open. */
export type WindowStaysOpen =
  | { code: "unreachable"; message: string }
  | { code: "closes_only_with_worktree" }
  | { code: "close_failed"; message: string }
  | { code: "not_showing_worktree" };

export function windowStaysOpenClause(location: Manifest["mux"], why: WindowStaysOpen): string {
  const stays = `its window (${describeLocation(location)}) stays open`;
  switch (why.code) {
    case "unreachable":
    case "close_failed":
      return `${stays}: ${stripPeriod(why.message)}; close it yourself`;
    case "closes_only_with_worktree":
      return `${stays}: this backend closes a workspace only with its worktree; close it yourself`;
    case "not_showing_worktree":
      return `${stays}: it no longer shows the worktree`;
  }
}

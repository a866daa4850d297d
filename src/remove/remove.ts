/**
 * `remove` and `prune`: retiring handoffs, and what goes with them.
 *
 * Invariants:
 * - Nothing is removed while a Pi runs on the child session or in the worktree, or while the
 *   handoff is still being set up.
 * - Without `force`, uncommitted, untracked or ignored files (but what the handoff's own setup
 *   put there and still equals its source: its symlinks, unchanged copies), unmerged commits,
 *   changes staged in git's entry of a vanished checkout, and a checkout no one could check for a
 *   running Pi (the writer check could not run, `writerUnknown`) refuse the removal; the plan (what
 *   would be lost, file by file and commit by commit) is handed to the caller BEFORE anything is
 *   done, with or without `force`, and with every refusal once the handoff could be looked at
 *   (a live Pi too), so what a removal would lose is known before anyone quits anything.
 * - A dry run and a real run share one plan and one set of checks (`planRemoval`): what would
 *   refuse the worktree step whatever `force` says (a locked checkout, a backend this process
 *   cannot drive, a workspace the backend may not open: `removalBlocker`) refuses the plan, so
 *   nothing is announced as about to happen that the step would then refuse. Refusals `force`
 *   cannot lift come before the one it can (`needs_force`).
 * - Commits only the worktree's own HEAD history holds (a detached experiment) are kept reachable,
 *   under `refs/pi-handoff/<id>/kept/<sha>`, before the worktree and its history go.
 * - git's entry of a checkout that is gone from where the handoff made it is dropped only when no
 *   checkout moved by hand is found using it (beside where it was, or beside the repository); one
 *   found refuses the removal, with or without `force`.
 * - The branch is kept unless `deleteBranch` is asked AND nothing on it is unmerged; an unmerged
 *   branch is never deleted, even with `force`, so no commit is ever lost through a removal.
 * - The worktree goes through the backend (`RecoverableMultiplexer.removeWorktree`: the window is
 *   closed, then git removes the checkout); a directory git does not know as the handoff's worktree
 *   is left in place, since nothing says what it holds, except an empty one (the claim of a
 *   checkout git never made): its window is closed as above and it is removed only while still
 *   empty (`rmdir`, which fails on anything put there since).
 * - The manifest becomes `removed` with the git state captured just before; it is kept as a record.
 * - `prune` only does what loses nothing, and only to what this package made: it drops git's entry
 *   of a handoff's vanished worktree (never `git worktree prune`, which would drop every vanished
 *   entry of the repository, a person's own moved worktree too) when that entry holds no staged
 *   change and no moved checkout uses it, keeping its HEAD history's commits as above; and it
 *   retires handoffs whose worktree is gone and whose branch is merged or gone, or that failed
 *   before any worktree existed. It deletes no branch and no file of the user's.
 *   A retired handoff's window is closed as `remove` closes it (only while it still shows the gone
 *   worktree); when it cannot be, the result says why and what to do.
 * - One actor: a removal (its re-check and its action) and each prune retirement run under the
 *   handoff's action lock; while another command holds it they are refused at once (`busy`).
 * - The store's own leftovers (temp files of dead writers, dead holders' action locks, stale lock
 *   directories: `ManifestStore.leftovers`) are listed by `prune` and swept by it; a retirement
 *   (remove, or prune) sweeps its own handoff's, and deletes its launch files (child/retire.ts).
 */
import { deleteChildState } from "../child/child-state.ts";
import { deleteLaunchFiles } from "../child/retire.ts";
import { lstat, readlink, rmdir } from "node:fs/promises";
import path from "node:path";
import type { CommitSummary, MergedBy, WorktreeAdminEntry } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { errorCode, isEmptyDirectory, sameContent, unlessMissing } from "../fs/probe.ts";
import { isActionBusy, type ManifestStore, type StoreLeftover } from "../manifest/store.ts";
import { hasWorkspace, type GatherDeps } from "../inventory/gather.ts";
import { isInProgress, isPrunable } from "../inventory/classify.ts";
import { buildInventory, inspectHandoff, type InventoryDeps } from "../inventory/inventory.ts";
import type { CommitList, HandoffReport, MergedFact } from "../inventory/report-schema.ts";
import { counted, printable, stripPeriod } from "../text.ts";
import { errorClause, errorSentence } from "../errors.ts";
import { describeLocation } from "../mux/registry.ts";
import { lockedWorktreeRefusal } from "../mux/git-worktree.ts";

export interface RemovalDeps extends GatherDeps {
  store: ManifestStore;
}

export interface RemoveOptions {
  /** Delete uncommitted and untracked files with the worktree, and remove despite unmerged commits. */
  force: boolean;
  /** Delete the branch too, if it is merged (an unmerged branch is never deleted). */
  deleteBranch: boolean;
  /** How the user asks for `force` where this removal runs (default "add --force": the command's own flag). */
  forceHint?: string;
}

export type BranchPlan =
  | { code: "keep" }
  /** The handoff went into a branch that existed before it (`--existing`): not its to delete. */
  | { code: "keep_preexisting" }
  /** `by`: the rule that says it is merged (git re-checks it right before deleting). */
  | { code: "delete"; tip: string; mergeTarget: { ref: string; sha: string }; by: MergedBy }
  | { code: "keep_unmerged"; unmerged: number }
  | { code: "gone" }
  | { code: "unknown"; message: string };

export interface RemovalPlan {
  manifest: Manifest;
  report: HandoffReport;
  /**
   * What the worktree step does: remove the checkout, drop git's entry for a vanished one, give
   * back the empty directory claimed for a checkout git never made, nothing, or leave an unknown
   * directory alone.
   */
  worktree: "remove" | "unregister" | "release_claim" | "already_gone" | "leave_orphaned";
  /** Files whose changes are deleted for good with the worktree (ignored ones too). */
  lostFiles: { dirty: string[]; untracked: string[]; ignored: string[] };
  /** Commits only the worktree's own HEAD history holds, and the refs that keep them before it goes. */
  kept: { commits: CommitSummary[]; refs: { ref: string; sha: string }[] };
  /** git's entry of a checkout gone from where the handoff made it: what it still holds, a moved checkout using it. */
  entry?: { dir: string; staged: string[]; movedTo?: string };
  /** Facts about what is at stake that could not be read (each a clause): they refuse without `force`. */
  unread: string[];
  /** Commits not merged into the base: they stay on the (kept) branch. */
  unmerged: CommitList | undefined;
  branch: BranchPlan;
  /** Whether the window/workspace is open and will be closed with the worktree. */
  closesWorkspace: boolean;
}

export type RemovalRefusal =
  | "not_found"
  | "invalid"
  | "removed"
  | "child_running"
  | "in_progress"
  | "needs_force"
  | "not_confirmed"
  | "busy"
  /** The worktree was moved by hand: its checkout, elsewhere, still uses git's entry. */
  | "moved"
  /**
   * The worktree step would be refused whatever `force` says: a locked checkout, a window whose
   * backend this process cannot drive, a workspace the backend would have to open but may not
   * (a person's Herdr workspace sitting in the checkout).
   */
  | "blocked";

export type PlanOutcome =
  | { code: "planned"; plan: RemovalPlan }
  /**
   * `plan` is set whenever the handoff's things could be looked at (all but not_found, invalid,
   * removed, in_progress), so what is at stake is listed with the refusal: a dry run and a real run
   * refused alike say the same. Only `needs_force` is lifted by `force`.
   */
  | { code: "refused"; reason: RemovalRefusal; message: string; plan?: RemovalPlan };

export type RemoveOutcome =
  | { code: "removed"; manifest: Manifest; plan: RemovalPlan; message: string }
  | { code: "refused"; reason: RemovalRefusal; message: string; plan?: RemovalPlan }
  | { code: "failed"; plan: RemovalPlan; message: string };

/** What removing handoff `id` would do and lose, or why it may not be removed. Changes nothing. */
export async function planRemoval(deps: RemovalDeps, id: string, options: RemoveOptions): Promise<PlanOutcome> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return { code: "refused", reason: inspected.code, message: inspected.message };
  const { report, manifest } = inspected;
  const refusal = removalRefusal(report, id);
  if (refusal !== undefined) return refusal;
  const plan = await removalPlanOf(deps, manifest, report, options);
  // What `force` cannot lift comes first, so no one is told to add --force only to be refused then.
  const live = liveWriterRefusal(report, id);
  if (live !== undefined) return { ...live, plan };
  if (plan.entry?.movedTo !== undefined) {
    return {
      code: "refused",
      reason: "moved",
      message: `The worktree of handoff ${id} was moved by hand to ${plan.entry.movedTo}, which still uses git's entry for it (${plan.entry.dir}); nothing was removed. Tell git where it is (git worktree repair ${plan.entry.movedTo}); then pi-handoff remove ${id} records the handoff removed and leaves that checkout alone.`,
      plan,
    };
  }
  const blocked = await worktreeStepBlocker(deps, manifest, report);
  if (blocked !== undefined)
    return { code: "refused", reason: "blocked", message: `${blocked} Handoff ${id} was not removed.`, plan };
  const stakes = options.force ? [] : stakesNeedingForce(plan);
  if (stakes.length > 0) {
    return {
      code: "refused",
      reason: "needs_force",
      message: `Handoff ${id} has ${stakes.map((stake) => stake.phrase).join(" and ")}; nothing was removed (${options.forceHint ?? "add --force"} to remove it anyway: ${stakes.map((stake) => stake.forced).join(", ")}).`,
      plan,
    };
  }
  return { code: "planned", plan };
}

/** Why nothing of the handoff may be looked at for removal now; undefined: it may. */
function removalRefusal(report: HandoffReport, id: string): Extract<PlanOutcome, { code: "refused" }> | undefined {
  const status = report.status;
  if (status.code === "removed") {
    const branch =
      report.branchState.code === "present"
        ? `; its branch ${report.branch} is kept (git branch -d ${report.branch} deletes it once merged)`
        : "";
    return {
      code: "refused",
      reason: "removed",
      message: `Handoff ${id} was already removed, so there is nothing left to remove${branch}; pi-handoff inspect ${id} shows its record.`,
    };
  }
  if (isInProgress(report)) {
    return {
      code: "refused",
      reason: "in_progress",
      message: `Handoff ${id} is still being set up (${report.state}); try again once it has finished.`,
    };
  }
  return undefined;
}

/** The refusal while a Pi runs on the child session or in the worktree (its plan is listed with it). */
function liveWriterRefusal(report: HandoffReport, id: string): Extract<PlanOutcome, { code: "refused" }> | undefined {
  if (report.status.code !== "child_running") return undefined;
  const pids = report.status.writers.map((writer) => writer.pid).join(", ");
  return {
    code: "refused",
    reason: "child_running",
    message: `Handoff ${id} still has a live Pi (pid ${pids}); quit it first, then remove the handoff.`,
  };
}

/**
 * The report with `relaunch` and `remove` left out of its actions when the worktree step is
 * blocked (`worktreeStepBlocker`) while the window is closed: a removal would be refused, and a
 * relaunch reopens the window through the same backend check. `blocked`: why, one sentence.
 */
export async function withoutBlockedActions(
  deps: GatherDeps,
  manifest: Manifest,
  report: HandoffReport,
): Promise<{ report: HandoffReport; blocked?: string }> {
  if (!report.actions.includes("remove") || report.workspace.code === "open") return { report };
  const blocked = await worktreeStepBlocker(deps, manifest, report);
  if (blocked === undefined) return { report };
  const actions = report.actions.filter((action) => action !== "remove" && action !== "relaunch");
  return { report: { ...report, actions }, blocked };
}

/**
 * What would stop the worktree step whatever `force` says, asked of git and of the backend without
 * changing anything (the checks the step itself makes before it acts: `removeCheckout`), as one
 * sentence; undefined when nothing would.
 */
export async function worktreeStepBlocker(
  deps: GatherDeps,
  manifest: Manifest,
  report: HandoffReport,
): Promise<string | undefined> {
  const step = WORKTREE_STEP[report.worktree.code];
  if (step !== "remove" && step !== "unregister") return undefined;
  const request = { mainCheckout: manifest.repo.root, worktreePath: manifest.worktree.path };
  const locked = await lockedWorktreeRefusal(deps.git, request.mainCheckout, request.worktreePath);
  if (locked !== undefined) return locked.message;
  const location = report.mux;
  if (!hasWorkspace(location)) return undefined;
  const mux = deps.muxFor(location);
  if (!mux.ok) return mux.message;
  const blocked = await mux.mux.removalBlocker?.(location, request);
  return blocked === undefined || blocked.ok ? undefined : blocked.message;
}

/** The worktree step for each fact about the checkout (report-schema.ts `WorktreeFact`). */
const WORKTREE_STEP: Readonly<Record<HandoffReport["worktree"]["code"], RemovalPlan["worktree"]>> = {
  present: "remove",
  prunable: "unregister",
  claimed: "release_claim",
  missing: "already_gone",
  orphaned: "leave_orphaned",
};

async function removalPlanOf(
  deps: RemovalDeps,
  manifest: Manifest,
  report: HandoffReport,
  options: RemoveOptions,
): Promise<RemovalPlan> {
  const worktree = WORKTREE_STEP[report.worktree.code];
  const unread: string[] = [];
  const lostFiles =
    worktree === "remove" && report.changes !== undefined
      ? await filesLost(deps, manifest, report.changes, unread)
      : { dirty: [], untracked: [], ignored: [] };
  const entryFacts =
    worktree === "remove" || worktree === "unregister"
      ? await entryAtStake(deps, manifest, worktree === "unregister", unread)
      : { kept: { commits: [], refs: [] } };
  const branchState = report.branchState;
  return {
    manifest,
    report,
    worktree,
    lostFiles,
    ...entryFacts,
    unread,
    unmerged: branchState.code === "present" ? branchState.unmerged : undefined,
    branch: planBranch(manifest, report, options.deleteBranch),
    // A worktree already gone may still have its window, in the deleted directory (git removes a
    // directory it was killed checking out): the backend closes it only while it still shows it.
    closesWorkspace: worktree !== "leave_orphaned" && report.workspace.code === "open",
  };
}

/** The checkout's files a removal deletes for good: dirty, untracked and ignored, but what the handoff's setup put there unchanged. */
async function filesLost(
  deps: RemovalDeps,
  manifest: Manifest,
  changes: NonNullable<HandoffReport["changes"]>,
  unread: string[],
): Promise<RemovalPlan["lostFiles"]> {
  let ignored: string[] = [];
  try {
    ignored = (await deps.git.worktreeStatus(manifest.worktree.path, { ignored: true })).ignoredFiles ?? [];
  } catch (error) {
    unread.push(`the files git ignores in ${manifest.worktree.path} could not be read (${errorClause(error)})`);
  }
  const kept = async (entries: readonly string[]): Promise<string[]> => {
    const lost: string[] = [];
    for (const entry of entries) if (!(await setupLeftUnchanged(manifest, entry))) lost.push(entry);
    return lost;
  };
  return { dirty: changes.dirtyFiles, untracked: await kept(changes.untrackedFiles), ignored: await kept(ignored) };
}

/**
 * Whether `entry` (a path of the worktree, a directory ending in `/`) is what the handoff's own
 * setup put there and deleting it loses nothing: a symlink it made, still pointing into the main
 * checkout, or a copy still equal to its source.
 */
async function setupLeftUnchanged(manifest: Manifest, entry: string): Promise<boolean> {
  const name = entry.replace(/\/$/, "");
  const root = manifest.repo.root;
  const inWorktree = path.join(manifest.worktree.path, name);
  if (manifest.setup?.symlinked?.includes(name) === true) {
    return (await readlink(inWorktree).catch(() => undefined)) === path.join(root, name);
  }
  const copied = manifest.setup?.copied?.some((copy) => name === copy || name.startsWith(`${copy}/`)) === true;
  return copied && (await sameContent(path.join(root, name), inWorktree));
}

/** git's entry of the worktree: the commits only its HEAD history holds and, for a vanished checkout, what else it holds. */
async function entryAtStake(
  deps: RemovalDeps,
  manifest: Manifest,
  vanished: boolean,
  unread: string[],
): Promise<Pick<RemovalPlan, "kept" | "entry">> {
  const none = { kept: { commits: [], refs: [] } };
  let entry: WorktreeAdminEntry | undefined;
  try {
    entry = await deps.git.worktreeEntry(manifest.repo.commonDir, manifest.worktree.path);
  } catch (error) {
    unread.push(`git's entry for ${manifest.worktree.path} could not be read (${errorClause(error)})`);
    return none;
  }
  if (entry === undefined) return none;
  let kept: RemovalPlan["kept"] = none.kept;
  try {
    const held = await deps.git.reflogOnlyCommits(manifest.repo.root, entry);
    kept = { commits: held.commits, refs: held.tips.map((sha) => ({ ref: keptRef(manifest.id, sha), sha })) };
  } catch (error) {
    unread.push(`the commits of its HEAD history could not be read (${errorClause(error)})`);
  }
  if (!vanished) return { kept };
  let staged: string[] = [];
  try {
    staged = await deps.git.stagedInEntry(entry);
  } catch (error) {
    unread.push(`the changes staged in git's entry ${entry.dir} could not be read (${errorClause(error)})`);
  }
  const near = [path.dirname(manifest.worktree.path), path.dirname(manifest.repo.root)];
  const movedTo = await deps.git.movedCheckoutOf(entry, near);
  return { kept, entry: { dir: entry.dir, staged, ...(movedTo === undefined ? {} : { movedTo }) } };
}

/** Where a commit only a retired worktree's HEAD history held is kept. */
export function keptRef(id: string, sha: string): string {
  return `refs/pi-handoff/${id}/kept/${sha}`;
}

/**
 * The work a removal without `force` would lose (or could not check): what it is, and what
 * `force` does to it, one phrase each, so the refusal names only what applies.
 */
function stakesNeedingForce(plan: RemovalPlan): { phrase: string; forced: string }[] {
  const { report, lostFiles, unmerged, manifest } = plan;
  const stakes: { phrase: string; forced: string }[] = [];
  const changed = lostFiles.dirty.length + lostFiles.untracked.length + lostFiles.ignored.length;
  if (changed > 0)
    stakes.push({
      phrase: counted(changed, "uncommitted, untracked or ignored file"),
      forced: changed === 1 ? "the file listed is deleted" : "the files listed are deleted",
    });
  const staged = plan.entry?.staged.length ?? 0;
  if (staged > 0)
    stakes.push({
      phrase: `${counted(staged, "change")} staged in git's entry for its vanished checkout`,
      forced: "git's entry goes with what is staged in it",
    });
  for (const fact of plan.unread) stakes.push({ phrase: fact, forced: "it is removed without that check" });
  if (unmerged !== undefined && unmerged.total > 0)
    stakes.push({
      phrase: `${counted(unmerged.total, "commit")} not merged into ${branchStateTarget(report)}`,
      forced: `the ${unmerged.total === 1 ? "commit stays" : "commits stay"} on branch ${manifest.branch}`,
    });
  if (report.changes === undefined && plan.worktree === "remove")
    stakes.push({ phrase: "changes that could not be read", forced: "whatever is uncommitted there is deleted" });
  // A Pi no one could see may still be working in the checkout that would go.
  if (report.writerUnknown !== undefined && plan.worktree === "remove")
    stakes.push({
      phrase: `a session that could not be checked for a running Pi (${stripPeriod(report.writerUnknown)})`,
      forced: "the checkout goes even if a Pi still works in it",
    });
  return stakes;
}

/**
 * What happens to the handoff's branch: deleted only when asked, only when the handoff created it
 * (not with `--existing`), and only when every commit on it is merged; otherwise kept, saying why.
 */
function planBranch(manifest: Manifest, report: HandoffReport, deleteBranch: boolean): BranchPlan {
  const state = report.branchState;
  if (state.code === "gone") return { code: "gone" };
  if (state.code === "unknown") return { code: "unknown", message: state.message };
  if (!deleteBranch) return { code: "keep" };
  if (manifest.setup?.existingBranch === true) return { code: "keep_preexisting" };
  if (state.unmerged.total > 0) return { code: "keep_unmerged", unmerged: state.unmerged.total };
  return { code: "delete", tip: state.tip, mergeTarget: state.mergeTarget, by: mergedByOf(state.merged) };
}

/** The rule git re-checks before deleting a branch (a branch with no commits of its own is in the target by ancestry). */
function mergedByOf(merged: MergedFact | undefined): MergedBy {
  if (merged?.rule === "landing" && merged.landed !== undefined) return { rule: "landing", result: merged.landed };
  if (merged?.rule === "patch" || merged?.rule === "tree") return { rule: merged.rule };
  return { rule: "ancestry" };
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
 * The question to ask after a removal was confirmed, when deleting the branch too would lose
 * nothing (the rule of `planBranch`), and the plan to confirm then; undefined: do not offer it.
 */
export function branchDeletionOffer(
  plan: RemovalPlan,
): { question: string; detail: string; plan: RemovalPlan } | undefined {
  const branch = planBranch(plan.manifest, plan.report, true);
  if (branch.code !== "delete") return undefined;
  return {
    question: `Also delete branch ${plan.manifest.branch}?`,
    detail:
      branch.by.rule === "ancestry"
        ? `Everything on it is in ${branch.mergeTarget.ref}, so no commit is lost.`
        : `${capitalized(mergedPhrase(branch.by, branch.mergeTarget.ref))}, so no change is lost.`,
    plan: { ...plan, branch },
  };
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
      `${counted(unmerged.total, "commit")} not merged into ${branchStateTarget(report)} ${tense} stay on branch ${manifest.branch}, which ${tense} be kept:`,
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

/**
 * Removes handoff `id`: plans (re-checking for a live Pi), hands the plan to `onPlan` before
 * anything is done (`proceeding`: it is about to be carried out, not refused; returning false
 * there cancels, e.g. when the plan is not the one a person confirmed), then acts and records the removal.
 */
export async function removeHandoff(
  deps: RemovalDeps,
  id: string,
  options: RemoveOptions,
  onPlan: (plan: RemovalPlan, proceeding: boolean) => boolean | void = () => {},
): Promise<RemoveOutcome> {
  const read = await deps.store.read(id);
  if (!read.ok)
    return {
      code: "refused",
      reason: read.code,
      message: read.code === "not_found" ? `There is no handoff with id ${id} in ${deps.store.dir}.` : read.message,
    };
  const outcome = await deps.store.withActionLock(id, "remove", () => removeLocked(deps, id, options, onPlan));
  return isActionBusy(outcome) ? { code: "refused", reason: "busy", message: outcome.message } : outcome;
}

async function removeLocked(
  deps: RemovalDeps,
  id: string,
  options: RemoveOptions,
  onPlan: (plan: RemovalPlan, proceeding: boolean) => boolean | void,
): Promise<RemoveOutcome> {
  // Planned under the lock, so the plan shown is the one carried out.
  const planned = await planRemoval(deps, id, options);
  if (planned.code === "refused") {
    if (planned.plan !== undefined) onPlan(planned.plan, false);
    return planned;
  }
  const plan = planned.plan;
  if (onPlan(plan, true) === false) {
    return {
      code: "refused",
      reason: "not_confirmed",
      message: `Handoff ${id} changed since it was shown; nothing was removed.`,
      plan,
    };
  }
  const gitState = await gitStateBefore(deps, plan);
  // Kept before the worktree (and with it its HEAD history) goes: a kill in between leaves a ref too many, never a lost commit.
  if (plan.kept.refs.length > 0) {
    try {
      await deps.git.keepCommits(plan.manifest.repo.root, plan.kept.refs);
    } catch (error) {
      return {
        code: "failed",
        plan,
        message: `Could not keep the commits only the worktree's HEAD history holds (${errorClause(error)}); handoff ${id} was not removed.`,
      };
    }
  }
  // git's own --force only where the plan lists what it deletes: consent to remove despite an
  // unchecked writer is not consent to delete files that writer may be making.
  const worktree = await removeCheckout(deps, id, plan, options.force && checkoutNeedsForce(plan));
  if (!worktree.ok) return { code: "failed", plan, message: worktree.message };
  const done: string[] = [];
  if (plan.kept.refs.length > 0)
    done.push(
      `kept ${counted(plan.kept.commits.length, "commit")} of its HEAD history under refs/pi-handoff/${plan.manifest.id}/kept/`,
    );
  if (plan.worktree === "remove") done.push(`deleted worktree ${plan.manifest.worktree.path}`);
  if (plan.worktree === "unregister") done.push(`dropped git's entry for ${plan.manifest.worktree.path}`);
  done.push(...(worktree.said ?? []));
  if (worktree.windowLeftOpen) done.push("left its window open (it no longer shows the worktree)");
  const branch = await settleBranch(deps, plan);
  if (branch !== undefined) done.push(branch);
  // Removed, its ports count as held no more (ports/reserve.ts): the next handoff may take them.
  if (plan.manifest.ports !== undefined) done.push(`released ports ${plan.manifest.ports.join(", ")}`);
  const removed = await recordRemoval(deps, id, plan, gitState, done);
  const retired = await retireStoreFiles(deps, removed);
  if (retired.swept > 0) done.push(`deleted ${counted(retired.swept, "temp file")} a killed writer left in the store`);
  if (retired.problem !== undefined) done.push(retired.problem);
  return { code: "removed", manifest: removed, plan, message: `Removed handoff ${id}: ${done.join(", ")}.` };
}

/** The worktree's git state just before it goes, for the record (when readable). */
async function gitStateBefore(deps: RemovalDeps, plan: RemovalPlan): Promise<Manifest["gitState"]> {
  if (plan.worktree !== "remove") return undefined;
  try {
    return await deps.git.captureState(plan.manifest.worktree.path, plan.manifest.base.sha);
  } catch {
    return undefined; // Recorded when readable; the plan already listed what is at stake.
  }
}

/** Whether git must be forced to remove the checkout: it holds files the plan listed as lost, or its changes could not be read. */
function checkoutNeedsForce({ lostFiles, report, entry }: RemovalPlan): boolean {
  return (
    lostFiles.dirty.length + lostFiles.untracked.length + lostFiles.ignored.length > 0 ||
    report.changes === undefined ||
    (entry?.staged.length ?? 0) > 0
  );
}

/** What the worktree step did: whether a window it should have closed stays open, and what else to say (the claim's release). */
type CheckoutStep = { ok: true; windowLeftOpen: boolean; said?: string[] } | { ok: false; message: string };

/** The worktree step of the plan: through the backend when there is a window, else git alone. */
async function removeCheckout(deps: RemovalDeps, id: string, plan: RemovalPlan, force: boolean): Promise<CheckoutStep> {
  if (plan.worktree === "release_claim") return releaseClaim(deps, id, plan);
  if (plan.worktree === "already_gone" && plan.closesWorkspace) {
    const closed = await closeRetiredWindow(deps, plan.report);
    return {
      ok: true,
      windowLeftOpen: false,
      said: closed.closed ? ["closed its window"] : closed.note === undefined ? [] : [closed.note],
    };
  }
  if (plan.worktree !== "remove" && plan.worktree !== "unregister") return { ok: true, windowLeftOpen: false };
  const { manifest } = plan;
  const request = { mainCheckout: manifest.repo.root, worktreePath: manifest.worktree.path, force };
  // The recorded window, or the one a killed step made without recording it (found by its intent).
  const location = plan.report.mux;
  const mux = hasWorkspace(location) ? deps.muxFor(location) : undefined;
  if (mux !== undefined && !mux.ok) {
    // Its workspace belongs to a backend this process cannot drive: removing the checkout under
    // it would leave that workspace in a deleted directory (the plan refuses it first: worktreeStepBlocker).
    return { ok: false, message: `${mux.message} Handoff ${id} was not removed.` };
  }
  if (mux !== undefined) {
    const removed = await mux.mux.removeWorktree(location, request);
    if (!removed.ok) return { ok: false, message: `${removed.message} Handoff ${id} was not removed.` };
    // The backend leaves open a window that no longer shows the worktree (someone uses it).
    return { ok: true, windowLeftOpen: plan.closesWorkspace && (await mux.mux.exists(location)) };
  }
  // No window was ever made: git alone removes the checkout.
  try {
    await deps.git.removeWorktree(request.mainCheckout, request.worktreePath, { force: request.force });
  } catch (error) {
    return {
      ok: false,
      message: `Could not remove the worktree: ${errorSentence(error)} Handoff ${id} was not removed.`,
    };
  }
  return { ok: true, windowLeftOpen: false };
}

/**
 * Gives back the directory a killed handoff claimed for a checkout git never made: looked at again
 * (still a real, empty directory), its window closed while it still shows that directory, then the
 * directory removed with `rmdir`, which fails on anything put there since, so nothing is lost.
 */
async function releaseClaim(deps: RemovalDeps, id: string, plan: RemovalPlan): Promise<CheckoutStep> {
  const directory = plan.manifest.worktree.path;
  const changed = `The directory ${directory} is no longer an empty directory; handoff ${id} was not removed.`;
  const empty = await isEmptyDirectory(directory);
  // Not empty and still there (something in it, or a link or file in its place): no longer the claim.
  if (!empty && (await unlessMissing(() => lstat(directory)).catch(() => true))) return { ok: false, message: changed };
  const said: string[] = [];
  if (plan.closesWorkspace) {
    const closed = await closeRetiredWindow(deps, plan.report);
    if (closed.note !== undefined) said.push(closed.note);
  }
  // Gone since the plan: nothing left to give back.
  if (!empty) return { ok: true, windowLeftOpen: false, said };
  try {
    await rmdir(directory);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return { ok: true, windowLeftOpen: false, said };
    if (errorCode(error) === "ENOTEMPTY" || errorCode(error) === "EEXIST") return { ok: false, message: changed };
    return {
      ok: false,
      message: `Could not remove the empty directory ${directory}: ${errorClause(error)}; handoff ${id} was not removed.`,
    };
  }
  return { ok: true, windowLeftOpen: false, said: [`removed the empty directory ${directory}`, ...said] };
}

/** Deletes the branch when the plan says so (git re-checks its tip and merge); what happened, for the record. */
async function settleBranch(deps: RemovalDeps, plan: RemovalPlan): Promise<string | undefined> {
  const { manifest, branch } = plan;
  if (branch.code === "gone") return undefined;
  if (branch.code !== "delete") return `kept branch ${manifest.branch}`;
  try {
    // Merged by a landing into another branch: git re-checks it against that branch.
    const into =
      branch.by.rule === "landing"
        ? ((await landingTargetSha(deps, manifest)) ?? branch.mergeTarget.sha)
        : branch.mergeTarget.sha;
    await deps.git.deleteBranch(manifest.repo.root, manifest.branch, {
      expectedTip: branch.tip,
      mergedInto: into,
      by: branch.by,
    });
    return `deleted branch ${manifest.branch}`;
  } catch (error) {
    return `kept branch ${manifest.branch} (${errorClause(error)})`;
  }
}

/** Where the branch of the latest recorded landing is now. */
async function landingTargetSha(deps: RemovalDeps, manifest: Manifest): Promise<string | undefined> {
  const landing = [...(manifest.landings ?? [])].reverse().find((entry) => entry.state === "landed");
  return landing === undefined ? undefined : deps.git.resolveCommit(manifest.repo.root, `refs/heads/${landing.into}`);
}

function capitalized(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

/**
 * What goes with a retired handoff from the store (its record stays): the temp files a killed
 * writer left beside its manifest, and its launch files (child/retire.ts). The handoff is recorded
 * removed already, so a file that cannot go is a `problem` to say, not a throw.
 */
async function retireStoreFiles(deps: RemovalDeps, removed: Manifest): Promise<{ swept: number; problem?: string }> {
  const id = removed.id;
  // Each attempted whatever the other did; what stays is named, since a removed handoff's own
  // files are not leftovers that prune lists (its manifest names them).
  const problems: string[] = [];
  let swept = 0;
  try {
    swept = (
      await deps.store.sweepLeftovers(
        (leftover) => leftover.kind === "temp" && leftover.name.startsWith(`.${id}.json.`),
      )
    ).length;
  } catch (error) {
    problems.push(`could not delete its temp files .${id}.json.* in ${deps.store.dir} (${errorClause(error)})`);
  }
  const launch = await deleteLaunchFiles(deps.store.pathFor(id), id);
  if (launch.left.length > 0) {
    const named = launch.left.map((file) => `${file.path} (${file.reason})`).join(", ");
    problems.push(
      `could not delete its ${launch.left.length === 1 ? "launch file" : "launch files"} ${named}; delete ${launch.left.length === 1 ? "it" : "them"} by hand`,
    );
  }
  // The state its child last published (exited, most often) speaks for nobody now.
  const sessionFile = removed.child.sessionFile;
  if (sessionFile !== undefined) {
    try {
      await deleteChildState(deps.agentDir, sessionFile, id);
    } catch (error) {
      problems.push(`could not delete its child's state file (${errorClause(error)}); delete it by hand`);
    }
  }
  return problems.length === 0 ? { swept } : { swept, problem: problems.join("; ") };
}

function recordRemoval(
  deps: RemovalDeps,
  id: string,
  plan: RemovalPlan,
  gitState: Manifest["gitState"],
  done: readonly string[],
): Promise<Manifest> {
  return deps.store.transition(
    id,
    "removed",
    (m) => {
      if (gitState !== undefined) m.gitState = gitState;
      // The record names what the handoff made, also what a killed step left unrecorded.
      if (!hasWorkspace(m.mux) && hasWorkspace(plan.report.mux)) m.mux = plan.report.mux;
      if (m.child.sessionFile === undefined && plan.report.childSessionFile !== undefined)
        m.child = { ...m.child, sessionFile: plan.report.childSessionFile };
    },
    `removed with pi-handoff: ${done.join(", ")}`,
  );
}

/**
 * Whether `next` loses nothing that `confirmed` did not list: the same worktree step, no file
 * beyond those listed, no more unmerged commits, and no branch deletion that was not shown.
 */
export function losesNoMoreThan(next: RemovalPlan, confirmed: RemovalPlan): boolean {
  const all = (plan: RemovalPlan): string[] => [
    ...plan.lostFiles.dirty,
    ...plan.lostFiles.untracked,
    ...plan.lostFiles.ignored,
    ...(plan.entry?.staged ?? []).map((file) => `staged:${file}`),
  ];
  const listed = new Set(all(confirmed));
  const filesListed = all(next).every((file) => listed.has(file));
  const unmergedNow = next.unmerged?.total ?? 0;
  const unmergedShown = confirmed.unmerged?.total ?? 0;
  const branchShown = next.branch.code !== "delete" || confirmed.branch.code === "delete";
  return next.worktree === confirmed.worktree && filesListed && unmergedNow <= unmergedShown && branchShown;
}

export type PruneAction =
  /**
   * `prune --merged`: retire a handoff whose branch is merged into its target, through the safe
   * removal, and delete its branch when this package created it (never one entered with `--existing`).
   */
  | { code: "retire_merged"; id: string; branch: string; plan: RemovalPlan }
  /** Drop git's entry of one handoff's vanished worktree (`git worktree remove <that path>`), keeping its HEAD history's commits. */
  | {
      code: "drop_entry";
      id: string;
      repo: string;
      path: string;
      entry: string;
      kept: { ref: string; sha: string }[];
    }
  /** The store's abandoned leftovers (temp files of dead writers, dead holders' action locks, stale locks). */
  | { code: "sweep_leftovers"; leftovers: StoreLeftover[] }
  | {
      code: "retire";
      id: string;
      branch: string;
      reason: "worktree_gone_branch_merged" | "worktree_gone_branch_gone" | "failed_before_worktree";
      /** The ports it holds, released with it. */
      ports?: number[];
      /** Its window is open (a shell in the deleted directory): it is closed with the retirement. */
      closesWindow: boolean;
    };

/** `note`: what a done action left for the user (a window that could not be closed, and why). */
export type PruneResult =
  | { action: PruneAction; ok: true; note?: string }
  | { action: PruneAction; ok: false; message: string };

/** What `prune` would do (with `merged`, also retire merged handoffs), from a fresh inventory. Changes nothing. */
export async function planPrune(
  deps: InventoryDeps,
  options: { merged?: boolean } = {},
): Promise<{ actions: PruneAction[]; problems: string[]; notes: string[] }> {
  const inventory = await buildInventory(deps);
  const actions: PruneAction[] = [];
  const problems: string[] = [];
  const notes: string[] = [];
  const retiredMerged = new Set<string>();
  if (options.merged === true) {
    for (const handoff of inventory.handoffs) {
      if (handoff.branchState.code !== "present" || handoff.branchState.merged === undefined) continue;
      const planned = await planRemoval(deps, handoff.id, { force: false, deleteBranch: true });
      if (planned.code === "refused") {
        notes.push(`left handoff ${handoff.id} (${handoff.branch}, merged) alone: ${planned.message}`);
        continue;
      }
      retiredMerged.add(handoff.id);
      actions.push({ code: "retire_merged", id: handoff.id, branch: handoff.branch, plan: planned.plan });
    }
  }
  const manifests = new Map(
    (await deps.store.list()).flatMap((entry) => (entry.ok ? [[entry.id, entry.manifest] as const] : [])),
  );
  // Only the handoffs' own entries: a person's worktree (moved by hand, say) is never touched.
  for (const handoff of inventory.handoffs) {
    const manifest = manifests.get(handoff.id);
    if (handoff.worktree.code !== "prunable" || manifest === undefined || retiredMerged.has(handoff.id)) continue;
    const dropped = await droppableEntry(deps, manifest);
    if (dropped.ok) actions.push(dropped.action);
    else notes.push(dropped.note);
  }
  for (const handoff of inventory.handoffs) {
    if (!handoff.actions.includes("prune") || !isPrunable(handoff) || retiredMerged.has(handoff.id)) continue;
    const reason =
      handoff.status.code === "failed"
        ? "failed_before_worktree"
        : handoff.branchState.code === "gone"
          ? "worktree_gone_branch_gone"
          : "worktree_gone_branch_merged";
    actions.push({
      code: "retire",
      id: handoff.id,
      branch: handoff.branch,
      reason,
      ...(handoff.ports === undefined ? {} : { ports: handoff.ports }),
      closesWindow: handoff.workspace.code === "open" && hasWorkspace(handoff.mux),
    });
  }
  const leftovers = await deps.store.leftovers();
  const abandoned = leftovers.filter((leftover) => leftover.abandoned);
  if (abandoned.length > 0) actions.push({ code: "sweep_leftovers", leftovers: abandoned });
  // What stays is explained too: a live writer's temp file, a held lock, a file this store never writes.
  for (const leftover of leftovers) {
    if (!leftover.abandoned) notes.push(`left in the store: ${leftover.name}: ${leftover.reason}`);
  }
  return { actions, problems, notes };
}

/** Whether git's entry of a handoff's vanished worktree may go, losing nothing; why not otherwise. */
async function droppableEntry(
  deps: InventoryDeps,
  manifest: Manifest,
): Promise<{ ok: true; action: Extract<PruneAction, { code: "drop_entry" }> } | { ok: false; note: string }> {
  const unread: string[] = [];
  const facts = await entryAtStake(deps, manifest, true, unread);
  const left = `left git's entry for ${manifest.worktree.path} (handoff ${manifest.id}) alone`;
  if (facts.entry === undefined) return { ok: false, note: `${left}: it could not be found` };
  if (facts.entry.movedTo !== undefined)
    return { ok: false, note: `${left}: the checkout was moved by hand to ${facts.entry.movedTo}, which uses it` };
  if (facts.entry.staged.length > 0)
    return {
      ok: false,
      note: `${left}: it holds ${counted(facts.entry.staged.length, "staged change")} (pi-handoff remove ${manifest.id} --dry-run lists them)`,
    };
  if (unread.length > 0) return { ok: false, note: `${left}: ${unread.join("; ")}` };
  return {
    ok: true,
    action: {
      code: "drop_entry",
      id: manifest.id,
      repo: manifest.repo.root,
      path: manifest.worktree.path,
      entry: facts.entry.dir,
      kept: facts.kept.refs,
    },
  };
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

/** Carries out planned prune actions in order (git first, then the records). */
export async function executePrune(deps: InventoryDeps, actions: readonly PruneAction[]): Promise<PruneResult[]> {
  const results: PruneResult[] = [];
  for (const action of actions) {
    try {
      if (action.code === "retire_merged") {
        // Carried out only if, checked again now, it loses no more than was listed.
        const removed = await removeHandoff(deps, action.id, { force: false, deleteBranch: true }, (plan) =>
          losesNoMoreThan(plan, action.plan),
        );
        if (removed.code !== "removed") {
          results.push({ action, ok: false, message: `${stripPeriod(removed.message)}; it was left alone.` });
          continue;
        }
      } else if (action.code === "drop_entry") {
        const dropped = await deps.store.withActionLock(action.id, "prune", async () => {
          // Re-judged right before: the checkout may be back, or a moved one found, since the plan.
          const read = await deps.store.read(action.id);
          const again = read.ok ? await droppableEntry(deps, read.manifest) : undefined;
          if (again === undefined || !again.ok || again.action.entry !== action.entry) return false;
          await deps.git.keepCommits(action.repo, again.action.kept);
          await deps.git.removeWorktree(action.repo, action.path, { force: false });
          return true;
        });
        if (isActionBusy(dropped) || !dropped) {
          results.push({
            action,
            ok: false,
            message: isActionBusy(dropped)
              ? `${dropped.message.replace(/; nothing was done.*$/, "")}; its entry was left alone.`
              : `Handoff ${action.id}'s worktree entry changed since it was checked; it was left alone.`,
          });
          continue;
        }
      } else if (action.code === "retire") {
        const retired = await deps.store.withActionLock(action.id, "prune", async () => {
          // Re-judged right before: a Pi may have started, or the branch moved, since the plan.
          const current = await inspectHandoff(deps, action.id);
          if (current.code !== "found" || !isPrunable(current.report) || !current.report.actions.includes("prune"))
            return false;
          const window = await closeRetiredWindow(deps, current.report);
          const removed = await deps.store.transition(
            action.id,
            "removed",
            undefined,
            `pruned with pi-handoff: ${describePruneAction(action).join(" ")}${window.closed ? "" : window.note === undefined ? "" : `; ${window.note}`}`,
          );
          const problem = (await retireStoreFiles(deps, removed)).problem;
          return problem ?? (window.note === undefined ? true : { note: window.note });
        });
        if (isActionBusy(retired)) {
          results.push({
            action,
            ok: false,
            message: `${retired.message.replace(/; nothing was done.*$/, "")}; it was left alone.`,
          });
          continue;
        }
        if (!retired) {
          results.push({
            action,
            ok: false,
            message: `Handoff ${action.id} changed since it was checked; it was left alone.`,
          });
          continue;
        }
        if (typeof retired === "string") {
          results.push({ action, ok: false, message: `Handoff ${action.id} was retired, but it ${retired}.` });
          continue;
        }
        if (typeof retired === "object") {
          results.push({ action, ok: true, note: `Handoff ${action.id} was retired; ${retired.note}.` });
          continue;
        }
      } else if (action.code === "sweep_leftovers") {
        await deps.store.sweepLeftovers();
        // Gone is fine (a retirement above took a dead holder's lock over); still there means in use again.
        const present = new Set((await deps.store.leftovers()).map((leftover) => leftover.name));
        const missed = action.leftovers.filter((leftover) => present.has(leftover.name));
        if (missed.length > 0) {
          results.push({
            action,
            ok: false,
            message: `${counted(missed.length, "leftover file")} in the store ${missed.length === 1 ? "was" : "were"} in use again when swept (${missed.map((leftover) => leftover.name).join(", ")}); they were left alone.`,
          });
          continue;
        }
      }
      results.push({ action, ok: true });
    } catch (error) {
      results.push({ action, ok: false, message: errorSentence(error) });
    }
  }
  return results;
}

/**
 * Closes the window of a handoff being retired whose worktree is gone (a shell sits in the deleted
 * directory), through its backend, as a removal closes it; `note` says why it stays open when it does.
 */
async function closeRetiredWindow(
  deps: InventoryDeps,
  report: HandoffReport,
): Promise<{ closed: boolean; note?: string }> {
  if (report.workspace.code !== "open" || !hasWorkspace(report.mux)) return { closed: false };
  const where = describeLocation(report.mux);
  const mux = deps.muxFor(report.mux);
  if (!mux.ok)
    return { closed: false, note: `its window (${where}) stays open: ${stripPeriod(mux.message)}; close it yourself` };
  if (mux.mux.closeWorkspace === undefined)
    return {
      closed: false,
      note: `its window (${where}) stays open: this backend closes a workspace only with its worktree; close it yourself`,
    };
  const closed = await mux.mux.closeWorkspace(report.mux, report.worktreePath);
  if (!closed.ok)
    return {
      closed: false,
      note: `its window (${where}) stays open: ${stripPeriod(closed.message)}; close it yourself`,
    };
  return closed.closed
    ? { closed: true }
    : { closed: false, note: `its window (${where}) stays open: it no longer shows the worktree` };
}

function branchStateTarget(report: HandoffReport): string {
  return report.branchState.code === "present" ? report.branchState.mergeTarget.ref : report.base.ref;
}

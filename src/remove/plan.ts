/**
 * The plan of a removal: what removing a handoff would do and lose, and every check that may
 * refuse it. One function (`planRemoval`) computes it for a dry run, for the question a person
 * confirms, and for the real run, which re-plans under the handoff's action lock right before it
 * acts (remove.ts), so a dry run and a real run share one plan and one set of checks by construction.
 *
 * Invariants:
 * - Planning changes nothing: it reads the inventory, git and the backend only.
 * - Nothing is planned while a Pi runs on the child session or in the worktree, or while the
 *   handoff is still being set up; the plan is still listed with every refusal once the handoff
 *   could be looked at (a live Pi too), so what a removal would lose is known before anyone quits
 *   anything.
 * - Without `force`, uncommitted, untracked or ignored files (but what the handoff's own setup
 *   put there and still equals its source: its symlinks, unchanged copies), unmerged commits,
 *   changes staged in git's entry of a vanished checkout, facts that could not be read, and a
 *   checkout no one could check for a running Pi (`writerUnknown`) refuse the plan (`needs_force`).
 * - What would refuse the worktree step whatever `force` says (a locked checkout, a backend this
 *   process cannot drive, a workspace the backend may not open: `removalBlocker`) refuses the plan,
 *   so nothing is announced as about to happen that the step would then refuse. Refusals `force`
 *   cannot lift come before the one it can.
 * - The branch is planned for deletion only when asked, only when the handoff created it, and only
 *   when nothing on it is unmerged (`planBranch`); an unmerged branch is never deleted, even with `force`.
 * - Refusals carry codes; their sentences are rendered in words.ts.
 */
import { readlink } from "node:fs/promises";
import path from "node:path";
import type { CommitSummary, MergedBy, WorktreeAdminEntry } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { sameContent } from "../fs/probe.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { hasWorkspace, type GatherDeps } from "../inventory/gather.ts";
import { isInProgress, mergeTargetOf } from "../inventory/classify.ts";
import { inspectHandoff } from "../inventory/inventory.ts";
import type { CommitList, HandoffReport, MergedFact } from "../inventory/report-schema.ts";
import { errorClause } from "../errors.ts";
import { lockedWorktreeRefusal } from "../mux/git-worktree.ts";
import { branchDeletionWords, removalRefusalSentence } from "./words.ts";
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
  if (plan.entry?.movedTo !== undefined)
    return refused({ reason: "moved", id, movedTo: plan.entry.movedTo, entryDir: plan.entry.dir }, plan);
  const blocked = await worktreeStepBlocker(deps, manifest, report);
  if (blocked !== undefined) return refused({ reason: "blocked", id, why: blocked }, plan);
  const stakes = options.force ? [] : stakesNeedingForce(plan);
  if (stakes.length > 0) return refused({ reason: "needs_force", id, stakes, forceHint: options.forceHint }, plan);
  return { code: "planned", plan };
}

/** A refusal with its sentence (words.ts) and, when the handoff could be looked at, its plan. */
function refused(facts: RefusalFacts, plan?: RemovalPlan): Extract<PlanOutcome, { code: "refused" }> {
  const refusal = { code: "refused" as const, reason: facts.reason, message: removalRefusalSentence(facts) };
  return plan === undefined ? refusal : { ...refusal, plan };
}

/** What a refusal says, by its code: the facts its sentence names (rendered by `removalRefusalSentence`). */
export type RefusalFacts =
  | { reason: "removed"; id: string; keptBranch?: string }
  | { reason: "in_progress"; id: string; state: string }
  | { reason: "child_running"; id: string; pids: number[] }
  | { reason: "moved"; id: string; movedTo: string; entryDir: string }
  | { reason: "blocked"; id: string; why: string }
  | { reason: "needs_force"; id: string; stakes: ForceStake[]; forceHint: string | undefined };

/** Why nothing of the handoff may be looked at for removal now; undefined: it may. */
function removalRefusal(report: HandoffReport, id: string): Extract<PlanOutcome, { code: "refused" }> | undefined {
  if (report.status.code === "removed")
    return refused({
      reason: "removed",
      id,
      ...(report.branchState.code === "present" ? { keptBranch: report.branch } : {}),
    });
  if (isInProgress(report)) return refused({ reason: "in_progress", id, state: report.state });
  return undefined;
}

/** The refusal while a Pi runs on the child session or in the worktree (its plan is listed with it). */
function liveWriterRefusal(report: HandoffReport, id: string): Extract<PlanOutcome, { code: "refused" }> | undefined {
  if (report.status.code !== "child_running") return undefined;
  return refused({ reason: "child_running", id, pids: report.status.writers.map((writer) => writer.pid) });
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
export async function entryAtStake(
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

/** One kind of work a removal without `force` would lose (or could not check); words.ts says what it is and what `force` does to it. */
export type ForceStake =
  | { code: "lost_files"; count: number }
  | { code: "staged"; count: number }
  | { code: "unread"; fact: string }
  | { code: "unmerged"; count: number; target: string; branch: string }
  | { code: "changes_unread" }
  | { code: "writer_unknown"; why: string };

/** The work a removal without `force` would lose (or could not check), so the refusal names only what applies. */
function stakesNeedingForce(plan: RemovalPlan): ForceStake[] {
  const { report, lostFiles, unmerged, manifest } = plan;
  const stakes: ForceStake[] = [];
  const changed = lostFiles.dirty.length + lostFiles.untracked.length + lostFiles.ignored.length;
  if (changed > 0) stakes.push({ code: "lost_files", count: changed });
  const staged = plan.entry?.staged.length ?? 0;
  if (staged > 0) stakes.push({ code: "staged", count: staged });
  for (const fact of plan.unread) stakes.push({ code: "unread", fact });
  if (unmerged !== undefined && unmerged.total > 0)
    stakes.push({ code: "unmerged", count: unmerged.total, target: mergeTargetOf(report), branch: manifest.branch });
  if (report.changes === undefined && plan.worktree === "remove") stakes.push({ code: "changes_unread" });
  // A Pi no one could see may still be working in the checkout that would go.
  if (report.writerUnknown !== undefined && plan.worktree === "remove")
    stakes.push({ code: "writer_unknown", why: report.writerUnknown });
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

/**
 * The question to ask after a removal was confirmed, when deleting the branch too would lose
 * nothing (the rule of `planBranch`), and the plan to confirm then; undefined: do not offer it.
 */
export function branchDeletionOffer(
  plan: RemovalPlan,
): { question: string; detail: string; plan: RemovalPlan } | undefined {
  const branch = planBranch(plan.manifest, plan.report, true);
  if (branch.code !== "delete") return undefined;
  return { ...branchDeletionWords(plan.manifest.branch, branch), plan: { ...plan, branch } };
}

/** Whether git must be forced to remove the checkout: it holds files the plan listed as lost, or its changes could not be read. */
export function checkoutNeedsForce({ lostFiles, report, entry }: RemovalPlan): boolean {
  return (
    lostFiles.dirty.length + lostFiles.untracked.length + lostFiles.ignored.length > 0 ||
    report.changes === undefined ||
    (entry?.staged.length ?? 0) > 0
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

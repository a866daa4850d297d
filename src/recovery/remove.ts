/**
 * `remove` and `prune`: retiring handoffs, and what goes with them.
 *
 * Invariants:
 * - Nothing is removed while a Pi runs on the child session or in the worktree, or while the
 *   handoff is still being set up.
 * - Without `force`, uncommitted or untracked files, unmerged commits, and a checkout no one could
 *   check for a running Pi (the writer check could not run, `writerUnknown`) refuse the removal; the
 *   plan (what would be lost, file by file and commit by commit) is handed to the caller BEFORE
 *   anything is done, with or without `force`.
 * - The branch is kept unless `deleteBranch` is asked AND nothing on it is unmerged; an unmerged
 *   branch is never deleted, even with `force`, so no commit is ever lost through a removal.
 * - The worktree goes through the backend (`RecoverableMultiplexer.removeWorktree`: the window is
 *   closed, then git removes the checkout); a directory git does not know as the handoff's worktree
 *   is left in place, since nothing says what it holds.
 * - The manifest becomes `removed` with the git state captured just before; it is kept as a record.
 * - `prune` only does what loses nothing: `git worktree prune` where a handoff's worktree directory
 *   is gone, and retiring handoffs whose worktree is gone and whose branch is merged or gone, or
 *   that failed before any worktree existed. It deletes no branch and no file of the user's.
 * - One actor: a removal (its re-check and its action) and each prune retirement run under the
 *   handoff's action lock; while another command holds it they are refused at once (`busy`).
 * - The store's own leftovers (temp files of dead writers, dead holders' action locks, stale lock
 *   directories: `ManifestStore.leftovers`) are listed by `prune` and swept by it; a retirement
 *   (remove, or prune) sweeps its own handoff's, and deletes its launch files (launch/retire.ts).
 */
import { deleteLaunchFiles } from "../launch/retire.ts";
import type { Manifest } from "../manifest/schema.ts";
import { isActionBusy, type ManifestStore, type StoreLeftover } from "../manifest/store.ts";
import { hasWorkspace, type GatherDeps } from "./gather.ts";
import { isInProgress, isPrunable } from "./classify.ts";
import { buildInventory, inspectHandoff, type InventoryDeps } from "./inventory.ts";
import type { CommitList, HandoffReport } from "./report-schema.ts";
import { stripPeriod } from "../text.ts";
import { errorClause, errorSentence } from "../errors.ts";
import { describeLocation } from "../mux/describe.ts";

export interface RemovalDeps extends GatherDeps {
  store: ManifestStore;
}

export interface RemoveOptions {
  /** Delete uncommitted and untracked files with the worktree, and remove despite unmerged commits. */
  force: boolean;
  /** Delete the branch too, if it is merged (an unmerged branch is never deleted). */
  deleteBranch: boolean;
  /**
   * The branch tip `pi-handoff land` just landed (by rebase or squash, which leave the branch's own
   * commits unmerged): while the branch is still there, its commits need no `force`, since their
   * work is in the target and they stay on the kept branch.
   */
  landedTip?: string;
  /** How the user asks for `force` where this removal runs (default "add --force": the command's own flag). */
  forceHint?: string;
}

export type BranchPlan =
  | { code: "keep" }
  /** The handoff went into a branch that existed before it (`--existing`): not its to delete. */
  | { code: "keep_preexisting" }
  | { code: "delete"; tip: string; mergeTarget: { ref: string; sha: string } }
  | { code: "keep_unmerged"; unmerged: number }
  | { code: "gone" }
  | { code: "unknown"; message: string };

export interface RemovalPlan {
  manifest: Manifest;
  report: HandoffReport;
  /** What the worktree step does: remove the checkout, drop git's entry for a vanished one, nothing, or leave an unknown directory alone. */
  worktree: "remove" | "unregister" | "already_gone" | "leave_orphaned";
  /** Files whose changes are deleted for good with the worktree. */
  lostFiles: { dirty: string[]; untracked: string[] };
  /** Commits not merged into the base: they stay on the (kept) branch. */
  unmerged: CommitList | undefined;
  branch: BranchPlan;
  /** Whether the window/workspace is open and will be closed with the worktree. */
  closesWorkspace: boolean;
}

export type RemovalRefusal = "not_found" | "invalid" | "removed" | "child_running" | "in_progress" | "needs_force" | "not_confirmed" | "busy";

export type PlanOutcome =
  | { code: "planned"; plan: RemovalPlan }
  /** `plan` is set when the refusal is about work at stake (`needs_force`), so it can be listed. */
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
  const plan = removalPlanOf(manifest, report, options);
  const stakes = options.force ? [] : stakesNeedingForce(plan, options);
  if (stakes.length > 0) {
    return {
      code: "refused",
      reason: "needs_force",
      message: `Handoff ${id} has ${stakes.join(" and ")}; nothing was removed (${options.forceHint ?? "add --force"} to remove it anyway: the files listed are deleted, the commits stay on branch ${manifest.branch}).`,
      plan,
    };
  }
  return { code: "planned", plan };
}

/** Why nothing of the handoff may be removed now, whatever is at stake; undefined: it may. */
function removalRefusal(report: HandoffReport, id: string): Extract<PlanOutcome, { code: "refused" }> | undefined {
  const status = report.status;
  if (status.code === "removed") return { code: "refused", reason: "removed", message: `Handoff ${id} was already removed.` };
  if (status.code === "child_running") {
    const pids = status.writers.map((writer) => writer.pid).join(", ");
    return {
      code: "refused",
      reason: "child_running",
      message: `Handoff ${id} still has a live Pi (pid ${pids}); quit it first, then remove the handoff.`,
    };
  }
  if (isInProgress(report)) {
    return { code: "refused", reason: "in_progress", message: `Handoff ${id} is still being set up (${report.state}); try again once it has finished.` };
  }
  return undefined;
}

function removalPlanOf(manifest: Manifest, report: HandoffReport, options: RemoveOptions): RemovalPlan {
  const worktree: RemovalPlan["worktree"] =
    report.worktree.code === "present"
      ? "remove"
      : report.worktree.code === "prunable"
        ? "unregister"
        : report.worktree.code === "missing"
          ? "already_gone"
          : "leave_orphaned";
  const lostFiles =
    worktree === "remove" && report.changes !== undefined
      ? { dirty: report.changes.dirtyFiles, untracked: report.changes.untrackedFiles }
      : { dirty: [], untracked: [] };
  const branchState = report.branchState;
  return {
    manifest,
    report,
    worktree,
    lostFiles,
    unmerged: branchState.code === "present" ? branchState.unmerged : undefined,
    branch: planBranch(manifest, report, options.deleteBranch),
    closesWorkspace: worktree !== "already_gone" && worktree !== "leave_orphaned" && report.workspace.code === "open",
  };
}

/** The work a removal without `force` would lose (or could not check), one phrase each. */
function stakesNeedingForce(plan: RemovalPlan, options: RemoveOptions): string[] {
  const { report, lostFiles, unmerged } = plan;
  const branchState = report.branchState;
  const stakes: string[] = [];
  const changed = lostFiles.dirty.length + lostFiles.untracked.length;
  if (changed > 0) stakes.push(`${changed} uncommitted or untracked file(s)`);
  const landed = options.landedTip !== undefined && branchState.code === "present" && branchState.tip === options.landedTip;
  if (unmerged !== undefined && unmerged.total > 0 && !landed) stakes.push(`${unmerged.total} commit(s) not merged into ${branchStateTarget(report)}`);
  if (report.changes === undefined && plan.worktree === "remove") stakes.push("changes that could not be read");
  // A Pi no one could see may still be working in the checkout that would go.
  if (report.writerUnknown !== undefined && plan.worktree === "remove") stakes.push(`a session that could not be checked for a running Pi (${stripPeriod(report.writerUnknown)})`);
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
  return { code: "delete", tip: state.tip, mergeTarget: state.mergeTarget };
}

/**
 * The question to ask after a removal was confirmed, when deleting the branch too would lose
 * nothing (the rule of `planBranch`), and the plan to confirm then; undefined: do not offer it.
 */
export function branchDeletionOffer(plan: RemovalPlan): { question: string; detail: string; plan: RemovalPlan } | undefined {
  const branch = planBranch(plan.manifest, plan.report, true);
  if (branch.code !== "delete") return undefined;
  return {
    question: `Also delete branch ${plan.manifest.branch}?`,
    detail: `Everything on it is in ${branch.mergeTarget.ref}, so no commit is lost.`,
    plan: { ...plan, branch },
  };
}

/** Plain lines that say exactly what a removal would do and lose (shown before it is done, or instead of it). */
export function describeRemovalPlan(plan: RemovalPlan): string[] {
  const { report } = plan;
  const lines = [worktreeLine(plan)];
  if (report.unrecorded?.includes("window")) {
    lines.push(`Its window (${describeLocation(report.mux)}) was made but never recorded (the handoff was killed first); it was found by its name and is treated as the handoff's.`);
  }
  if (report.unrecorded?.includes("session")) {
    lines.push(`Its child session ${report.childSessionFile ?? "?"} was written but never recorded (the handoff was killed first); it is kept and recorded.`);
  }
  lines.push(...lossLines(plan), branchLine(plan));
  if (report.writerUnknown !== undefined && plan.worktree === "remove") {
    lines.push(`It could not be checked whether a Pi still works in it (${stripPeriod(report.writerUnknown)}); quit any Pi there first.`);
  }
  if (report.workspace.code === "open" && !plan.closesWorkspace) {
    lines.push("Its window would stay open (it is no longer the worktree's); close it yourself.");
  }
  return lines;
}

function worktreeLine({ manifest, report, worktree, closesWorkspace }: RemovalPlan): string {
  switch (worktree) {
    case "remove":
      return `The worktree ${manifest.worktree.path} would be deleted${closesWorkspace ? " and its window closed" : ""}.`;
    case "unregister":
      return `The worktree ${manifest.worktree.path} is already gone; git's entry for it would be dropped.`;
    case "already_gone":
      return `The worktree ${manifest.worktree.path} is already gone.`;
    case "leave_orphaned":
      return `The directory ${manifest.worktree.path} would be left in place: ${report.worktree.code === "orphaned" ? report.worktree.reason : "git does not know it"}; delete it yourself if you do not need it.`;
  }
}

/** The files lost for good, and the unmerged commits that stay on the kept branch. */
function lossLines({ manifest, report, lostFiles, unmerged }: RemovalPlan): string[] {
  const lines: string[] = [];
  const changed = lostFiles.dirty.length + lostFiles.untracked.length;
  if (changed > 0) {
    lines.push(`Would be lost for good (${changed} file(s) with uncommitted work):`);
    for (const file of lostFiles.dirty) lines.push(`  modified   ${file}`);
    for (const file of lostFiles.untracked) lines.push(`  untracked  ${file}`);
  }
  if (unmerged !== undefined && unmerged.total > 0) {
    lines.push(`${unmerged.total} commit(s) not merged into ${branchStateTarget(report)} would stay on branch ${manifest.branch}, which would be kept:`);
    for (const commit of unmerged.commits) lines.push(`  ${commit.sha.slice(0, 12)} ${commit.subject}`);
    if (unmerged.commits.length < unmerged.total) lines.push(`  ... and ${unmerged.total - unmerged.commits.length} more`);
  }
  return lines;
}

function branchLine({ manifest, branch }: RemovalPlan): string {
  switch (branch.code) {
    case "keep":
      return `Branch ${manifest.branch} would be kept.`;
    case "keep_preexisting":
      return `Branch ${manifest.branch} would be kept: it existed before this handoff (--existing), so it is not this handoff's to delete.`;
    case "delete":
      return `Branch ${manifest.branch} would be deleted: everything on it is in ${branch.mergeTarget.ref}.`;
    case "keep_unmerged":
      return `Branch ${manifest.branch} would be kept: it has ${branch.unmerged} unmerged commit(s), and an unmerged branch is never deleted, even with --force.`;
    case "gone":
      return `Branch ${manifest.branch} no longer exists.`;
    case "unknown":
      return `Branch ${manifest.branch} would be kept: ${branch.message}`;
  }
}

/**
 * Removes handoff `id`: plans (re-checking for a live Pi), hands the plan to `onPlan` before
 * anything is done (returning false there cancels, e.g. when the plan is not the one a person
 * confirmed), then acts and records the removal.
 */
export async function removeHandoff(
  deps: RemovalDeps,
  id: string,
  options: RemoveOptions,
  onPlan: (plan: RemovalPlan) => boolean | void = () => {},
): Promise<RemoveOutcome> {
  const read = await deps.store.read(id);
  if (!read.ok) return { code: "refused", reason: read.code, message: read.code === "not_found" ? `There is no handoff with id ${id} in ${deps.store.dir}.` : read.message };
  const outcome = await deps.store.withActionLock(id, "remove", () => removeLocked(deps, id, options, onPlan));
  return isActionBusy(outcome) ? { code: "refused", reason: "busy", message: outcome.message } : outcome;
}

async function removeLocked(
  deps: RemovalDeps,
  id: string,
  options: RemoveOptions,
  onPlan: (plan: RemovalPlan) => boolean | void,
): Promise<RemoveOutcome> {
  // Planned under the lock, so the plan shown is the one carried out.
  const planned = await planRemoval(deps, id, options);
  if (planned.code === "refused") {
    if (planned.plan !== undefined) onPlan(planned.plan);
    return planned;
  }
  const plan = planned.plan;
  if (onPlan(plan) === false) {
    return { code: "refused", reason: "not_confirmed", message: `Handoff ${id} changed since it was shown; nothing was removed.`, plan };
  }
  const gitState = await gitStateBefore(deps, plan);
  // git's own --force only where the plan lists what it deletes: consent to remove despite an
  // unchecked writer is not consent to delete files that writer may be making.
  const worktree = await removeCheckout(deps, id, plan, options.force && checkoutNeedsForce(plan));
  if (!worktree.ok) return { code: "failed", plan, message: worktree.message };
  const done: string[] = [];
  if (plan.worktree === "remove") done.push(`deleted worktree ${plan.manifest.worktree.path}`);
  if (plan.worktree === "unregister") done.push(`dropped git's entry for ${plan.manifest.worktree.path}`);
  if (worktree.windowLeftOpen) done.push("left its window open (it no longer shows the worktree)");
  const branch = await settleBranch(deps, plan);
  if (branch !== undefined) done.push(branch);
  const removed = await recordRemoval(deps, id, plan, gitState, done);
  const retired = await retireStoreFiles(deps, id);
  if (retired.swept > 0) done.push(`deleted ${retired.swept} temp file(s) a killed writer left in the store`);
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
function checkoutNeedsForce({ lostFiles, report }: RemovalPlan): boolean {
  return lostFiles.dirty.length + lostFiles.untracked.length > 0 || report.changes === undefined;
}

/** The worktree step of the plan: through the backend when there is a window, else git alone. */
async function removeCheckout(
  deps: RemovalDeps,
  id: string,
  plan: RemovalPlan,
  force: boolean,
): Promise<{ ok: true; windowLeftOpen: boolean } | { ok: false; message: string }> {
  if (plan.worktree !== "remove" && plan.worktree !== "unregister") return { ok: true, windowLeftOpen: false };
  const { manifest } = plan;
  const request = { mainCheckout: manifest.repo.root, worktreePath: manifest.worktree.path, force };
  // The recorded window, or the one a killed step made without recording it (found by its intent).
  const location = plan.report.mux;
  const mux = hasWorkspace(location) ? deps.muxFor(location) : undefined;
  if (mux !== undefined && !mux.ok) {
    // Its workspace belongs to a backend this process cannot drive: removing the checkout under
    // it would leave that workspace in a deleted directory.
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
    return { ok: false, message: `Could not remove the worktree: ${errorSentence(error)} Handoff ${id} was not removed.` };
  }
  return { ok: true, windowLeftOpen: false };
}

/** Deletes the branch when the plan says so (git re-checks its tip and merge); what happened, for the record. */
async function settleBranch(deps: RemovalDeps, plan: RemovalPlan): Promise<string | undefined> {
  const { manifest, branch } = plan;
  if (branch.code === "gone") return undefined;
  if (branch.code !== "delete") return `kept branch ${manifest.branch}`;
  try {
    await deps.git.deleteBranch(manifest.repo.root, manifest.branch, { expectedTip: branch.tip, mergedInto: branch.mergeTarget.sha });
    return `deleted branch ${manifest.branch}`;
  } catch (error) {
    return `kept branch ${manifest.branch} (${errorClause(error)})`;
  }
}

/**
 * What goes with a retired handoff from the store (its record stays): the temp files a killed
 * writer left beside its manifest, and its launch files (launch/retire.ts). The handoff is recorded
 * removed already, so a file that cannot go is a `problem` to say, not a throw.
 */
async function retireStoreFiles(deps: RemovalDeps, id: string): Promise<{ swept: number; problem?: string }> {
  // Each attempted whatever the other did; what stays is named, since a removed handoff's own
  // files are not leftovers that prune lists (its manifest names them).
  const problems: string[] = [];
  let swept = 0;
  try {
    swept = (await deps.store.sweepLeftovers((leftover) => leftover.kind === "temp" && leftover.name.startsWith(`.${id}.json.`))).length;
  } catch (error) {
    problems.push(`could not delete its temp files .${id}.json.* in ${deps.store.dir} (${errorClause(error)})`);
  }
  const launch = await deleteLaunchFiles(deps.store.pathFor(id), id);
  if (launch.left.length > 0) {
    const named = launch.left.map((file) => `${file.path} (${file.reason})`).join(", ");
    problems.push(`could not delete its launch file(s) ${named}; delete ${launch.left.length === 1 ? "it" : "them"} by hand`);
  }
  return problems.length === 0 ? { swept } : { swept, problem: problems.join("; ") };
}

function recordRemoval(deps: RemovalDeps, id: string, plan: RemovalPlan, gitState: Manifest["gitState"], done: readonly string[]): Promise<Manifest> {
  return deps.store.transition(
    id,
    "removed",
    (m) => {
      if (gitState !== undefined) m.gitState = gitState;
      // The record names what the handoff made, also what a killed step left unrecorded.
      if (!hasWorkspace(m.mux) && hasWorkspace(plan.report.mux)) m.mux = plan.report.mux;
      if (m.child.sessionFile === undefined && plan.report.childSessionFile !== undefined) m.child = { ...m.child, sessionFile: plan.report.childSessionFile };
    },
    `removed with pi-handoff: ${done.join(", ")}`,
  );
}

/**
 * Whether `next` loses nothing that `confirmed` did not list: the same worktree step, no file
 * beyond those listed, no more unmerged commits, and no branch deletion that was not shown.
 */
export function losesNoMoreThan(next: RemovalPlan, confirmed: RemovalPlan): boolean {
  const listed = new Set([...confirmed.lostFiles.dirty, ...confirmed.lostFiles.untracked]);
  const filesListed = [...next.lostFiles.dirty, ...next.lostFiles.untracked].every((file) => listed.has(file));
  const unmergedNow = next.unmerged?.total ?? 0;
  const unmergedShown = confirmed.unmerged?.total ?? 0;
  const branchShown = next.branch.code !== "delete" || confirmed.branch.code === "delete";
  return next.worktree === confirmed.worktree && filesListed && unmergedNow <= unmergedShown && branchShown;
}

export type PruneAction =
  | { code: "prune_worktrees"; repo: string; entries: string[] }
  /** The store's abandoned leftovers (temp files of dead writers, dead holders' action locks, stale locks). */
  | { code: "sweep_leftovers"; leftovers: StoreLeftover[] }
  | { code: "retire"; id: string; branch: string; reason: "worktree_gone_branch_merged" | "worktree_gone_branch_gone" | "failed_before_worktree" };

export type PruneResult =
  | { action: PruneAction; ok: true }
  | { action: PruneAction; ok: false; message: string };

/** What `prune` would do, from a fresh inventory. Changes nothing. */
export async function planPrune(deps: InventoryDeps): Promise<{ actions: PruneAction[]; problems: string[]; notes: string[] }> {
  const inventory = await buildInventory(deps);
  const actions: PruneAction[] = [];
  const problems: string[] = [];
  const notes: string[] = [];
  const reposWithPrunable = [...new Set(inventory.handoffs.filter((handoff) => handoff.worktree.code === "prunable").map((handoff) => handoff.repo))];
  for (const repo of reposWithPrunable) {
    try {
      const entries = await deps.git.pruneWorktrees(repo, { dryRun: true });
      if (entries.length > 0) actions.push({ code: "prune_worktrees", repo, entries });
    } catch (error) {
      problems.push(`Could not ask git what to prune in ${repo}: ${errorSentence(error)}`);
    }
  }
  for (const handoff of inventory.handoffs) {
    if (!handoff.actions.includes("prune") || !isPrunable(handoff)) continue;
    const reason =
      handoff.status.code === "failed"
        ? "failed_before_worktree"
        : handoff.branchState.code === "gone"
          ? "worktree_gone_branch_gone"
          : "worktree_gone_branch_merged";
    actions.push({ code: "retire", id: handoff.id, branch: handoff.branch, reason });
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

export function describePruneAction(action: PruneAction): string[] {
  if (action.code === "prune_worktrees") {
    return [`git worktree prune in ${action.repo}:`, ...action.entries.map((entry) => `  ${entry}`)];
  }
  if (action.code === "sweep_leftovers") {
    return [`delete ${action.leftovers.length} leftover file(s) in the store:`, ...action.leftovers.map((leftover) => `  ${leftover.name}: ${leftover.reason}`)];
  }
  const why =
    action.reason === "failed_before_worktree"
      ? "it failed before its worktree existed"
      : action.reason === "worktree_gone_branch_gone"
        ? `its worktree and branch ${action.branch} are gone`
        : `its worktree is gone and branch ${action.branch} is merged (the branch is kept)`;
  return [`mark handoff ${action.id} removed: ${why}`];
}

/** Carries out planned prune actions in order (git first, then the records). */
export async function executePrune(deps: InventoryDeps, actions: readonly PruneAction[]): Promise<PruneResult[]> {
  const results: PruneResult[] = [];
  for (const action of actions) {
    try {
      if (action.code === "prune_worktrees") {
        await deps.git.pruneWorktrees(action.repo, { dryRun: false });
      } else if (action.code === "retire") {
        const retired = await deps.store.withActionLock(action.id, "prune", async () => {
          // Re-judged right before: a Pi may have started, or the branch moved, since the plan.
          const current = await inspectHandoff(deps, action.id);
          if (current.code !== "found" || !isPrunable(current.report) || !current.report.actions.includes("prune")) return false;
          await deps.store.transition(action.id, "removed", undefined, `pruned with pi-handoff: ${describePruneAction(action).join(" ")}`);
          return (await retireStoreFiles(deps, action.id)).problem ?? true;
        });
        if (isActionBusy(retired)) {
          results.push({ action, ok: false, message: `${retired.message.replace(/; nothing was done.*$/, "")}; it was left alone.` });
          continue;
        }
        if (!retired) {
          results.push({ action, ok: false, message: `Handoff ${action.id} changed since it was checked; it was left alone.` });
          continue;
        }
        if (typeof retired === "string") {
          results.push({ action, ok: false, message: `Handoff ${action.id} was retired, but it ${retired}.` });
          continue;
        }
      } else if (action.code === "sweep_leftovers") {
        await deps.store.sweepLeftovers();
        // Gone is fine (a retirement above took a dead holder's lock over); still there means in use again.
        const present = new Set((await deps.store.leftovers()).map((leftover) => leftover.name));
        const missed = action.leftovers.filter((leftover) => present.has(leftover.name));
        if (missed.length > 0) {
          results.push({ action, ok: false, message: `${missed.length} leftover file(s) in the store were in use again when swept (${missed.map((leftover) => leftover.name).join(", ")}); they were left alone.` });
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

function branchStateTarget(report: HandoffReport): string {
  return report.branchState.code === "present" ? report.branchState.mergeTarget.ref : report.base.ref;
}


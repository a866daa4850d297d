/**
 * `prune`: retiring what loses nothing, planned from a fresh inventory and carried out on top of
 * remove's plan and action (plan.ts, remove.ts).
 *
 * Invariants:
 * - `prune` only does what loses nothing, and only to what this package made: it drops git's entry
 *   of a handoff's vanished worktree (never `git worktree prune`, which would drop every vanished
 *   entry of the repository, a person's own moved worktree too) when that entry holds no staged
 *   change and no moved checkout uses it, keeping its HEAD history's commits under
 *   `refs/pi-handoff/<id>/kept/`; and it retires handoffs whose worktree is gone and whose branch is
 *   merged or gone, or that failed before any worktree existed. It deletes no branch and no file of
 *   the user's (`--merged` retires merged handoffs through the safe removal, which deletes a branch
 *   this package created only when nothing on it is unmerged).
 * - Planning changes nothing; each action is re-judged right before it is carried out, under the
 *   handoff's action lock (a merged retirement only if it loses no more than was listed:
 *   `losesNoMoreThan`); while another command holds the lock the action is refused at once.
 * - A retired handoff's window is closed as `remove` closes it (only while it still shows the gone
 *   worktree); when it cannot be, the result says why and what to do.
 * - The store's own leftovers (temp files of dead writers, dead holders' action locks, stale lock
 *   directories: `ManifestStore.leftovers`) are listed and swept; a retirement sweeps its own
 *   handoff's, and deletes its launch files (child/retire.ts).
 */
import type { Manifest } from "../manifest/schema.ts";
import { isActionBusy, type StoreLeftover } from "../manifest/store.ts";
import { hasWorkspace } from "../inventory/gather.ts";
import { isPrunable } from "../inventory/classify.ts";
import { buildInventory, inspectHandoff, type InventoryDeps } from "../inventory/inventory.ts";
import { errorSentence } from "../errors.ts";
import { entryAtStake, losesNoMoreThan, planRemoval, type RemovalPlan } from "./plan.ts";
import { closeRetiredWindow, removeHandoff, retireStoreFiles } from "./remove.ts";
import { describePruneAction, pruneNoteSentence, pruneResultSentence } from "./words.ts";

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

/** Why git's entry of a handoff's vanished worktree is kept (words.ts words it). */
export type EntryKept =
  | { code: "not_found" }
  | { code: "moved"; movedTo: string }
  | { code: "staged"; count: number }
  | { code: "unread"; facts: string[] };

/** What `prune` leaves alone and says so (words.ts `pruneNoteSentence`). */
export type PruneNote =
  | { code: "merged_left"; id: string; branch: string; why: string }
  | { code: "entry_left"; id: string; path: string; why: EntryKept }
  | { code: "store_left"; name: string; reason: string };

/** Why a planned action was not carried out, or what a done one left (words.ts `pruneResultSentence`). */
export type PruneResultFacts =
  /** The merged handoff's removal, re-planned now, was refused. */
  | { code: "removal_refused"; message: string }
  /** Another command holds the handoff's action lock (`message`: the lock's own sentence). */
  | { code: "busy"; message: string; left: "entry" | "handoff" }
  | { code: "entry_changed"; id: string }
  | { code: "handoff_changed"; id: string }
  /** Retired, but something of it could not be deleted (`problem`: a clause). */
  | { code: "retired_with_problem"; id: string; problem: string }
  /** Retired; what it left for the user (a window that stays open, and why). */
  | { code: "retired_with_note"; id: string; note: string }
  | { code: "leftovers_in_use"; names: string[] };

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
        notes.push(
          pruneNoteSentence({ code: "merged_left", id: handoff.id, branch: handoff.branch, why: planned.message }),
        );
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
    else
      notes.push(
        pruneNoteSentence({ code: "entry_left", id: manifest.id, path: manifest.worktree.path, why: dropped.why }),
      );
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
    if (!leftover.abandoned)
      notes.push(pruneNoteSentence({ code: "store_left", name: leftover.name, reason: leftover.reason }));
  }
  return { actions, problems, notes };
}

/** Whether git's entry of a handoff's vanished worktree may go, losing nothing; why not otherwise. */
async function droppableEntry(
  deps: InventoryDeps,
  manifest: Manifest,
): Promise<{ ok: true; action: Extract<PruneAction, { code: "drop_entry" }> } | { ok: false; why: EntryKept }> {
  const unread: string[] = [];
  const facts = await entryAtStake(deps, manifest, true, unread);
  if (facts.entry === undefined) return { ok: false, why: { code: "not_found" } };
  if (facts.entry.movedTo !== undefined) return { ok: false, why: { code: "moved", movedTo: facts.entry.movedTo } };
  if (facts.entry.staged.length > 0) return { ok: false, why: { code: "staged", count: facts.entry.staged.length } };
  if (unread.length > 0) return { ok: false, why: { code: "unread", facts: unread } };
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

/** Carries out planned prune actions in order (git first, then the records), each re-judged right before. */
export async function executePrune(deps: InventoryDeps, actions: readonly PruneAction[]): Promise<PruneResult[]> {
  const results: PruneResult[] = [];
  for (const action of actions) {
    let failure: PruneResultFacts | undefined;
    try {
      failure = await carryOut(deps, action);
    } catch (error) {
      results.push({ action, ok: false, message: errorSentence(error) });
      continue;
    }
    if (failure === undefined) results.push({ action, ok: true });
    else if (failure.code === "retired_with_note")
      results.push({ action, ok: true, note: pruneResultSentence(failure) });
    else results.push({ action, ok: false, message: pruneResultSentence(failure) });
  }
  return results;
}

/** One action carried out; undefined when done with nothing to say, else why not (or what it left). */
async function carryOut(deps: InventoryDeps, action: PruneAction): Promise<PruneResultFacts | undefined> {
  switch (action.code) {
    case "retire_merged":
      return retireMerged(deps, action);
    case "drop_entry":
      return dropEntry(deps, action);
    case "retire":
      return retire(deps, action);
    case "sweep_leftovers":
      return sweepLeftovers(deps, action);
  }
}

/** Through the safe removal, carried out only if, checked again now, it loses no more than was listed. */
async function retireMerged(
  deps: InventoryDeps,
  action: Extract<PruneAction, { code: "retire_merged" }>,
): Promise<PruneResultFacts | undefined> {
  const removed = await removeHandoff(deps, action.id, { force: false, deleteBranch: true }, (plan) =>
    losesNoMoreThan(plan, action.plan),
  );
  return removed.code === "removed" ? undefined : { code: "removal_refused", message: removed.message };
}

async function dropEntry(
  deps: InventoryDeps,
  action: Extract<PruneAction, { code: "drop_entry" }>,
): Promise<PruneResultFacts | undefined> {
  const dropped = await deps.store.withActionLock(action.id, "prune", async () => {
    // Re-judged right before: the checkout may be back, or a moved one found, since the plan.
    const read = await deps.store.read(action.id);
    const again = read.ok ? await droppableEntry(deps, read.manifest) : undefined;
    if (again === undefined || !again.ok || again.action.entry !== action.entry) return false;
    await deps.git.keepCommits(action.repo, again.action.kept);
    await deps.git.removeWorktree(action.repo, action.path, { force: false });
    return true;
  });
  if (isActionBusy(dropped)) return { code: "busy", message: dropped.message, left: "entry" };
  return dropped ? undefined : { code: "entry_changed", id: action.id };
}

async function retire(
  deps: InventoryDeps,
  action: Extract<PruneAction, { code: "retire" }>,
): Promise<PruneResultFacts | undefined> {
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
  if (isActionBusy(retired)) return { code: "busy", message: retired.message, left: "handoff" };
  if (!retired) return { code: "handoff_changed", id: action.id };
  if (typeof retired === "string") return { code: "retired_with_problem", id: action.id, problem: retired };
  if (typeof retired === "object") return { code: "retired_with_note", id: action.id, note: retired.note };
  return undefined;
}

async function sweepLeftovers(
  deps: InventoryDeps,
  action: Extract<PruneAction, { code: "sweep_leftovers" }>,
): Promise<PruneResultFacts | undefined> {
  await deps.store.sweepLeftovers();
  // Gone is fine (a retirement above took a dead holder's lock over); still there means in use again.
  const present = new Set((await deps.store.leftovers()).map((leftover) => leftover.name));
  const missed = action.leftovers.filter((leftover) => present.has(leftover.name));
  return missed.length === 0 ? undefined : { code: "leftovers_in_use", names: missed.map((leftover) => leftover.name) };
}

/**
 * `remove`: carrying out a removal's plan (plan.ts), under the handoff's action lock.
 *
 * Invariants:
 * - The real run acts only on the plan the checks approved: it re-plans under the lock right
 *   before acting (`planRemoval`, the same function a dry run renders), hands the plan to the
 *   caller before anything is done, with or without `force` and with every refusal, and a caller
 *   may cancel when the plan is not the one a person confirmed (`not_confirmed`).
 * - One actor: while another command holds the handoff's action lock a removal is refused at once (`busy`).
 * - Commits only the worktree's own HEAD history holds (a detached experiment) are kept reachable,
 *   under `refs/pi-handoff/<id>/kept/<sha>`, before the worktree and its history go.
 * - git's entry of a checkout that is gone from where the handoff made it is dropped only when no
 *   checkout moved by hand is found using it (the plan refuses one: `moved`).
 * - The branch is deleted only when the plan says so, and git re-checks its tip and merge right
 *   before; an unmerged branch is never deleted, even with `force`, so no commit is ever lost.
 * - The worktree goes through the backend (`RecoverableMultiplexer.removeWorktree`: the window is
 *   closed, then git removes the checkout); git's own `--force` only where the plan lists what it
 *   deletes. A directory git does not know as the handoff's worktree is left in place, except an
 *   empty one (the claim of a checkout git never made): its window is closed as above and it is
 *   removed only while still empty (`rmdir`, which fails on anything put there since).
 * - The manifest becomes `removed` with the git state captured just before; it is kept as a record.
 *   A retirement (remove, or prune's) sweeps its own handoff's store leftovers and deletes its
 *   launch files (child/retire.ts) and its child's published state (`retireStoreFiles`).
 * - What it did, or why it stopped, is a list of codes worded in words.ts.
 */
import { deleteChildState } from "../child/child-state.ts";
import { deleteLaunchFiles } from "../child/retire.ts";
import { lstat, rmdir } from "node:fs/promises";
import type { Manifest } from "../manifest/schema.ts";
import { errorCode, isEmptyDirectory, unlessMissing } from "../fs/probe.ts";
import { isActionBusy } from "../manifest/store.ts";
import { hasWorkspace, type GatherDeps } from "../inventory/gather.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { errorClause, errorSentence } from "../errors.ts";
import {
  checkoutNeedsForce,
  planRemoval,
  type RemovalDeps,
  type RemovalPlan,
  type RemovalRefusal,
  type RemoveOptions,
} from "./plan.ts";
import {
  doneClause,
  type RemovalDone,
  removalActSentence,
  type WindowStaysOpen,
  windowStaysOpenClause,
} from "./words.ts";

export type RemoveOutcome =
  | { code: "removed"; manifest: Manifest; plan: RemovalPlan; message: string }
  | { code: "refused"; reason: RemovalRefusal; message: string; plan?: RemovalPlan }
  | { code: "failed"; plan: RemovalPlan; message: string };

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
      message:
        read.code === "not_found"
          ? removalActSentence({ code: "not_found", id, storeDir: deps.store.dir })
          : read.message,
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
      message: removalActSentence({ code: "not_confirmed", id }),
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
        message: removalActSentence({ code: "keep_failed", id, error: errorClause(error) }),
      };
    }
  }
  // git's own --force only where the plan lists what it deletes: consent to remove despite an
  // unchecked writer is not consent to delete files that writer may be making.
  const worktree = await removeCheckout(deps, id, plan, options.force && checkoutNeedsForce(plan));
  if (!worktree.ok) return { code: "failed", plan, message: worktree.message };
  const done: RemovalDone[] = [];
  const { manifest } = plan;
  if (plan.kept.refs.length > 0) done.push({ code: "kept_commits", count: plan.kept.commits.length, id: manifest.id });
  if (plan.worktree === "remove") done.push({ code: "deleted_worktree", path: manifest.worktree.path });
  if (plan.worktree === "unregister") done.push({ code: "dropped_entry", path: manifest.worktree.path });
  done.push(...(worktree.said ?? []));
  if (worktree.windowLeftOpen) done.push({ code: "window_left_open" });
  const branch = await settleBranch(deps, plan);
  if (branch !== undefined) done.push(branch);
  // Removed, its ports count as held no more (ports/reserve.ts): the next handoff may take them.
  if (manifest.ports !== undefined) done.push({ code: "released_ports", ports: manifest.ports });
  const removed = await recordRemoval(deps, id, plan, gitState, done);
  const retired = await retireStoreFiles(deps, removed);
  if (retired.swept > 0) done.push({ code: "swept_temp_files", count: retired.swept });
  if (retired.problem !== undefined) done.push({ code: "said", clause: retired.problem });
  return { code: "removed", manifest: removed, plan, message: removalActSentence({ code: "removed", id, done }) };
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

/** What the worktree step did: whether a window it should have closed stays open, and what else to say (the claim's release). */
type CheckoutStep = { ok: true; windowLeftOpen: boolean; said?: RemovalDone[] } | { ok: false; message: string };

/** The worktree step of the plan: through the backend when there is a window, else git alone. */
async function removeCheckout(deps: RemovalDeps, id: string, plan: RemovalPlan, force: boolean): Promise<CheckoutStep> {
  if (plan.worktree === "release_claim") return releaseClaim(deps, id, plan);
  if (plan.worktree === "already_gone" && plan.closesWorkspace) {
    const closed = await closeRetiredWindow(deps, plan.report);
    return {
      ok: true,
      windowLeftOpen: false,
      said: closed.closed
        ? [{ code: "closed_window" }]
        : closed.note === undefined
          ? []
          : [{ code: "said", clause: closed.note }],
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
    return { ok: false, message: removalActSentence({ code: "step_refused", id, why: mux.message }) };
  }
  if (mux !== undefined) {
    const removed = await mux.mux.removeWorktree(location, request);
    if (!removed.ok)
      return { ok: false, message: removalActSentence({ code: "step_refused", id, why: removed.message }) };
    // The backend leaves open a window that no longer shows the worktree (someone uses it).
    return { ok: true, windowLeftOpen: plan.closesWorkspace && (await mux.mux.exists(location)) };
  }
  // No window was ever made: git alone removes the checkout.
  try {
    await deps.git.removeWorktree(request.mainCheckout, request.worktreePath, { force: request.force });
  } catch (error) {
    return {
      ok: false,
      message: removalActSentence({ code: "worktree_failed", id, error: errorSentence(error) }),
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
  const changed = removalActSentence({ code: "claim_changed", id, directory });
  const empty = await isEmptyDirectory(directory);
  // Not empty and still there (something in it, or a link or file in its place): no longer the claim.
  if (!empty && (await unlessMissing(() => lstat(directory)).catch(() => true))) return { ok: false, message: changed };
  const said: RemovalDone[] = [];
  if (plan.closesWorkspace) {
    const closed = await closeRetiredWindow(deps, plan.report);
    if (closed.note !== undefined) said.push({ code: "said", clause: closed.note });
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
      message: removalActSentence({ code: "claim_failed", id, directory, error: errorClause(error) }),
    };
  }
  return { ok: true, windowLeftOpen: false, said: [{ code: "released_claim", directory }, ...said] };
}

/** Deletes the branch when the plan says so (git re-checks its tip and merge); what happened, for the record. */
async function settleBranch(deps: RemovalDeps, plan: RemovalPlan): Promise<RemovalDone | undefined> {
  const { manifest, branch } = plan;
  if (branch.code === "gone") return undefined;
  if (branch.code !== "delete") return { code: "kept_branch", branch: manifest.branch };
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
    return { code: "deleted_branch", branch: manifest.branch };
  } catch (error) {
    return { code: "kept_branch", branch: manifest.branch, why: errorClause(error) };
  }
}

/** Where the branch of the latest recorded landing is now. */
async function landingTargetSha(deps: RemovalDeps, manifest: Manifest): Promise<string | undefined> {
  const landing = [...(manifest.landings ?? [])].reverse().find((entry) => entry.state === "landed");
  return landing === undefined ? undefined : deps.git.resolveCommit(manifest.repo.root, `refs/heads/${landing.into}`);
}

/**
 * What goes with a retired handoff from the store (its record stays): the temp files a killed
 * writer left beside its manifest, and its launch files (child/retire.ts). The handoff is recorded
 * removed already, so a file that cannot go is a `problem` to say, not a throw.
 */
export async function retireStoreFiles(
  deps: RemovalDeps,
  removed: Manifest,
): Promise<{ swept: number; problem?: string }> {
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
  done: readonly RemovalDone[],
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
    `removed with pi-handoff: ${done.map(doneClause).join(", ")}`,
  );
}

/**
 * Closes the window of a handoff being retired whose worktree is gone (a shell sits in the deleted
 * directory), through its backend, as a removal closes it; `note` says why it stays open when it does.
 */
export async function closeRetiredWindow(
  deps: GatherDeps,
  report: HandoffReport,
): Promise<{ closed: boolean; note?: string }> {
  if (report.workspace.code !== "open" || !hasWorkspace(report.mux)) return { closed: false };
  const stays = (why: WindowStaysOpen): { closed: false; note: string } => ({
    closed: false,
    note: windowStaysOpenClause(report.mux, why),
  });
  const mux = deps.muxFor(report.mux);
  if (!mux.ok) return stays({ code: "unreachable", message: mux.message });
  if (mux.mux.closeWorkspace === undefined) return stays({ code: "closes_only_with_worktree" });
  const closed = await mux.mux.closeWorkspace(report.mux, report.worktreePath);
  if (!closed.ok) return stays({ code: "close_failed", message: closed.message });
  return closed.closed ? { closed: true } : stays({ code: "not_showing_worktree" });
}

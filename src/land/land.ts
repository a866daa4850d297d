/**
 * `pi-handoff land` / `/handoffs land`: bring a handoff branch's commits into the branch it
 * started from (or `into`), by fast-forward, rebase, merge or squash. The acting part: the plan
 * and its refusals are land-plan.ts, the words land-words.ts.
 *
 * Invariants:
 * - A dry run is the plan said (land-words.ts), nothing more; a real run acts only on a plan made
 *   by the same `planLanding`, made again right before acting. A dry run never names the id of a
 *   commit it has not made, and a confirmed plan lands with the commits it made.
 * - Every strategy ends in one fast-forward of the target to a commit computed beforehand, so the
 *   target branch is always at its old or its new commit. The intent (old and new commit) is
 *   recorded in the manifest before the target moves; a land killed at any step leaves a record
 *   that `inspect` resolves by looking at the target, and the next `land` settles it.
 * - The plan is checked again right before the target moves (tips, worktree, child, checkout);
 *   anything changed refuses (`moved`) rather than landing something nobody planned.
 * - After landing: the manifest records it (so the branch counts as merged: inventory/merged.ts's `landing`
 *   rule), the parent is told through the report store (its own Pi delivers it), and `remove`
 *   retires the worktree through the safe removal (branch kept unless asked).
 */
import { CheckoutMoveError } from "../git/land.ts";
import { landingShownHere } from "../adoption/reports.ts";
import { fixedReportId } from "../manifest/child-reports.ts";
import { canSettleLanding, type Landing, type LandStrategy, type Manifest } from "../manifest/schema.ts";
import { isActionBusy } from "../manifest/store.ts";
import { errorClause, errorSentence } from "../errors.ts";
import { checkpoint, NO_FAULTS } from "../faults.ts";
import { counted } from "../text.ts";
import {
  type LandDeps,
  type LandPlan,
  type LandRefusal,
  type LandRequest,
  planLanding,
  samePlan,
} from "./land-plan.ts";
import { describeLandPlan } from "./land-words.ts";
import { removeHandoff, type RemoveOutcome } from "../remove/remove.ts";

export type { LandDeps, LandPlan, LandRequest } from "./land-plan.ts";

export type LandOutcome =
  | { ok: true; code: "dry_run"; plan: LandPlan; message: string }
  /** Nothing new to land, but a landing killed after its target moved was recorded (and told) now. */
  | { ok: true; code: "settled"; message: string }
  | { ok: true; code: "landed"; plan: LandPlan; message: string; removal?: RemoveOutcome }
  | { ok: false; code: LandRefusal | "failed"; message: string; choices?: LandStrategy[]; plan?: LandPlan };

/** Landed, but the removal asked for with it (`--remove`) did not go through: the worktree is still there. */
export function removalFailedAfterLanding(outcome: LandOutcome): boolean {
  return outcome.ok && outcome.code === "landed" && outcome.removal !== undefined && outcome.removal.code !== "removed";
}

/**
 * Lands handoff `id` (or, with `dryRun`, says what it would do), as the one actor on it (the
 * handoff's action lock); `--remove` then retires the worktree, taking the lock itself.
 */
export async function landHandoff(
  deps: LandDeps,
  id: string,
  request: LandRequest,
  now: () => Date = () => new Date(),
): Promise<LandOutcome> {
  const landed = await deps.store.withActionLock(id, "land", () => landLocked(deps, id, request, now));
  if (isActionBusy(landed)) return { ok: false, code: "busy", message: landed.message };
  if (landed.code !== "landed" || !request.remove || request.dryRun) return landed;
  // The landing is recorded: the branch now counts as merged into the target (its `landing` rule).
  const removal = await removeHandoff(deps, id, {
    force: false,
    deleteBranch: request.deleteBranch,
    forceHint: `run pi-handoff remove ${id} --force`,
  });
  const removed = removal.code === "removed" ? removal.message : `The worktree was not removed: ${removal.message}`;
  return { ...landed, message: `${landed.message} ${removed}`, removal };
}

/** `landHandoff` for a caller that already holds handoff `id`'s action lock (the queue, queue/queue.ts). */
export async function landLocked(
  deps: LandDeps,
  id: string,
  request: LandRequest,
  now: () => Date,
): Promise<LandOutcome> {
  const settled = await settleInterrupted(deps, id, now);
  const planned = await planLanding(deps, id, request);
  if (!planned.ok && planned.code === "nothing_to_land" && settled !== undefined) {
    // An earlier land was killed after its target moved: that landing is the one the user asked for.
    return {
      ok: true,
      code: "settled",
      message: `An interrupted landing had already moved ${settled.into} to ${settled.to}; it is recorded now. ${planned.message}`,
    };
  }
  if (!planned.ok) return planned;
  const { manifest } = planned;
  if (request.dryRun) return dryRunOutcome(planned.plan, request);
  if (request.branchTip !== undefined && planned.plan.branchTip !== request.branchTip)
    return {
      ok: false,
      code: "moved",
      plan: planned.plan,
      message: `${planned.plan.branch} moved on from ${request.branchTip.slice(0, 12)}; nothing was landed.`,
    };
  if (request.confirmed !== undefined && !samePlan(planned.plan, request.confirmed)) {
    return {
      ok: false,
      code: "moved",
      plan: planned.plan,
      message: `${planned.plan.into} or ${planned.plan.branch} changed since the landing was shown; nothing was landed. Look at it again.`,
    };
  }
  // What was confirmed lands as it was shown: the very commits it made (their ids hold the time they were made).
  const plan =
    request.confirmed !== undefined &&
    (await deps.git.resolveCommit(planned.plan.repo, request.confirmed.to)) !== undefined
      ? { ...planned.plan, to: request.confirmed.to }
      : planned.plan;
  // Checked again right before acting: someone may have committed, or the child started a turn.
  const again = await planLanding(deps, id, {
    into: plan.into,
    strategy: plan.strategy,
    remove: request.remove,
    ...(request.noVerify === undefined ? {} : { noVerify: request.noVerify }),
    ...(request.message === undefined ? {} : { message: request.message }),
  });
  if (!again.ok) return { ...again, plan };
  if (!samePlan(again.plan, plan)) {
    return {
      ok: false,
      code: "moved",
      plan,
      message: `${plan.into} or ${plan.branch} changed while the landing was being prepared; nothing was landed. Run it again.`,
    };
  }
  // The steps below are the crash-safe sequence of the header: intent, move, record, tell.
  const intent = await recordIntent(deps, id, plan, now);
  checkpoint(deps.faults ?? NO_FAULTS, "land-intent");
  const notMoved = await moveTarget(deps, id, plan, now);
  if (notMoved !== undefined) return notMoved;
  checkpoint(deps.faults ?? NO_FAULTS, "land-target");
  await settleLanding(deps, id, now);
  checkpoint(deps.faults ?? NO_FAULTS, "land-record");
  const told = await tellParent(deps, manifest, intent, now, { shownHere: true });
  const message = [
    `Landed ${counted(plan.commits.length, "commit")} of ${plan.branch} into ${plan.into} (${plan.strategy}): ${plan.into} is now at ${plan.to}.`,
    ...(told === undefined ? [] : [told]),
  ];
  return { ok: true, code: "landed", plan, message: message.join(" ") };
}

function dryRunOutcome(plan: LandPlan, request: LandRequest): LandOutcome {
  const lines = describeLandPlan(plan);
  if (request.remove)
    lines.push(
      `Then remove the handoff's worktree (branch ${plan.branch} ${request.deleteBranch ? "deleted if merged" : "kept"}).`,
    );
  return { ok: true, code: "dry_run", plan, message: `Dry run, nothing changed. Would:\n${lines.join("\n")}` };
}

/** Records the landing as `intended` (old and new commit) before the target moves. */
async function recordIntent(deps: LandDeps, id: string, plan: LandPlan, now: () => Date): Promise<Landing> {
  const intent: Landing = {
    state: "intended",
    at: now().toISOString(),
    into: plan.into,
    ...(plan.checkout === undefined ? {} : { checkout: plan.checkout }),
    strategy: plan.strategy,
    from: plan.from,
    to: plan.to,
    branchTip: plan.branchTip,
    commits: plan.commits,
  };
  await deps.store.update(id, (m) => {
    m.landings = [...(m.landings ?? []), intent];
  });
  return intent;
}

/**
 * Moves the target (with its checkout's files, if it has one) by one fast-forward; undefined when
 * it moved. A failed move is settled at once from where the target is now.
 */
async function moveTarget(
  deps: LandDeps,
  id: string,
  plan: LandPlan,
  now: () => Date,
): Promise<LandOutcome | undefined> {
  try {
    if (plan.checkout !== undefined)
      await deps.landGit.fastForwardCheckout(plan.checkout, plan.into, {
        from: plan.from,
        to: plan.to,
        touched: plan.touched,
        tag: id,
      });
    else
      await deps.landGit.updateBranch(
        plan.repo,
        plan.into,
        { from: plan.from, to: plan.to },
        `pi-handoff land ${id} (${plan.strategy})`,
      );
    return undefined;
  } catch (error) {
    const settled = await settleLanding(deps, id, now);
    if (settled === "landed") return undefined;
    const where =
      settled === "abandoned"
        ? `${plan.into} is still at ${plan.from.slice(0, 12)}`
        : `${plan.into} moved meanwhile; pi-handoff inspect ${id} shows where`;
    const files = error instanceof CheckoutMoveError ? `; ${error.checkout}` : "";
    return {
      ok: false,
      code: "failed",
      plan,
      message: `Could not move ${plan.into}: ${errorClause(error)}; nothing was landed (${where})${files}.`,
    };
  }
}

/**
 * Tells the parent session through the report store (its own Pi delivers it), once per landing:
 * the notice's id comes from the landing, so telling again (after a crash) writes nothing.
 * `shownHere`: this process's outcome says the landing to the person, so should this process be
 * the parent's Pi, the notice is for its model only (adoption/reports.ts `landingShownHere`).
 */
async function tellParent(
  deps: LandDeps,
  manifest: Manifest,
  landing: Pick<Landing, "into" | "strategy" | "to" | "commits" | "at">,
  now: () => Date,
  options: { shownHere?: boolean } = {},
): Promise<string | undefined> {
  const plan = { ...landing, branch: manifest.branch };
  const fixedId = { at: new Date(landing.at), hex: landing.to };
  // Marked before the write: the parent's own watch may deliver the notice as soon as the file
  // appears, before the write has returned here.
  if (options.shownHere === true) landingShownHere(fixedReportId(fixedId));
  try {
    await deps.reports.write(
      {
        handoffId: manifest.id,
        kind: "landed",
        branch: manifest.branch,
        parentSessionFile: manifest.parent.sessionFile,
        text: `Landed ${counted(plan.commits.length, "commit")} of ${plan.branch} into ${plan.into} by ${plan.strategy}; ${plan.into} is now at ${plan.to}.`,
        commits: plan.commits,
        landing: { into: plan.into, strategy: plan.strategy, result: plan.to },
        fixedId,
      },
      now(),
    );
    return undefined;
  } catch (error) {
    return `(The parent session could not be told: ${errorSentence(error)})`;
  }
}

/**
 * Settles the latest landing if it is still `intended`: `landed` when its target is at the new
 * commit, `abandoned` when still at the old one; left as it is otherwise (someone moved it since).
 */
export async function settleLanding(
  deps: Pick<LandDeps, "store" | "git">,
  id: string,
  now: () => Date,
): Promise<"landed" | "abandoned" | "unsettled"> {
  const read = await deps.store.read(id);
  if (!read.ok) return "unsettled";
  const landing = read.manifest.landings?.at(-1);
  if (landing?.state !== "intended") return "unsettled";
  const at = await deps.git.resolveCommit(read.manifest.repo.root, `refs/heads/${landing.into}`);
  const outcome = at === landing.to ? "landed" : at === landing.from ? "abandoned" : undefined;
  if (outcome === undefined || !canSettleLanding(landing.state, outcome)) return "unsettled";
  await deps.store.update(id, (m) => {
    const last = m.landings?.at(-1);
    if (last !== undefined && last.state === "intended" && last.to === landing.to) {
      last.state = outcome;
      last.settledAt = now().toISOString();
    }
  });
  return outcome;
}

/**
 * A landing interrupted earlier (its process was killed) is settled before a new one is planned.
 * Returns the landing when it was still `intended` and turns out to have landed.
 */
async function settleInterrupted(deps: LandDeps, id: string, now: () => Date): Promise<Landing | undefined> {
  const read = await deps.store.read(id);
  const landing = read.ok ? read.manifest.landings?.at(-1) : undefined;
  if (!read.ok || landing === undefined) return undefined;
  const state = landing.state === "intended" ? await settleLanding(deps, id, now) : landing.state;
  // Killed after the target moved, the parent may not have been told yet (telling twice writes nothing).
  if (state === "landed") await tellParent(deps, read.manifest, landing, now);
  return landing.state === "intended" && state === "landed" ? landing : undefined;
}

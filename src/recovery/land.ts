/**
 * `pi-handoff land` / `/handoffs land`: bring a handoff branch's commits into the branch it
 * started from (or `into`), by fast-forward, rebase, merge or squash.
 *
 * Invariants:
 * - Planning changes nothing a person can see: every check reads, and the new commits a rebase,
 *   merge or squash needs are made in the object store only (git/land.ts), so every refusal and
 *   every `--dry-run` leaves refs, index and files byte-identical.
 * - Refused, before anything changes: while the child Pi is in a turn (or asking for input); when
 *   the worktree has uncommitted or untracked files; when the target's checkout has uncommitted
 *   changes in files the landing touches; on conflicts (found with `git merge-tree`, paths listed);
 *   with `--remove` while the child Pi still runs. Each refusal names the reason and the way on.
 * - Every strategy ends in one fast-forward of the target to a commit computed beforehand, so the
 *   target branch is always at its old or its new commit. The intent (old and new commit) is
 *   recorded in the manifest before the target moves; a land killed at any step leaves a record
 *   that `inspect` resolves by looking at the target, and the next `land` settles it.
 * - The plan is checked again right before the target moves (tips, worktree, child, checkout);
 *   anything changed refuses (`moved`) rather than landing something nobody planned.
 * - After landing: the manifest records it, the parent is told through the report store (its own
 *   Pi delivers it), and `remove` retires the worktree through the safe removal (branch kept).
 */
import type { CommitDetail, LandGit } from "../git/land.ts";
import type { SimpleGitPort } from "../git/git.ts";
import type { ChildReportStore } from "../manifest/child-reports.ts";
import { canSettleLanding, LAND_STRATEGIES, type LandStrategy, type Landing, type Manifest } from "../manifest/schema.ts";
import { isActionBusy, type ManifestStore } from "../manifest/store.ts";
import { errorClause, errorSentence } from "../errors.ts";
import { isInProgress } from "./classify.ts";
import type { GatherDeps } from "./gather.ts";
import { inspectHandoff } from "./inventory.ts";
import type { ParsedRecoveryCommand } from "./command-line.ts";
import type { HandoffReport } from "./report-schema.ts";
import { removeHandoff, type RemoveOutcome } from "./remove.ts";
import { CHILD_STATE_LABELS } from "./status.ts";

/**
 * Crash points for tests, as the handoff's (`PI_HANDOFF_FAULT=kill-after:<point>`): SIGKILL right
 * after `land-intent` (intent recorded, target not moved), `land-target` (target moved, manifest
 * still `intended`), `land-record` (landing recorded, parent not yet told).
 */
export const LAND_KILL_POINTS = ["land-intent", "land-target", "land-record"] as const;
export type LandKillPoint = (typeof LAND_KILL_POINTS)[number];

export function landKillPointFromEnv(env: NodeJS.ProcessEnv): LandKillPoint | undefined {
  const value = env.PI_HANDOFF_FAULT ?? "";
  return LAND_KILL_POINTS.find((point) => value === `kill-after:${point}`);
}

function checkpoint(configured: LandKillPoint | undefined, point: LandKillPoint): void {
  if (configured === point) process.kill(process.pid, "SIGKILL");
}

export interface LandDeps extends GatherDeps {
  git: SimpleGitPort;
  landGit: LandGit;
  store: ManifestStore;
  reports: ChildReportStore;
  /** A crash point for tests (`PI_HANDOFF_FAULT=kill-after:land-...`). */
  killAfter?: LandKillPoint;
}

export interface LandRequest {
  into?: string;
  strategy?: LandStrategy;
  dryRun: boolean;
  remove: boolean;
  deleteBranch: boolean;
  /** The plan the user was shown and confirmed (a dry run's): nothing lands unless the plan made now is the same. */
  confirmed?: LandPlan;
}

export interface LandPlan {
  handoffId: string;
  branch: string;
  repo: string;
  into: string;
  /** Where `into` is checked out (its files move with it), if anywhere. */
  checkout?: string;
  strategy: LandStrategy;
  from: string;
  to: string;
  branchTip: string;
  /** The branch's commits that `into` lacks, oldest first. */
  commits: { sha: string; subject: string }[];
  /** How many commits the landing creates (0 for a fast-forward). */
  created: number;
  /** Files whose content changes in `into`. */
  touched: string[];
  /** Whether a fast-forward was possible (for the message). */
  fastForward: boolean;
}

export type LandRefusal =
  /** Another command acts on the handoff right now (its action lock). */
  | "busy"
  | "not_found"
  | "invalid"
  | "removed"
  | "in_progress"
  | "child_working"
  | "child_running"
  | "worktree_dirty"
  | "target_dirty"
  | "conflict"
  | "nothing_to_land"
  | "needs_strategy"
  | "not_fast_forward"
  | "not_linear"
  | "no_target"
  | "branch_gone"
  | "moved";

export type LandPlanOutcome =
  | { ok: true; plan: LandPlan; manifest: Manifest; report: HandoffReport }
  | { ok: false; code: LandRefusal; message: string; choices?: LandStrategy[]; conflicts?: string[] };

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

const OTHER_STRATEGIES: readonly LandStrategy[] = ["rebase", "merge", "squash"];

type LandPlanRefusal = Extract<LandPlanOutcome, { ok: false }>;

/** What landing handoff `id` would do, or why it may not. Writes only unreferenced objects. */
export async function planLanding(deps: LandDeps, id: string, request: Pick<LandRequest, "into" | "strategy" | "remove">): Promise<LandPlanOutcome> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") return { ok: false, code: inspected.code, message: inspected.message };
  const { report, manifest } = inspected;
  // The order of the checks is behaviour: when several refusals apply, the first is the one told.
  const refusal = handoffRefusal(report, manifest, id, request.remove);
  if (refusal !== undefined) return refusal;
  const branchState = report.branchState;
  if (branchState.code !== "present") {
    return { ok: false, code: "branch_gone", message: `Branch ${manifest.branch} of handoff ${id} ${branchState.code === "gone" ? "no longer exists" : `could not be read (${branchState.message})`}; nothing to land.` };
  }
  const dirty = worktreeRefusal(report, manifest);
  if (dirty !== undefined) return dirty;
  const repo = manifest.repo.root;
  const target = await landingTarget(deps, manifest, id, request.into);
  if (!target.ok) return target;
  const { into, from } = target;
  const branchTip = branchState.tip;
  const details = await deps.landGit.commitsBetween(repo, from, branchTip);
  if (details.length === 0) return { ok: false, code: "nothing_to_land", message: `Everything on ${manifest.branch} is already in ${into}; nothing to land.` };
  const fastForward = await deps.git.isAncestor(repo, from, branchTip);
  const strategy = strategyFor(request.strategy, fastForward, into, manifest.branch);
  if (!strategy.ok) return strategy;
  const built = await buildResult(deps.landGit, repo, { strategy: strategy.strategy, from, branchTip, details, fastForward, branch: manifest.branch, into, id });
  if (!built.ok) return built;
  const touched = await deps.landGit.changedPaths(repo, from, built.to);
  const checkout = await targetCheckout(deps, repo, into, touched);
  if (!checkout.ok) return checkout;
  const plan: LandPlan = {
    handoffId: id,
    branch: manifest.branch,
    repo,
    into,
    ...(checkout.path === undefined ? {} : { checkout: checkout.path }),
    strategy: strategy.strategy,
    from,
    to: built.to,
    branchTip,
    commits: details.map((commit) => ({ sha: commit.sha, subject: commit.subject })),
    created: built.created,
    touched,
    fastForward,
  };
  return { ok: true, plan, manifest, report };
}

/** Why the handoff as the inventory sees it may not land now (its record, its setup, its Pi); undefined: it may. */
function handoffRefusal(report: HandoffReport, manifest: Manifest, id: string, remove: boolean): LandPlanRefusal | undefined {
  if (manifest.state === "removed") return { ok: false, code: "removed", message: `Handoff ${id} was removed; its branch ${manifest.branch} can be merged with git directly.` };
  if (isInProgress(report)) return { ok: false, code: "in_progress", message: `Handoff ${id} is still being set up (${report.state}); land it once it has started.` };
  const child = report.child;
  if (child !== undefined && (child.state === "working" || child.state === "waiting_input")) {
    return {
      ok: false,
      code: "child_working",
      message: `Handoff ${id}'s Pi is in a turn (${CHILD_STATE_LABELS[child.state]}: ${child.basis}); nothing was landed. Let it finish (or stop its turn), then land again.`,
    };
  }
  if (remove && report.status.code === "child_running") {
    const pids = report.status.writers.map((writer) => writer.pid).join(", ");
    return {
      ok: false,
      code: "child_running",
      message: `Handoff ${id}'s Pi still runs (pid ${pids}), so its worktree cannot be removed; nothing was landed. Quit that Pi first, or land without --remove.`,
    };
  }
  return undefined;
}

/** Uncommitted work in the handoff's worktree (or work that could not be read) refuses the landing. */
function worktreeRefusal(report: HandoffReport, manifest: Manifest): LandPlanRefusal | undefined {
  if (report.worktree.code !== "present") return undefined;
  const changes = report.changes;
  if (changes === undefined) return { ok: false, code: "worktree_dirty", message: `Could not read the uncommitted changes in ${manifest.worktree.path}; nothing was landed.` };
  const uncommitted = [...changes.dirtyFiles, ...changes.untrackedFiles];
  if (uncommitted.length === 0) return undefined;
  return {
    ok: false,
    code: "worktree_dirty",
    message: `The worktree ${manifest.worktree.path} has uncommitted changes (${listed(uncommitted)}); nothing was landed. Commit or stash them there, then land again.`,
  };
}

/** The branch to land into (`--into`, else the default) and its commit now. */
async function landingTarget(deps: LandDeps, manifest: Manifest, id: string, requested: string | undefined): Promise<{ ok: true; into: string; from: string } | LandPlanRefusal> {
  const repo = manifest.repo.root;
  const into = requested ?? (await defaultTarget(deps, manifest));
  if (into === undefined) {
    return { ok: false, code: "no_target", message: `Handoff ${id} started from ${manifest.base.ref}, which is not a branch; say which branch to land into with --into <branch>.` };
  }
  if (into === manifest.branch) return { ok: false, code: "no_target", message: `Cannot land ${manifest.branch} into itself; give another branch with --into.` };
  const from = (await deps.git.branchExists(repo, into)) ? await deps.git.resolveCommit(repo, `refs/heads/${into}`) : undefined;
  if (from === undefined) return { ok: false, code: "no_target", message: `There is no local branch ${JSON.stringify(into)} in ${repo}; give an existing one with --into.` };
  return { ok: true, into, from };
}

/** The strategy asked for, else a fast-forward where one is possible; a target that moved on needs a choice. */
function strategyFor(requested: LandStrategy | undefined, fastForward: boolean, into: string, branch: string): { ok: true; strategy: LandStrategy } | LandPlanRefusal {
  const strategy = requested ?? (fastForward ? "ff" : undefined);
  if (strategy === undefined) {
    return {
      ok: false,
      code: "needs_strategy",
      choices: [...OTHER_STRATEGIES],
      message: `${into} has moved on since ${branch} left it, so it cannot be fast-forwarded; nothing was landed. Choose how: --strategy rebase, merge or squash.`,
    };
  }
  if (strategy === "ff" && !fastForward) {
    return {
      ok: false,
      code: "not_fast_forward",
      choices: [...OTHER_STRATEGIES],
      message: `${into} cannot be fast-forwarded to ${branch} (it has commits ${branch} lacks); nothing was landed. Use --strategy rebase, merge or squash.`,
    };
  }
  return { ok: true, strategy };
}

/** Where `into` is checked out, if anywhere; uncommitted changes there in files the landing touches refuse it. */
async function targetCheckout(deps: LandDeps, repo: string, into: string, touched: readonly string[]): Promise<{ ok: true; path: string | undefined } | LandPlanRefusal> {
  const checkout = (await deps.git.listWorktrees(repo)).find((worktree) => worktree.branch === into && !worktree.prunable)?.path;
  if (checkout === undefined) return { ok: true, path: undefined };
  const status = await deps.git.worktreeStatus(checkout);
  const clashing = [...status.dirtyFiles, ...status.untrackedFiles].filter((path) => touched.some((file) => touches(file, path)));
  if (clashing.length === 0) return { ok: true, path: checkout };
  return {
    ok: false,
    code: "target_dirty",
    message: `${checkout} (where ${into} is checked out) has uncommitted changes in files the landing changes (${listed(clashing)}); nothing was landed. Commit or stash them there, then land again.`,
  };
}

/** Whether a touched file and a dirty path (an untracked directory ends in `/`) are the same file. */
function touches(file: string, dirty: string): boolean {
  return dirty.endsWith("/") ? file.startsWith(dirty) : file === dirty || file.startsWith(`${dirty}/`) || dirty.startsWith(`${file}/`);
}

/** The branch the handoff started from: its base when that is a branch, else what its parent's checkout has out. */
async function defaultTarget(deps: LandDeps, manifest: Manifest): Promise<string | undefined> {
  const ref = manifest.base.ref.replace(/^refs\/heads\//, "");
  if (ref !== "HEAD" && ref !== manifest.branch && (await deps.git.branchExists(manifest.repo.root, ref))) return ref;
  try {
    return await deps.git.currentBranch(manifest.parent.cwd);
  } catch {
    return undefined;
  }
}

type BuildInput = { strategy: LandStrategy; from: string; branchTip: string; details: CommitDetail[]; fastForward: boolean; branch: string; into: string; id: string };

/** The commit the target will point at, made in the object store only. */
async function buildResult(landGit: LandGit, repo: string, input: BuildInput): Promise<{ ok: true; to: string; created: number } | LandPlanRefusal> {
  const { strategy, from, branchTip, details } = input;
  // A fast-forward, or a rebase onto a target that has not moved, keeps the branch's own commits.
  if (strategy === "ff" || (strategy === "rebase" && input.fastForward)) return { ok: true, to: branchTip, created: 0 };
  if (strategy === "rebase") {
    if (details.some((commit) => commit.parents.length > 1)) {
      return { ok: false, code: "not_linear", message: `${input.branch} contains merge commits, which a rebase would flatten; nothing was landed. Use --strategy merge or squash.` };
    }
    // Each rebased commit's tree is the target merged with the branch up to that commit.
    let parent = from;
    for (const commit of details) {
      const merged = await landGit.mergeTree(repo, from, commit.sha);
      if (!merged.clean) return conflictRefusal(input, merged.conflicts);
      parent = await landGit.commitTree(repo, { tree: merged.tree, parents: [parent], message: commit.message, author: commit });
    }
    return { ok: true, to: parent, created: details.length };
  }
  const merged = await landGit.mergeTree(repo, from, branchTip);
  if (!merged.clean) return conflictRefusal(input, merged.conflicts);
  if (strategy === "merge") {
    const to = await landGit.commitTree(repo, { tree: merged.tree, parents: [from, branchTip], message: `Merge branch '${input.branch}' into ${input.into}\n\nLanded from handoff ${input.id}.` });
    return { ok: true, to, created: 1 };
  }
  const subjects = details.map((commit) => `* ${commit.subject}`).join("\n");
  const to = await landGit.commitTree(repo, {
    tree: merged.tree,
    parents: [from],
    message: `${input.branch}: ${details.length} commit(s) squashed\n\nLanded from handoff ${input.id}:\n${subjects}`,
  });
  return { ok: true, to, created: 1 };
}

function conflictRefusal(input: BuildInput, conflicts: string[]): LandPlanRefusal {
  return {
    ok: false,
    code: "conflict",
    conflicts,
    message: `Landing ${input.branch} into ${input.into} (${input.strategy}) would conflict in ${listed(conflicts)}; nothing was landed. Merge ${input.into} into ${input.branch} in the worktree and resolve them there, then land again.`,
  };
}

/** Whether `/handoffs` offers landing: the branch has commits its merge target lacks and no Pi is in a turn. */
export function canOfferLand(report: HandoffReport): boolean {
  const busy = report.child?.state === "working" || report.child?.state === "waiting_input";
  return report.state !== "removed" && !busy && report.branchState.code === "present" && report.branchState.unmerged.total > 0;
}

/** Plain lines saying exactly what the landing does. */
export function describeLandPlan(plan: LandPlan): string[] {
  const how: Record<LandStrategy, string> = {
    ff: `fast-forward ${plan.into} to ${plan.to.slice(0, 12)}`,
    rebase: plan.created === 0 ? `fast-forward ${plan.into} to ${plan.to.slice(0, 12)} (already based on it)` : `rebase ${plan.created} commit(s) onto ${plan.into}, which then points at ${plan.to.slice(0, 12)}`,
    merge: `create merge commit ${plan.to.slice(0, 12)} on ${plan.into}`,
    squash: `create one squashed commit ${plan.to.slice(0, 12)} on ${plan.into}`,
  };
  const lines = [`Land ${plan.commits.length} commit(s) of ${plan.branch} into ${plan.into} (${plan.from.slice(0, 12)} -> ${plan.to.slice(0, 12)}): ${how[plan.strategy]}.`];
  for (const commit of plan.commits) lines.push(`  ${commit.sha.slice(0, 12)} ${commit.subject}`);
  lines.push(
    plan.checkout === undefined
      ? `${plan.into} is not checked out anywhere: only the branch moves.`
      : `${plan.into} is checked out in ${plan.checkout}: ${plan.touched.length} file(s) there are updated (git merge --ff-only).`,
  );
  if (plan.strategy === "rebase" || plan.strategy === "squash") lines.push(`Branch ${plan.branch} keeps its own commits.`);
  return lines;
}

/**
 * Lands handoff `id` (or, with `dryRun`, says what it would do), as the one actor on it (the
 * handoff's action lock); `--remove` then retires the worktree, taking the lock itself.
 */
export async function landHandoff(deps: LandDeps, id: string, request: LandRequest, now: () => Date = () => new Date()): Promise<LandOutcome> {
  const landed = await deps.store.withActionLock(id, "land", () => landLocked(deps, id, request, now));
  if (isActionBusy(landed)) return { ok: false, code: "busy", message: landed.message };
  if (landed.code !== "landed" || !request.remove || request.dryRun) return landed;
  const removal = await removeHandoff(deps, id, {
    force: false,
    deleteBranch: request.deleteBranch,
    landedTip: landed.plan.branchTip,
    forceHint: `run pi-handoff remove ${id} --force`,
  });
  const removed = removal.code === "removed" ? removal.message : `The worktree was not removed: ${removal.message}`;
  return { ...landed, message: `${landed.message} ${removed}`, removal };
}

async function landLocked(deps: LandDeps, id: string, request: LandRequest, now: () => Date): Promise<LandOutcome> {
  const settled = await settleInterrupted(deps, id, now);
  const planned = await planLanding(deps, id, request);
  if (!planned.ok && planned.code === "nothing_to_land" && settled !== undefined) {
    // An earlier land was killed after its target moved: that landing is the one the user asked for.
    return { ok: true, code: "settled", message: `An interrupted landing had already moved ${settled.into} to ${settled.to}; it is recorded now. ${planned.message}` };
  }
  if (!planned.ok) return planned;
  const { plan, manifest } = planned;
  if (request.dryRun) return dryRunOutcome(plan, request);
  if (request.confirmed !== undefined && !samePlan(plan, request.confirmed)) {
    return { ok: false, code: "moved", plan, message: `${plan.into} or ${plan.branch} changed since the landing was shown; nothing was landed. Look at it again.` };
  }
  // Checked again right before acting: someone may have committed, or the child started a turn.
  const again = await planLanding(deps, id, { into: plan.into, strategy: plan.strategy, remove: request.remove });
  if (!again.ok) return { ...again, plan };
  if (!samePlan(again.plan, plan)) {
    return { ok: false, code: "moved", plan, message: `${plan.into} or ${plan.branch} changed while the landing was being prepared; nothing was landed. Run it again.` };
  }
  // The steps below are the crash-safe sequence of the header: intent, move, record, tell.
  const intent = await recordIntent(deps, id, plan, now);
  checkpoint(deps.killAfter, "land-intent");
  const notMoved = await moveTarget(deps, id, plan, now);
  if (notMoved !== undefined) return notMoved;
  checkpoint(deps.killAfter, "land-target");
  await settleLanding(deps, id, now);
  checkpoint(deps.killAfter, "land-record");
  const told = await tellParent(deps, manifest, intent, now);
  const message = [
    `Landed ${plan.commits.length} commit(s) of ${plan.branch} into ${plan.into} (${plan.strategy}): ${plan.into} is now at ${plan.to}.`,
    ...(told === undefined ? [] : [told]),
  ];
  return { ok: true, code: "landed", plan, message: message.join(" ") };
}

function dryRunOutcome(plan: LandPlan, request: LandRequest): LandOutcome {
  const lines = describeLandPlan(plan);
  if (request.remove) lines.push(`Then remove the handoff's worktree (branch ${plan.branch} ${request.deleteBranch ? "deleted if merged" : "kept"}).`);
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
async function moveTarget(deps: LandDeps, id: string, plan: LandPlan, now: () => Date): Promise<LandOutcome | undefined> {
  try {
    if (plan.checkout !== undefined) await deps.landGit.fastForwardCheckout(plan.checkout, plan.into, { from: plan.from, to: plan.to });
    else await deps.landGit.updateBranch(plan.repo, plan.into, { from: plan.from, to: plan.to }, `pi-handoff land ${id} (${plan.strategy})`);
    return undefined;
  } catch (error) {
    const settled = await settleLanding(deps, id, now);
    if (settled === "landed") return undefined;
    const where = settled === "abandoned" ? `${plan.into} is still at ${plan.from.slice(0, 12)}` : `${plan.into} moved meanwhile; pi-handoff inspect ${id} shows where`;
    return { ok: false, code: "failed", plan, message: `Could not move ${plan.into}: ${errorClause(error)}; nothing was landed (${where}).` };
  }
}

function samePlan(a: LandPlan, b: LandPlan): boolean {
  return a.from === b.from && a.branchTip === b.branchTip && a.into === b.into && a.checkout === b.checkout && a.strategy === b.strategy && a.touched.join("\0") === b.touched.join("\0");
}

/**
 * Tells the parent session through the report store (its own Pi delivers it), once per landing:
 * the notice's id comes from the landing, so telling again (after a crash) writes nothing.
 */
async function tellParent(deps: LandDeps, manifest: Manifest, landing: Pick<Landing, "into" | "strategy" | "to" | "commits" | "at">, now: () => Date): Promise<string | undefined> {
  const plan = { ...landing, branch: manifest.branch };
  try {
    await deps.reports.write(
      {
        handoffId: manifest.id,
        kind: "landed",
        branch: manifest.branch,
        parentSessionFile: manifest.parent.sessionFile,
        text: `Landed ${plan.commits.length} commit(s) of ${plan.branch} into ${plan.into} by ${plan.strategy}; ${plan.into} is now at ${plan.to}.`,
        commits: plan.commits,
        landing: { into: plan.into, strategy: plan.strategy, result: plan.to },
        fixedId: { at: new Date(landing.at), hex: landing.to },
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
export async function settleLanding(deps: Pick<LandDeps, "store" | "git">, id: string, now: () => Date): Promise<"landed" | "abandoned" | "unsettled"> {
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

function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, 10).join(", ");
  return paths.length > 10 ? `${shown} and ${paths.length - 10} more` : shown;
}

/** The land request from the parsed command words (shared by `pi-handoff land` and `/handoffs land`). */
export function landRequestFrom(parsed: Pick<ParsedRecoveryCommand, "flags" | "into" | "strategy">): { ok: true; request: LandRequest } | { ok: false; message: string } {
  const strategy = LAND_STRATEGIES.find((known) => known === parsed.strategy);
  if (parsed.strategy !== undefined && strategy === undefined) {
    return { ok: false, message: `--strategy must be one of ${LAND_STRATEGIES.join(", ")}, not ${JSON.stringify(parsed.strategy)}.` };
  }
  if (parsed.into !== undefined && (parsed.into.length === 0 || parsed.into.startsWith("-"))) return { ok: false, message: "--into needs a branch name." };
  return {
    ok: true,
    request: {
      ...(parsed.into === undefined ? {} : { into: parsed.into }),
      ...(strategy === undefined ? {} : { strategy }),
      dryRun: parsed.flags["dry-run"] === true,
      remove: parsed.flags.remove === true,
      deleteBranch: parsed.flags["delete-branch"] === true,
    },
  };
}

/**
 * `pi-handoff land --all` (and `land <handoff> <handoff>...`): the local merge queue. Every ready
 * child of one repository is, in turn, rebased onto its target's current tip in its own worktree,
 * checked there (the settings' `check`), and landed by fast-forward; one that cannot land is sent
 * back, and the queue goes on with the rest.
 *
 * Invariants:
 * - Plan, words and act apart: `planQueue` reads only; `describeQueuePlan` and
 *   `describeQueueReport` render codes; `runQueue` acts. A dry run is the plan, said.
 * - Ready: commits of its own the target lacks, a clean worktree present, its Pi not in a turn,
 *   set up, a target branch. Every other handoff of the repository is listed as waiting, with why.
 * - Order (from the forecast, recovery/forecast.ts): those that merge cleanly into the target now
 *   before those that do not; among them, fewer predicted clashes with the other ready siblings
 *   first; then by creation time, then id. So a pair that clashes lands its elder, and the other is
 *   sent back once, rather than both being rebased on each other's account.
 * - One queue per repository: it holds the store's action lock of the repository's queue key
 *   (`queue-<hash of the common dir>`) for the whole run, and each member's own action lock while
 *   it is processed, so a single land, rebase or remove of that member is refused as `busy` then.
 * - A member is landed only when the check passed on exactly the tip that lands: the landing is
 *   planned after the check and must be of that tip, then carried out as confirmed (it refuses as
 *   `moved` if anything changed); a branch that moved meanwhile waits, untouched.
 * - The check runs in the member's worktree with the variables its Pi got (its ports, `env`).
 * - Sent back, not lost: a conflict changes nothing (the rebase refuses first); a failing check or
 *   a refused landing moves the branch back to its tip from before the queue with the rebase's own
 *   safe move (git/land.ts `moveCheckedOutBranch`), unless `keepRebased`, and marks that rebase
 *   `undone` in the manifest. The child is told by a note (handoff-notes.ts `sent_back`: why, the
 *   check's last lines, its log), which is the record of why.
 * - Not crash-safe as one run yet: each rebase and landing is (their intents), but a queue killed
 *   between a member's rebase and its landing leaves that member rebased; running again carries on.
 */
import { createHash } from "node:crypto";
import { handoffVariables } from "../launch/launch-command.ts";
import type { ChildReportStore } from "../manifest/child-reports.ts";
import type { HandoffNoteStore } from "../manifest/handoff-notes.ts";
import type { Manifest } from "../manifest/schema.ts";
import { isActionBusy } from "../manifest/store.ts";
import { errorClause } from "../errors.ts";
import { counted, printable } from "../text.ts";
import { type CheckCommand, checkLogPath, type CheckOutcome, describeCheckFailure, runCheck } from "./check.ts";
import { isInProgress } from "./classify.ts";
import { forecastHandoffs } from "./forecast.ts";
import { buildInventory, type InventoryDeps } from "./inventory.ts";
import { landLocked } from "./land.ts";
import { defaultTarget, type LandDeps, planLanding } from "./land-plan.ts";
import { listed } from "./land-words.ts";
import { type RebaseDeps, rebaseLocked } from "./rebase.ts";
import type { HandoffReport } from "./report-schema.ts";
import { BUSY_CHILD_STATES, CHILD_STATE_LABELS } from "./status.ts";

export type QueueDeps = LandDeps & RebaseDeps & InventoryDeps & { reports: ChildReportStore; notes: HandoffNoteStore };

export interface QueueCheck {
  command: CheckCommand;
  timeoutMs: number;
  /** The environment the check runs with. */
  env: NodeJS.ProcessEnv;
}

export interface QueueRequest {
  /** The repository's common git dir (canonical, as manifests record it). */
  repoCommonDir: string;
  /** `land <handoff> <handoff>...`: only these (ids); all of the repository's otherwise. */
  ids?: readonly string[];
  /** None: the children land without a check (the report says so). */
  check?: QueueCheck;
  /** A child sent back after its rebase keeps the rebased branch (`--keep-rebased`). */
  keepRebased: boolean;
  noVerify?: boolean;
}

export type WaitReason =
  | { code: "in_progress"; state: string }
  | { code: "branch_gone" }
  | { code: "nothing_to_land" }
  | { code: "child_working"; label: string }
  | { code: "no_worktree" }
  | { code: "worktree_dirty"; files: string[] }
  | { code: "no_target" }
  /** Found not ready when its turn came (the rebase's refusal says why). */
  | { code: "not_ready"; message: string }
  /** Another command held its action lock when its turn came. */
  | { code: "busy"; message: string };

export interface QueueMember {
  id: string;
  branch: string;
  worktree: string;
  into: string;
  createdAt: string;
  /** Its branch's commits the target lacks, now. */
  commits: number;
  /** Whether its branch already has the target's tip (the first one lands by fast-forward then). */
  onTip: boolean;
  /** Files the forecast says conflict merging it into the target now. */
  targetConflicts: string[];
  /** The other ready members the forecast says it clashes with. */
  clashesWith: string[];
}

export interface QueuePlan {
  members: QueueMember[];
  waiting: { id: string; branch: string; reason: WaitReason }[];
  /** What the forecast could not say (one sentence each); those members go last. */
  problems: string[];
}

export type SentBackReason =
  | { code: "conflict"; into: string; conflicts: string[] }
  | { code: "check_failed"; into: string; check: Extract<CheckOutcome, { code: "failed" }>; timeoutMs: number }
  | { code: "refused"; into: string; step: "rebase" | "land"; message: string };

/** Where the branch of a child sent back is. */
export type BranchAfter =
  | { code: "untouched"; tip: string }
  | { code: "restored"; tip: string; rebasedTo: string }
  | { code: "kept_rebased"; tip: string; before: string }
  | { code: "restore_failed"; tip: string; before: string; message: string };

export type MemberOutcome =
  | { code: "landed"; id: string; branch: string; into: string; to: string; commits: number; checked: boolean }
  | { code: "sent_back"; id: string; branch: string; reason: SentBackReason; after: BranchAfter; told?: string }
  | { code: "waiting"; id: string; branch: string; reason: WaitReason };

export interface QueueReport {
  landed: Extract<MemberOutcome, { code: "landed" }>[];
  sentBack: Extract<MemberOutcome, { code: "sent_back" }>[];
  waiting: Extract<MemberOutcome, { code: "waiting" }>[];
}

export type QueueOutcome = { ok: true; report: QueueReport } | { ok: false; code: "busy"; message: string };

/** The key of a repository's queue in the store's action locks (a handoff id's shape, never one's value). */
export function queueLockId(repoCommonDir: string): string {
  return `queue-${createHash("sha256").update(repoCommonDir).digest("hex").slice(0, 16)}`;
}

/** What the queue would do now, in order. Reads only (git merge-tree writes unreferenced objects). */
export async function planQueue(
  deps: QueueDeps,
  request: Pick<QueueRequest, "repoCommonDir" | "ids">,
): Promise<QueuePlan> {
  const only = request.ids === undefined ? undefined : new Set(request.ids);
  const entries = await deps.store.list();
  const inventory = await buildInventory(deps, {
    repoCommonDir: request.repoCommonDir,
    entries,
    ...(only === undefined ? {} : { only: (manifest: Manifest) => only.has(manifest.id) }),
  });
  const manifests = new Map<string, Manifest>();
  for (const entry of entries)
    if (entry.ok && entry.manifest.repo.commonDir === request.repoCommonDir) manifests.set(entry.id, entry.manifest);
  const waiting: QueuePlan["waiting"] = [];
  const ready: { report: HandoffReport; manifest: Manifest; into: string }[] = [];
  for (const report of inventory.handoffs) {
    const manifest = manifests.get(report.id);
    if (manifest === undefined) continue;
    const reason = waitReason(report);
    const into = reason === undefined ? await defaultTarget(deps, manifest) : undefined;
    if (reason !== undefined || into === undefined || into === manifest.branch)
      waiting.push({ id: report.id, branch: report.branch, reason: reason ?? { code: "no_target" } });
    else ready.push({ report, manifest, into });
  }
  // The forecast of every live handoff of the repository (the siblings of the ready ones included).
  const forecast = await forecastHandoffs(deps, [...manifests.values()]);
  const readyIds = new Set(ready.map((entry) => entry.report.id));
  const byId = new Map(forecast.entries.map((entry) => [entry.id, entry]));
  const members = ready.map(({ report, manifest, into }): QueueMember => {
    const entry = byId.get(report.id);
    const toLand = entry?.code === "to-land" ? entry : undefined;
    const branchState = report.branchState;
    return {
      id: report.id,
      branch: report.branch,
      worktree: manifest.worktree.path,
      into,
      createdAt: report.createdAt,
      commits: branchState.code === "present" ? branchState.unmerged.total : 0,
      onTip: branchState.code === "present" && (branchState.behind ?? 0) === 0,
      targetConflicts: toLand?.conflicts ?? [],
      clashesWith: (toLand?.siblings ?? [])
        .filter((sibling) => sibling.conflicts.length > 0 && readyIds.has(sibling.id))
        .map((sibling) => sibling.id),
    };
  });
  members.sort(
    (a, b) =>
      Number(a.targetConflicts.length > 0) - Number(b.targetConflicts.length > 0) ||
      a.clashesWith.length - b.clashesWith.length ||
      a.createdAt.localeCompare(b.createdAt) ||
      a.id.localeCompare(b.id),
  );
  return { members, waiting, problems: forecast.problems };
}

/** Why a handoff as the inventory sees it is not ready to queue; undefined: it is (its target aside). */
function waitReason(report: HandoffReport): WaitReason | undefined {
  if (isInProgress(report)) return { code: "in_progress", state: report.state };
  const branchState = report.branchState;
  if (branchState.code !== "present") return { code: "branch_gone" };
  if (branchState.unmerged.total === 0) return { code: "nothing_to_land" };
  const child = report.child;
  if (child !== undefined && BUSY_CHILD_STATES.has(child.state))
    return { code: "child_working", label: CHILD_STATE_LABELS[child.state] };
  if (report.worktree.code !== "present") return { code: "no_worktree" };
  const changes = report.changes;
  const uncommitted = changes === undefined ? [] : [...changes.dirtyFiles, ...changes.untrackedFiles];
  if (changes === undefined || uncommitted.length > 0) return { code: "worktree_dirty", files: uncommitted };
  return undefined;
}

/** Runs the queue: one at a time, as the repository's one queue. */
export async function runQueue(
  deps: QueueDeps,
  request: QueueRequest,
  now: () => Date = () => new Date(),
): Promise<QueueOutcome> {
  const ran = await deps.store.withActionLock(queueLockId(request.repoCommonDir), "queue", async () => {
    const plan = await planQueue(deps, request);
    const report: QueueReport = {
      landed: [],
      sentBack: [],
      waiting: plan.waiting.map((entry) => ({ code: "waiting" as const, ...entry })),
    };
    for (const member of plan.members) {
      const outcome = await processMember(deps, member, request, now);
      if (outcome.code === "landed") report.landed.push(outcome);
      else if (outcome.code === "sent_back") report.sentBack.push(outcome);
      else report.waiting.push(outcome);
    }
    return report;
  });
  if (isActionBusy(ran))
    return {
      ok: false,
      code: "busy",
      message: `Another pi-handoff land --all of this repository runs (process ${ran.holder.pid}, since ${ran.holder.since}); nothing was landed. Let it finish, then run it again.`,
    };
  return { ok: true, report: ran };
}

/** Rebase codes that mean the handoff stopped being ready since the plan (it waits, nothing was changed). */
const NOT_READY = new Set([
  "busy",
  "not_found",
  "invalid",
  "removed",
  "in_progress",
  "child_working",
  "no_worktree",
  "worktree_dirty",
  "branch_gone",
  "no_target",
]);

async function processMember(
  deps: QueueDeps,
  member: QueueMember,
  request: QueueRequest,
  now: () => Date,
): Promise<MemberOutcome> {
  const { id, branch } = member;
  const held = await deps.store.withActionLock(id, "land", async (): Promise<MemberOutcome> => {
    const read = await deps.store.read(id);
    if (!read.ok) return { code: "waiting", id, branch, reason: { code: "not_ready", message: read.message } };
    const repo = read.manifest.repo.root;
    const tipOf = (): Promise<string | undefined> => deps.git.resolveCommit(repo, `refs/heads/${branch}`);
    const before = await tipOf();
    if (before === undefined) return { code: "waiting", id, branch, reason: { code: "branch_gone" } };
    const rebased = await rebaseLocked(deps, id, { dryRun: false, ...noVerify(request) }, now);
    if (!rebased.ok && rebased.code !== "up_to_date") {
      if (rebased.code === "conflict")
        return sendBack(deps, member, read.manifest, now, {
          reason: { code: "conflict", into: member.into, conflicts: rebased.conflicts ?? [] },
          after: { code: "untouched", tip: before },
        });
      if (NOT_READY.has(rebased.code))
        return { code: "waiting", id, branch, reason: { code: "not_ready", message: rebased.message } };
      return sendBack(deps, member, read.manifest, now, {
        reason: { code: "refused", into: member.into, step: "rebase", message: rebased.message },
        after: { code: "untouched", tip: (await tipOf()) ?? before },
      });
    }
    const tip = (await tipOf()) ?? before;
    let checked = false;
    if (request.check !== undefined) {
      const outcome = await runCheck(request.check.command, {
        cwd: member.worktree,
        // What everything run for the handoff gets (its ports, the settings' env), as its Pi got them.
        env: { ...request.check.env, ...Object.fromEntries(handoffVariables(read.manifest)) },
        timeoutMs: request.check.timeoutMs,
        log: checkLogPath(deps.agentDir, id, tip, now()),
      });
      if (outcome.code === "failed")
        return sendBack(deps, member, read.manifest, now, {
          reason: { code: "check_failed", into: member.into, check: outcome, timeoutMs: request.check.timeoutMs },
          after: await putBack(deps, member, request, before, tip, now),
        });
      checked = true;
    }
    // Exactly the checked tip lands: its Pi may have committed meanwhile (a plan of another tip is
    // not landed, and the landing refuses as `moved` should the branch move after this plan).
    const landRequest = {
      into: member.into,
      strategy: "ff" as const,
      dryRun: false,
      remove: false,
      deleteBranch: false,
      ...noVerify(request),
    };
    const planned = await planLanding(deps, id, landRequest);
    const movedOn = planned.ok ? planned.plan.branchTip !== tip : (await tipOf()) !== tip;
    if (movedOn)
      return {
        code: "waiting",
        id,
        branch,
        reason: {
          code: "not_ready",
          message: `${branch} moved on from ${tip.slice(0, 12)} during its check; it was not landed.`,
        },
      };
    const landed = await landLocked(
      deps,
      id,
      planned.ok ? { ...landRequest, confirmed: planned.plan } : landRequest,
      now,
    );
    if (!landed.ok && landed.code === "moved")
      return { code: "waiting", id, branch, reason: { code: "not_ready", message: landed.message } };
    if (landed.ok && landed.code === "landed")
      return {
        code: "landed",
        id,
        branch,
        into: member.into,
        to: landed.plan.to,
        commits: landed.plan.commits.length,
        checked,
      };
    return sendBack(deps, member, read.manifest, now, {
      reason: { code: "refused", into: member.into, step: "land", message: landed.message },
      after: await putBack(deps, member, request, before, tip, now),
    });
  });
  if (isActionBusy(held)) return { code: "waiting", id, branch, reason: { code: "busy", message: held.message } };
  return held;
}

function noVerify(request: QueueRequest): { noVerify?: true } {
  return request.noVerify === true ? { noVerify: true } : {};
}

/** Moves a branch the queue rebased back to where it was (unless kept rebased), with its worktree's files. */
async function putBack(
  deps: QueueDeps,
  member: QueueMember,
  request: QueueRequest,
  before: string,
  tip: string,
  now: () => Date,
): Promise<BranchAfter> {
  if (tip === before) return { code: "untouched", tip };
  if (request.keepRebased) return { code: "kept_rebased", tip, before };
  try {
    const repo = member.worktree;
    await deps.landGit.moveCheckedOutBranch(member.worktree, member.branch, {
      from: tip,
      to: before,
      touched: await deps.landGit.changedPaths(repo, tip, before),
      tag: member.id,
      reason: `pi-handoff land --all: ${member.id} sent back`,
    });
    // The rebase that was undone says so (inspect's rebase line), rather than a tip the branch no longer has.
    const at = now().toISOString();
    await deps.store.update(member.id, (manifest) => {
      const last = manifest.rebases?.at(-1);
      if (last?.state === "rebased" && last.to === tip && last.from === before) {
        last.state = "undone";
        last.settledAt = at;
      }
    });
    return { code: "restored", tip: before, rebasedTo: tip };
  } catch (error) {
    return { code: "restore_failed", tip, before, message: errorClause(error) };
  }
}

async function sendBack(
  deps: QueueDeps,
  member: QueueMember,
  manifest: Manifest,
  now: () => Date,
  sent: { reason: SentBackReason; after: BranchAfter },
): Promise<MemberOutcome> {
  const { reason, after } = sent;
  const told = now();
  const outcome: Extract<MemberOutcome, { code: "sent_back" }> = {
    code: "sent_back",
    id: member.id,
    branch: member.branch,
    reason,
    after,
  };
  try {
    await deps.notes.write(
      {
        handoffId: member.id,
        kind: "sent_back",
        branch: manifest.branch,
        text: sentBackNote(member.branch, reason, after).join("\n"),
        sentBack: {
          reason: reason.code,
          into: reason.into,
          tip: after.tip,
          ...(reason.code === "check_failed" ? { log: reason.check.log } : {}),
        },
        // Its time is when it is said: after a rebase note of this same run, so the child reads them in order.
        fixedId: { at: told, hex: after.tip },
      },
      told,
    );
  } catch (error) {
    outcome.told = `its Pi could not be told: ${errorClause(error)}`;
  }
  return outcome;
}

/** Why, in one clause, from the reason's code. */
function sentBackWhy(reason: SentBackReason): string {
  switch (reason.code) {
    case "conflict":
      return `rebasing it onto ${reason.into} would conflict in ${listed(reason.conflicts)}`;
    case "check_failed":
      return `on ${reason.into}'s tip, ${describeCheckFailure(reason.check, reason.timeoutMs)}`;
    case "refused":
      return `the ${reason.step === "rebase" ? "rebase" : "landing"} was refused: ${reason.message}`;
  }
}

function branchAfterText(branch: string, after: BranchAfter): string {
  switch (after.code) {
    case "untouched":
      return `${branch} and its worktree were not changed (${branch} is at ${after.tip.slice(0, 12)}).`;
    case "restored":
      return `${branch} was rebased for the check (to ${after.rebasedTo.slice(0, 12)}) and moved back to ${after.tip.slice(0, 12)}, where it was, with its worktree's files.`;
    case "kept_rebased":
      return `${branch} stays rebased at ${after.tip.slice(0, 12)} (--keep-rebased; it was at ${after.before.slice(0, 12)}).`;
    case "restore_failed":
      return `${branch} could not be moved back to ${after.before.slice(0, 12)} (${after.message}); it is at ${after.tip.slice(0, 12)}.`;
  }
}

/** The note the child's Pi delivers: what failed, where its branch is, the check's last lines and its log. */
function sentBackNote(branch: string, reason: SentBackReason, after: BranchAfter): string[] {
  const lines = [`pi-handoff land --all did not land ${branch} into ${reason.into}: ${sentBackWhy(reason)}.`];
  lines.push(branchAfterText(branch, after));
  if (after.code === "restored")
    lines.push("A note that the branch was rebased, if one came just before, no longer holds.");
  if (reason.code === "check_failed") {
    lines.push(
      `The check's last ${counted(reason.check.tail.length, "line")} (the whole output: ${reason.check.log}):`,
    );
    lines.push(...reason.check.tail.map((line) => `  ${line}`));
  }
  lines.push("Fix it here and commit; the next pi-handoff land --all takes it again.");
  return lines;
}

const WAIT_TEXT: { [C in WaitReason["code"]]: (reason: Extract<WaitReason, { code: C }>) => string } = {
  in_progress: (reason) => `still being set up (${reason.state})`,
  branch_gone: () => "its branch is gone",
  nothing_to_land: () => "nothing to land",
  child_working: (reason) => `its Pi is in a turn (${reason.label})`,
  no_worktree: () => "its worktree is gone",
  worktree_dirty: (reason) =>
    reason.files.length === 0
      ? "its uncommitted changes could not be read"
      : `uncommitted changes (${listed(reason.files)})`,
  no_target: () => "no branch to land into (its base is not a branch)",
  not_ready: (reason) => reason.message,
  busy: (reason) => reason.message,
};

export function waitText(reason: WaitReason): string {
  return (WAIT_TEXT[reason.code] as (reason: WaitReason) => string)(reason);
}

/** The dry run: the order, each child's strategy and the check it would run. */
export function describeQueuePlan(plan: QueuePlan, check: QueueCheck | undefined, checkShown: string): string[] {
  const lines = [`Dry run, nothing changed. Would land ${counted(plan.members.length, "handoff")}, in this order:`];
  plan.members.forEach((member, index) => {
    const strategy =
      index === 0 && member.onTip
        ? `fast-forward ${member.into}`
        : `rebase onto ${member.into}'s tip${index === 0 ? "" : " (after those before it)"}, then fast-forward ${member.into}`;
    const risk = [
      ...(member.targetConflicts.length > 0
        ? [`conflicts with ${member.into} in ${listed(member.targetConflicts)}`]
        : []),
      ...(member.clashesWith.length > 0 ? [`clashes with ${member.clashesWith.join(", ")}`] : []),
    ];
    lines.push(
      `  ${index + 1}. ${member.id} ${member.branch} (${counted(member.commits, "commit")}): ${strategy}${risk.length === 0 ? "" : `; forecast: ${risk.join("; ")}`}`,
    );
  });
  lines.push(
    check === undefined
      ? "No check is set: each lands without one (settings: check)."
      : `Check, in each child's worktree before it lands (at most ${Math.round(check.timeoutMs / 1000)} s): ${checkShown}`,
  );
  lines.push(...waitingLines(plan.waiting));
  lines.push(...plan.problems);
  return lines.map(printable);
}

function waitingLines(waiting: readonly { id: string; branch: string; reason: WaitReason }[]): string[] {
  if (waiting.length === 0) return [];
  return [
    `Waiting (${waiting.length}):`,
    ...waiting.map((entry) => `  ${entry.id} ${entry.branch}: ${waitText(entry.reason)}`),
  ];
}

/** The one report of a run: landed, sent back (why), waiting (why). */
export function describeQueueReport(report: QueueReport): string[] {
  const lines = [`Landed (${report.landed.length}):`];
  for (const entry of report.landed)
    lines.push(
      `  ${entry.id} ${entry.branch}: ${counted(entry.commits, "commit")} into ${entry.into}, now at ${entry.to.slice(0, 12)}${entry.checked ? " (check passed)" : " (no check set)"}`,
    );
  lines.push(`Sent back (${report.sentBack.length}):`);
  for (const entry of report.sentBack) {
    const log = entry.reason.code === "check_failed" ? ` (log: ${entry.reason.check.log})` : "";
    lines.push(
      `  ${entry.id} ${entry.branch}: ${sentBackWhy(entry.reason)}${log}. ${branchAfterText(entry.branch, entry.after)}`,
    );
    lines.push(`    ${entry.told === undefined ? "Its Pi is told at its next idle point." : `(${entry.told})`}`);
  }
  lines.push(...waitingLines(report.waiting));
  return lines.map(printable);
}

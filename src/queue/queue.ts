/**
 * `pi-handoff land --all` (and `land <handoff> <handoff>...`): the local merge queue. Every ready
 * child of one repository is, in turn, rebased onto its target's current tip in its own worktree,
 * checked there (the settings' `check`), and landed by fast-forward; one that cannot land is sent
 * back, and the queue goes on with the rest.
 *
 * Invariants:
 * - Plan, words and act apart: `planQueue` (queue-plan.ts) reads only; queue-words.ts renders
 *   codes; `runQueue` acts on the same plan. A dry run is the plan, said. The order puts a pair that
 *   clashes elder first, so the other is sent back once rather than both rebased on each other's account.
 * - One queue per repository: it holds the store's action lock of the repository's queue key
 *   (`queue-<hash of the common dir>`) for the whole run, and each member's own action lock while
 *   it is processed, so a single land, rebase or remove of that member is refused as `busy` then.
 *   A holder that died leaves its lock to be taken over (the store checks its pid and start).
 * - A member is landed only when the check passed on exactly the tip that lands: the landing is
 *   planned after the check and must be of that tip, then carried out as confirmed (it refuses as
 *   `moved` if anything changed); a branch that moved meanwhile waits, untouched.
 * - The check runs in the member's worktree with the variables its Pi got (its ports, `env`).
 * - Sent back, not lost: a conflict changes nothing (the rebase refuses first); a failing check or
 *   a refused landing moves the branch back to its tip from before the queue with the rebase's own
 *   safe move (git/land.ts `moveCheckedOutBranch`), unless `keepRebased`, its manifest's rebase
 *   marked `undoing` before and `undone` after. The child is told by a note (handoff-notes.ts
 *   `sent_back`: why, the check's last lines, its log), once: its id comes from the journal.
 * - Crash-safe as one run: the journal (queue-journal.ts) is written before every step that moves
 *   a ref. A run that finds the last one unfinished (its holder died) takes it up: each child it
 *   had started is settled from the journal against git's refs (the target holding the checked tip
 *   is a landing; a branch back at its old tip is a move back done; a branch elsewhere than both
 *   tips was moved by someone else and is left as it is), then the rest go on. No child is taken
 *   twice in one run, and none lands twice: a landing is of a tip the target does not hold yet.
 */
import { checkText } from "../config/post-create-approval.ts";
import { handoffVariables } from "../child/launch-command.ts";
import type { Manifest, RebaseState } from "../manifest/schema.ts";
import { isActionBusy } from "../manifest/store.ts";
import { errorClause } from "../errors.ts";
import { checkpoint, NO_FAULTS, type KillPoint } from "../faults.ts";
import { type CheckCommand, checkLogPath, runCheck } from "./check.ts";
import { landLocked } from "../land/land.ts";
import {
  type BranchAfter,
  type JournalMember,
  type MemberOutcome,
  type QueueJournal,
  QueueJournalWriter,
  queueJournalPath,
  readQueueJournal,
  type SentBackReason,
  type WaitReason,
} from "./queue-journal.ts";
import { planQueue, type QueueDeps, type QueuePlan, queueLockId } from "./queue-plan.ts";
import { sentBackNote } from "./queue-words.ts";
import { rebaseLocked } from "../rebase/rebase.ts";

export type { BranchAfter, MemberOutcome, SentBackReason, WaitReason } from "./queue-journal.ts";
export { planQueue, queueLockId, type QueueDeps, type QueueMember, type QueuePlan } from "./queue-plan.ts";

export interface QueueCheck {
  command: CheckCommand;
  timeoutMs: number;
  /** The environment the check runs with. */
  env: NodeJS.ProcessEnv;
  /** The check as the person wrote it (the journal and `--status` show it); its words otherwise. */
  shown?: string;
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

export interface QueueReport {
  landed: Extract<MemberOutcome, { code: "landed" }>[];
  sentBack: Extract<MemberOutcome, { code: "sent_back" }>[];
  waiting: Extract<MemberOutcome, { code: "waiting" }>[];
}

export type QueueOutcome =
  | { ok: true; report: QueueReport; resumed: boolean }
  | { ok: false; code: "busy" | "journal_invalid" | "no_identity"; message: string };

/** Runs the queue: one at a time, as the repository's one queue; takes up a run killed before it finished. */
export async function runQueue(
  deps: QueueDeps,
  request: QueueRequest,
  now: () => Date = () => new Date(),
): Promise<QueueOutcome> {
  const key = queueLockId(request.repoCommonDir);
  const ran = await deps.store.withActionLock(key, "queue", async (): Promise<QueueOutcome> => {
    const path = queueJournalPath(deps.agentDir, key);
    const last = await readQueueJournal(path);
    if (last.code === "invalid")
      return {
        ok: false,
        code: "journal_invalid",
        message: `${last.message} Nothing was landed; move it away (it says what the last run did), then run again.`,
      };
    const unfinished = last.code === "found" && last.journal.finishedAt === undefined ? last.journal : undefined;
    const plan = await planQueue(deps, request);
    if (plan.noIdentity !== undefined)
      return { ok: false, code: "no_identity", message: `${plan.noIdentity}; nothing was landed.` };
    const writer = new QueueJournalWriter(path, startJournal(request, plan, unfinished, now()), now);
    await writer.save();
    // The children the killed run had started first (settled from the journal and the refs), then the rest.
    const order = [
      ...writer.journal.members.filter((member) => member.step !== "pending" && member.step !== "done"),
      ...writer.journal.members.filter((member) => member.step === "pending"),
    ].map((member) => member.id);
    for (const id of order) await takeTurn(deps, writer, id, request, now);
    await writer.save((journal) => {
      journal.finishedAt = now().toISOString();
    });
    return { ok: true, report: reportOf(writer.journal), resumed: unfinished !== undefined };
  });
  if (isActionBusy(ran))
    return {
      ok: false,
      code: "busy",
      message: `Another pi-handoff land --all of this repository runs (process ${ran.holder.pid}, since ${ran.holder.since}); nothing was landed. Let it finish, then run it again.`,
    };
  return ran;
}

/**
 * The journal of this run: a new one, or the unfinished one taken up. A run taken up keeps what it
 * decided (none of those children is taken again) and what it had started; the plan's other ready
 * children are added in the plan's order, and the waiting list is the plan's.
 */
function startJournal(
  request: QueueRequest,
  plan: QueuePlan,
  unfinished: QueueJournal | undefined,
  at: Date,
): QueueJournal {
  // Those it had not started yet come again only if still ready (else they wait, with the plan's why).
  const ready = new Set(plan.members.map((member) => member.id));
  const carried = (unfinished?.members ?? []).filter((member) => member.step !== "pending" || ready.has(member.id));
  const known = new Set(carried.map((member) => member.id));
  const added: JournalMember[] = plan.members
    .filter((member) => !known.has(member.id))
    .map((member) => ({
      id: member.id,
      branch: member.branch,
      into: member.into,
      worktree: member.worktree,
      step: "pending",
    }));
  const members = [...carried, ...added];
  const inRun = new Set(members.map((member) => member.id));
  const check = request.check;
  return {
    version: 1,
    repoCommonDir: request.repoCommonDir,
    pid: process.pid,
    startedAt: unfinished?.startedAt ?? at.toISOString(),
    ...(unfinished === undefined ? {} : { resumedAt: [...(unfinished.resumedAt ?? []), at.toISOString()] }),
    updatedAt: at.toISOString(),
    ...(check === undefined
      ? {}
      : { check: { shown: check.shown ?? checkText(check.command), timeoutMs: check.timeoutMs } }),
    keepRebased: request.keepRebased,
    members,
    waiting: plan.waiting
      .filter((entry) => !inRun.has(entry.id))
      .map((entry) => ({ code: "waiting" as const, ...entry })),
  };
}

/** The run's report, from the journal: landed, sent back and waiting, in the order they were decided. */
export function reportOf(journal: QueueJournal): QueueReport {
  const report: QueueReport = { landed: [], sentBack: [], waiting: [] };
  for (const member of journal.members) {
    const outcome = member.outcome;
    if (outcome?.code === "landed") report.landed.push(outcome);
    else if (outcome?.code === "sent_back") report.sentBack.push(outcome);
    else if (outcome?.code === "waiting") report.waiting.push(outcome);
  }
  report.waiting.push(...journal.waiting);
  return report;
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

/** One child's turn, under its action lock: what became of it is in the journal when it returns. */
async function takeTurn(
  deps: QueueDeps,
  writer: QueueJournalWriter,
  id: string,
  request: QueueRequest,
  now: () => Date,
): Promise<void> {
  const held = await deps.store.withActionLock(id, "land", async () => {
    const entry = writer.member(id);
    if (entry === undefined || entry.step === "done") return;
    const read = await deps.store.read(id);
    const turn: Turn = { deps, writer, request, now, entry, manifest: read.ok ? read.manifest : undefined };
    if (!read.ok) return decide(turn, waiting(entry, { code: "not_ready", message: read.message }));
    await runTurn(turn);
  });
  const entry = writer.member(id);
  if (isActionBusy(held) && entry !== undefined)
    await decide(
      { deps, writer, request, now, entry, manifest: undefined },
      waiting(entry, { code: "busy", message: held.message }),
    );
}

interface Turn {
  deps: QueueDeps;
  writer: QueueJournalWriter;
  request: QueueRequest;
  now: () => Date;
  /** The child's journal entry as its turn began. */
  entry: JournalMember;
  manifest: Manifest | undefined;
}

function waiting(entry: JournalMember, reason: WaitReason): MemberOutcome {
  return { code: "waiting", id: entry.id, branch: entry.branch, reason };
}

function kill(turn: Turn, point: KillPoint): void {
  checkpoint(turn.deps.faults ?? NO_FAULTS, point);
}

async function tipOf(turn: Turn, branch: string): Promise<string | undefined> {
  const repo = turn.manifest?.repo.root;
  return repo === undefined ? undefined : turn.deps.git.resolveCommit(repo, `refs/heads/${branch}`);
}

async function runTurn(turn: Turn): Promise<void> {
  const { deps, writer, request, now, entry } = turn;
  const { id } = entry;
  let before: string | undefined;
  if (entry.step !== "pending") {
    const resumed = await resumeStarted(turn);
    if (resumed.code === "decided") return;
    before = resumed.before;
  }
  const tip0 = await tipOf(turn, entry.branch);
  if (tip0 === undefined) return decide(turn, waiting(entry, { code: "branch_gone" }));
  const from = before ?? tip0;
  const targetAtRebase = await tipOf(turn, entry.into);
  await writer.step(id, (member) => {
    member.step = "rebasing";
    member.before = from;
    if (targetAtRebase !== undefined) member.targetBefore = targetAtRebase;
  });
  const rebased = await rebaseLocked(deps, id, { dryRun: false, ...noVerify(request) }, now);
  kill(turn, "queue-rebased");
  if (!rebased.ok && rebased.code !== "up_to_date") {
    // Not ready any more (its Pi started a turn, say): it waits, its branch as it is.
    if (NOT_READY.has(rebased.code))
      return decide(turn, waiting(entry, { code: "not_ready", message: rebased.message }));
    const reason: SentBackReason =
      rebased.code === "conflict"
        ? { code: "conflict", into: entry.into, conflicts: rebased.conflicts ?? [] }
        : { code: "refused", into: entry.into, step: "rebase", message: rebased.message };
    return sendBack(turn, reason, from, (await tipOf(turn, entry.branch)) ?? tip0);
  }
  const tip = (await tipOf(turn, entry.branch)) ?? tip0;
  const target = await tipOf(turn, entry.into);
  let checked = false;
  const check = request.check;
  // Taken up after its check passed on this very tip, with the target where it was: not checked twice.
  if (check !== undefined && entry.passed === tip && entry.targetBefore === target) checked = true;
  else if (check !== undefined && turn.manifest !== undefined) {
    const log = checkLogPath(deps.agentDir, id, tip, now());
    await writer.step(id, (member) => {
      member.step = "checking";
      member.rebasedTo = tip;
      if (target !== undefined) member.targetBefore = target;
      member.checkStartedAt = now().toISOString();
      member.checkLog = log;
      delete member.passed;
    });
    kill(turn, "queue-checking");
    const outcome = await runCheck(check.command, {
      cwd: entry.worktree,
      // What everything run for the handoff gets (its ports, the settings' env), as its Pi got them.
      env: { ...check.env, ...Object.fromEntries(handoffVariables(turn.manifest)) },
      timeoutMs: check.timeoutMs,
      log,
    });
    if (outcome.code === "failed")
      return sendBack(
        turn,
        { code: "check_failed", into: entry.into, check: outcome, timeoutMs: check.timeoutMs },
        from,
        tip,
      );
    checked = true;
  }
  // Exactly the checked tip lands: its Pi may have committed meanwhile (then it refuses as `moved`,
  // and the landing is planned and re-checked right before the target moves, as a single land's).
  await writer.step(id, (member) => {
    member.step = "landing";
    member.rebasedTo = tip;
    if (target !== undefined) member.targetBefore = target;
    if (checked) member.passed = tip;
  });
  const landed = await landLocked(
    deps,
    id,
    {
      into: entry.into,
      strategy: "ff",
      dryRun: false,
      remove: false,
      deleteBranch: false,
      branchTip: tip,
      ...noVerify(request),
    },
    now,
  );
  kill(turn, "queue-landed");
  if (!landed.ok && landed.code === "moved") {
    const movedOn = (await tipOf(turn, entry.branch)) !== tip;
    return decide(
      turn,
      waiting(entry, {
        code: "not_ready",
        message: movedOn
          ? `${entry.branch} moved on from ${tip.slice(0, 12)} during its check; it was not landed.`
          : landed.message,
      }),
    );
  }
  if (landed.ok && landed.code === "landed")
    return decide(turn, {
      code: "landed",
      id,
      branch: entry.branch,
      into: entry.into,
      to: landed.plan.to,
      commits: landed.plan.commits.length,
      checked,
    });
  return sendBack(turn, { code: "refused", into: entry.into, step: "land", message: landed.message }, from, tip);
}

/**
 * A child the killed run had started, settled from its journal entry against the refs: decided
 * (landed, moved back, told), or to go on from the top with `before` as its tip from before the queue.
 */
async function resumeStarted(turn: Turn): Promise<{ code: "decided" } | { code: "again"; before: string | undefined }> {
  const { entry, deps } = turn;
  const tip = await tipOf(turn, entry.branch);
  const repo = turn.manifest?.repo.root;
  switch (entry.step) {
    case "telling": {
      if (entry.outcome !== undefined) await tell(turn, entry.outcome);
      return { code: "decided" };
    }
    case "landing": {
      const target = await tipOf(turn, entry.into);
      const rebasedTo = entry.rebasedTo;
      if (
        repo !== undefined &&
        rebasedTo !== undefined &&
        target !== undefined &&
        (await deps.git.isAncestor(repo, rebasedTo, target))
      ) {
        // The target holds the checked tip: it landed. The landing's own record settles, and the parent is told once.
        await landLocked(
          deps,
          entry.id,
          { into: entry.into, strategy: "ff", dryRun: false, remove: false, deleteBranch: false },
          turn.now,
        );
        await decide(turn, {
          code: "landed",
          id: entry.id,
          branch: entry.branch,
          into: entry.into,
          to: rebasedTo,
          commits: landedCommits(turn, rebasedTo),
          checked: entry.passed === rebasedTo,
        });
        return { code: "decided" };
      }
      return { code: "again", before: await ownBefore(turn, tip) };
    }
    case "undoing": {
      const { before, rebasedTo, sending } = entry;
      if (before === undefined || rebasedTo === undefined || sending === undefined || tip === undefined)
        return { code: "again", before: undefined };
      let after: BranchAfter;
      if (tip === before) {
        // Moved back before the kill; the worktree may not have followed yet.
        const worktree = entry.worktree;
        if (await deps.landGit.indexIs(worktree, rebasedTo).catch(() => false))
          await deps.landGit.followBranch(worktree, { from: rebasedTo, to: before });
        await markRebase(turn, before, rebasedTo, "undone");
        after = { code: "restored", tip: before, rebasedTo };
      } else if (tip === rebasedTo) after = await moveBack(turn, before, rebasedTo);
      else
        after = {
          code: "restore_failed",
          tip,
          before,
          message: `it moved to ${tip.slice(0, 12)} while the queue was stopped, so it was left there`,
        };
      await decide(turn, { code: "sent_back", id: entry.id, branch: entry.branch, reason: sending, after });
      return { code: "decided" };
    }
    default:
      return { code: "again", before: await ownBefore(turn, tip) };
  }
}

/** How many commits the landing of `to` brought, from the handoff's own landing record. */
function landedCommits(turn: Turn, to: string): number {
  const landing = turn.manifest?.landings?.at(-1);
  return landing !== undefined && landing.to === to ? landing.commits.length : 0;
}

/**
 * The tip the child had before the queue, when the branch is still where the killed run left it
 * (its old tip, or the tip the queue's rebase made); a branch moved since by someone else is kept as it is.
 */
async function ownBefore(turn: Turn, tip: string | undefined): Promise<string | undefined> {
  const { before, rebasedTo } = turn.entry;
  if (before === undefined || tip === undefined) return undefined;
  if (tip === before || tip === rebasedTo) return before;
  const rebase = turn.manifest?.rebases?.at(-1);
  // Killed inside the rebase, after the branch moved and before the journal said where to.
  return rebase !== undefined && rebase.from === before && rebase.to === tip ? before : undefined;
}

function noVerify(request: QueueRequest): { noVerify?: true } {
  return request.noVerify === true ? { noVerify: true } : {};
}

/** A child that cannot land: moved back to its tip from before (unless kept rebased), then told. */
async function sendBack(turn: Turn, reason: SentBackReason, before: string, tip: string): Promise<void> {
  const { entry } = turn;
  const sent = (after: BranchAfter): MemberOutcome => ({
    code: "sent_back",
    id: entry.id,
    branch: entry.branch,
    reason,
    after,
  });
  if (tip === before) return decide(turn, sent({ code: "untouched", tip }));
  if (turn.request.keepRebased) return decide(turn, sent({ code: "kept_rebased", tip, before }));
  await turn.writer.step(entry.id, (member) => {
    member.step = "undoing";
    member.before = before;
    member.rebasedTo = tip;
    member.sending = reason;
  });
  await markRebase(turn, before, tip, "undoing");
  kill(turn, "queue-undo-intent");
  return decide(turn, sent(await moveBack(turn, before, tip)));
}

/** Moves a branch the queue rebased back to where it was, with its worktree's files; the manifest says `undone`. */
async function moveBack(turn: Turn, before: string, tip: string): Promise<BranchAfter> {
  const { deps, entry } = turn;
  try {
    await deps.landGit.moveCheckedOutBranch(entry.worktree, entry.branch, {
      from: tip,
      to: before,
      touched: await deps.landGit.changedPaths(entry.worktree, tip, before),
      tag: entry.id,
      reason: `pi-handoff land --all: ${entry.id} sent back`,
    });
  } catch (error) {
    return { code: "restore_failed", tip, before, message: errorClause(error) };
  }
  kill(turn, "queue-undone");
  await markRebase(turn, before, tip, "undone");
  return { code: "restored", tip: before, rebasedTo: tip };
}

/**
 * The manifest's record of the queue's rebase (`before` -> `tip`): `undoing` before the branch
 * moves back, `undone` once it has (inspect's rebase line says so, not a tip the branch no longer has).
 */
async function markRebase(
  turn: Turn,
  before: string,
  tip: string,
  state: Extract<RebaseState, "undoing" | "undone">,
): Promise<void> {
  const at = turn.now().toISOString();
  await turn.deps.store.update(turn.entry.id, (manifest) => {
    const last = manifest.rebases?.at(-1);
    if (last === undefined || last.from !== before || last.to !== tip) return;
    if (last.state === "rebased" || (state === "undone" && last.state === "undoing")) {
      last.state = state;
      last.settledAt = at;
    }
  });
}

/** Records what became of the child (before telling it), then tells a child sent back. */
async function decide(turn: Turn, outcome: MemberOutcome): Promise<void> {
  const at = turn.now().toISOString();
  await turn.writer.step(turn.entry.id, (member) => {
    member.outcome = outcome;
    member.decidedAt = at;
    member.step = outcome.code === "sent_back" ? "telling" : "done";
    delete member.sending;
  });
  kill(turn, "queue-decided");
  if (outcome.code === "sent_back") await tell(turn, outcome);
}

/** The note to a child sent back; its id comes from the journal's `decidedAt`, so telling again writes nothing. */
async function tell(turn: Turn, outcome: MemberOutcome): Promise<void> {
  const { entry } = turn;
  const decidedAt = turn.writer.member(entry.id)?.decidedAt;
  if (outcome.code !== "sent_back" || decidedAt === undefined) return;
  const { reason, after } = outcome;
  let told: string | undefined;
  try {
    await turn.deps.notes.write(
      {
        handoffId: entry.id,
        kind: "sent_back",
        branch: entry.branch,
        text: sentBackNote(entry.branch, reason, after).join("\n"),
        sentBack: {
          reason: reason.code,
          into: reason.into,
          tip: after.tip,
          ...(reason.code === "check_failed" ? { log: reason.check.log } : {}),
        },
        // Its time is when it was decided: after a rebase note of this same run, so the child reads them in order.
        fixedId: { at: new Date(decidedAt), hex: after.tip },
      },
      turn.now(),
    );
  } catch (error) {
    told = `its Pi could not be told: ${errorClause(error)}`;
  }
  await turn.writer.step(entry.id, (member) => {
    member.step = "done";
    if (told !== undefined && member.outcome?.code === "sent_back") member.outcome.told = told;
  });
}

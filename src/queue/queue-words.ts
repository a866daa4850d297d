/**
 * The words of the merge queue (queue.ts): the dry run's plan, the run's report, the note a child
 * sent back gets, and `land --all --status`. Renders codes into text, in this one place.
 *
 * Invariants: reads nothing and decides nothing; every line that may hold a branch name, a path or
 * a check's output goes through `printable`.
 */
import { counted, printable, stripPeriod } from "../text.ts";
import { describeCheckFailure } from "./check.ts";
import { listed } from "../land/land-words.ts";
import type { QueueCheck, QueueReport } from "./queue.ts";
import type {
  BranchAfter,
  JournalMember,
  MemberOutcome,
  QueueJournal,
  SentBackReason,
  WaitReason,
} from "./queue-journal.ts";
import type { QueueStatus, RefsVerdict } from "./queue-status.ts";
import type { QueuePlan } from "./queue-plan.ts";

/** Why, in one clause, from the reason's code. */
function sentBackWhy(reason: SentBackReason): string {
  switch (reason.code) {
    case "conflict":
      return `rebasing it onto ${reason.into} would conflict in ${listed(reason.conflicts)}`;
    case "check_failed":
      return `on ${reason.into}'s tip, ${describeCheckFailure(reason.check, reason.timeoutMs)}`;
    case "refused":
      // The refusal is a sentence of its own; here it is a clause that the caller ends.
      return `the ${reason.step === "rebase" ? "rebase" : "landing"} was refused: ${stripPeriod(reason.message)}`;
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
export function sentBackNote(branch: string, reason: SentBackReason, after: BranchAfter): string[] {
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
  const lines = [
    plan.members.length === 0
      ? `Dry run, nothing changed. No handoff of this repository is ready to land${plan.waiting.length === 0 ? "." : ": each one below waits."}`
      : `Dry run, nothing changed. Would land ${counted(plan.members.length, "handoff")}, in this order:`,
  ];
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
  if (plan.noIdentity !== undefined) lines.push(`The run would stop before landing anything: ${plan.noIdentity}.`);
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
export function describeQueueReport(report: QueueReport, options: { resumed?: boolean } = {}): string[] {
  const lines = [
    ...(options.resumed === true
      ? ["The last pi-handoff land --all was stopped before it finished; this run took it up and finished it."]
      : []),
    `Landed (${report.landed.length}):`,
  ];
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

/** A member's step while its run is on (or was, when it was killed), in a few words. */
function stepText(member: JournalMember, now: number): string {
  switch (member.step) {
    case "pending":
      return "pending";
    case "rebasing":
      return `rebasing onto ${member.into}'s tip`;
    case "checking":
      return `checking on ${member.into}'s tip${member.checkStartedAt === undefined ? "" : ` for ${seconds(now - Date.parse(member.checkStartedAt))}`}${member.checkLog === undefined ? "" : ` (log: ${member.checkLog})`}`;
    case "landing":
      return `landing into ${member.into}`;
    case "undoing":
      return `being moved back to ${member.before?.slice(0, 12) ?? "its tip from before"}`;
    case "telling":
    case "done":
      return member.outcome === undefined ? "done" : outcomeText(member.outcome, member.step === "telling");
  }
}

function outcomeText(outcome: MemberOutcome, untold: boolean): string {
  switch (outcome.code) {
    case "landed":
      return `landed: ${counted(outcome.commits, "commit")} into ${outcome.into}, now at ${outcome.to.slice(0, 12)}${outcome.checked ? " (check passed)" : " (no check set)"}`;
    case "sent_back":
      return `sent back: ${sentBackWhy(outcome.reason)}. ${branchAfterText(outcome.branch, outcome.after)}${untold ? " Its Pi is not told yet." : ""}`;
    case "waiting":
      return `waiting: ${waitText(outcome.reason)}`;
  }
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.floor(ms / 1000))} s`;
}

/** What git's refs say of a child an interrupted run left mid-step. */
function refsText(member: JournalMember, verdict: RefsVerdict): string {
  const at = (tip: string | undefined): string => tip?.slice(0, 12) ?? "no commit (gone)";
  switch (verdict.code) {
    case "not_rebased":
      return `${member.branch} is still at ${at(verdict.tip)}: not rebased yet`;
    case "rebased_unchecked":
      return `${member.branch} is at ${at(verdict.tip)}: rebased, its check not finished (pi-handoff land --all checks it again)`;
    case "landed_unrecorded":
      return `${member.into} (at ${at(verdict.target)}) holds it: landed (pi-handoff land --all records it)`;
    case "not_landed":
      return `${member.into} does not hold it: not landed (${member.branch} is at ${at(verdict.tip)})`;
    case "moved_back":
      return `${member.branch} is back at ${at(verdict.tip)}: moved back (pi-handoff land --all records it)`;
    case "not_moved_back":
      return `${member.branch} is still at the rebased tip ${at(verdict.tip)} (pi-handoff land --all moves it back)`;
    case "moved":
      return `${member.branch} is at ${at(verdict.tip)}, moved since by someone else: it is left as it is`;
  }
}

/** `pi-handoff land --all --status`: the run, whether it runs now, each child's step or outcome. */
export function describeQueueStatus(status: QueueStatus, now: number): string[] {
  const journal = status.journal;
  if (journal === undefined)
    return [
      status.holder === undefined
        ? "No pi-handoff land --all has run in this repository yet."
        : `A pi-handoff land --all runs now (process ${status.holder.pid}, since ${status.holder.since}); it is planning.`,
    ];
  const head: Record<Exclude<QueueStatus["state"], "none">, string> = {
    running: `A pi-handoff land --all runs now (process ${status.holder?.pid ?? journal.pid}, started ${journal.startedAt}).`,
    interrupted: `The last pi-handoff land --all (process ${journal.pid}, started ${journal.startedAt}) was stopped before it finished; pi-handoff land --all takes it up and finishes it.`,
    finished: `The last pi-handoff land --all finished at ${journal.finishedAt ?? "?"} (started ${journal.startedAt}).`,
  };
  const lines = [status.state === "none" ? head.finished : head[status.state]];
  if (journal.resumedAt !== undefined) lines.push(`Taken up after a stop at ${journal.resumedAt.join(", ")}.`);
  lines.push(
    journal.check === undefined
      ? "No check set: each lands without one."
      : `Check (at most ${Math.round(journal.check.timeoutMs / 1000)} s): ${journal.check.shown}`,
  );
  const refs = new Map(status.refs.map((entry) => [entry.id, entry.verdict]));
  journal.members.forEach((member, index) => {
    const verdict = refs.get(member.id);
    lines.push(
      `  ${index + 1}. ${member.id} ${member.branch}: ${stepText(member, now)}${verdict === undefined ? "" : `; now ${refsText(member, verdict)}`}`,
    );
  });
  lines.push(...waitingLines(journal.waiting));
  return lines.map(printable);
}

/** The dry run's word on a run stopped midway: the next run takes it up before the plan above. */
export function stoppedRunLines(status: QueueStatus): string[] {
  const open = (status.journal?.members ?? []).filter((member) => member.step !== "pending" && member.step !== "done");
  return [
    `The last pi-handoff land --all was stopped before it finished; the next run takes it up first${open.length === 0 ? "" : `, settling ${open.map((member) => `${member.id} ${member.branch}`).join(", ")} from git's refs`} (pi-handoff land --all --status says where each is).`,
  ].map(printable);
}

/** The widget's line while a queue of this repository runs (kept short: the widget's rows are narrow). */
export const QUEUE_LINE_MAX = 72;

export function queueProgressLine(journal: QueueJournal, now: number): string | undefined {
  if (journal.finishedAt !== undefined) return undefined;
  const members = journal.members;
  const current = members.find((member) => member.step !== "pending" && member.step !== "done");
  const decided = members.filter((member) => member.outcome !== undefined);
  const landed = decided.filter((member) => member.outcome?.code === "landed").length;
  const sentBack = decided.filter((member) => member.outcome?.code === "sent_back").length;
  const position = `${Math.min(decided.length + 1, members.length)}/${members.length}`;
  const tally = `${landed} landed${sentBack === 0 ? "" : `, ${sentBack} sent back`}`;
  const what =
    current === undefined
      ? "starting"
      : current.step === "checking"
        ? `checking ${current.checkStartedAt === undefined ? "" : seconds(now - Date.parse(current.checkStartedAt))}`.trim()
        : current.step === "rebasing"
          ? "rebasing"
          : current.step === "landing"
            ? "landing"
            : "sending back";
  const fixed = `queue ${position}: ${what} (${tally})`;
  if (current === undefined) return printable(fixed);
  // The branch gives way first: the step and the time are what the line is for.
  const room = QUEUE_LINE_MAX - fixed.length - 1;
  const branch = current.branch.length <= room ? current.branch : `${current.branch.slice(0, Math.max(1, room - 1))}~`;
  return printable(`queue ${position}: ${branch} ${what} (${tally})`).slice(0, QUEUE_LINE_MAX);
}

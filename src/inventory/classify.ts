/**
 * The verdict on one handoff: what its manifest says, compared with what is really there.
 *
 * Invariants:
 * - Pure: decides from the facts it is given (gathered by gather.ts), reads and changes nothing,
 *   so every verdict can be tested without git, a multiplexer or processes.
 * - A live writer on the child session wins over everything else except `removed`: two Pi
 *   processes must never write one session file, so recovery must see a running child first.
 *   The session lease (child/lease.ts) is the first evidence; the process probes below are the
 *   second opinion (a Pi without this extension, or one that has not leased yet).
 * - A writer that could not be checked (lease unreadable, process table unreadable) is never
 *   taken for "no writer": the report says why (`writerUnknown`) and offers no relaunch.
 * - "Running" is decided from processes, never from the manifest's state alone: a recorded pid
 *   counts only while it is alive and is a `pi` that matches the handoff (marker or cwd), because
 *   pids are reused; any other live `pi` with the marker or working in the worktree counts too
 *   (Herdr restarts `pi --session` in restored panes by itself, without the marker), and so does a
 *   pane in which Herdr itself sees an agent running on the child session (`herdr_agent`).
 * - Flags describe the work at stake (dirty, untracked, unpushed, unmerged, merged) independently
 *   of the verdict, so no verdict hides work that a removal would touch.
 */
import type { DescribedProcess } from "../process/facts.ts";
import { stripPeriod } from "../text.ts";
import type { SessionLease } from "../child/lease.ts";
import type { HandoffStep, Manifest, MuxLocation } from "../manifest/schema.ts";
import type { SessionTail } from "../session/tail.ts";
import type { PortAnswer } from "../ports/probe.ts";
import {
  BUSY_CHILD_STATES,
  decideChildStatus,
  landingReport,
  rebaseReport,
  publishedActivity,
  publishedEnd,
  type ChildStatusFacts,
} from "./status.ts";
import type { ChildStateFile } from "../child/child-state.ts";
import type {
  BranchFact,
  Changes,
  HandoffFlag,
  HandoffReport,
  HandoffStatus,
  LiveWriter,
  PortCheck,
  RecoveryAction,
  WorkspaceFact,
  WorktreeFact,
} from "./report-schema.ts";

/** A transaction that changed its manifest this recently may still be running: recovery leaves it alone. */
export const IN_PROGRESS_GRACE_MS = 120_000;

/** What `git worktree list` says about the handoff's worktree path. */
export type WorktreeRegistration =
  | { code: "listed"; branch?: string; detached: boolean; prunable: boolean }
  | { code: "not_listed" }
  | { code: "unknown"; message: string };

export interface HandoffFacts {
  manifest: Manifest;
  now: Date;
  worktreeDirectoryExists: boolean;
  /** Whether that directory is empty; read only where git does not list it (gather.ts). */
  worktreeDirectoryEmpty?: boolean;
  registration: WorktreeRegistration;
  workspace: WorkspaceFact;
  /** The live process `manifest.child.pid` names now (undefined when none or a zombie). */
  recordedProcess: DescribedProcess | undefined;
  /** Every live process named `pi` on this machine that could be read. */
  piProcesses: readonly DescribedProcess[];
  branch: BranchFact;
  /** Uncommitted work, when the worktree directory exists and could be read. */
  changes: Changes | undefined;
  childSessionExists: boolean;
  /** Facts that could not be read, one sentence each. */
  problems: readonly string[];
  /** Whether the process that ran the transaction (`manifest.owner`) lives; absent when none is recorded. */
  ownerAlive?: boolean;
  /** The lease on the child session; absent when there is no child session to lease. */
  lease?: SessionLease;
  /** Why the process table could not be read (then `piProcesses` is not the whole truth). */
  processScanProblem?: string;
  /** The end of the child's session file, when it exists (what its turn is doing). */
  childTail?: SessionTail;
  /** What the child's Pi last published about itself (child/child-state.ts). */
  childState?: ChildStateFile;
  /** Where the target branch of a landing still marked `intended` is now. */
  landingTarget?: string;
  /** What exists that the manifest does not name yet, found through its intent (gather.ts). */
  unrecorded?: Unrecorded;
  /** Each held port's bind test and listeners, when they were asked for (inspect). */
  ports?: readonly PortFact[];
}

/** What was found about one reserved port (gather.ts): the bind test, and who listens there. */
export interface PortFact {
  port: number;
  answer: PortAnswer;
  /** The processes listening on it that could be seen, when it is in use. */
  listeners?: readonly DescribedProcess[];
  /** Why the listeners could not be looked for. */
  listenersProblem?: string;
}

export interface Unrecorded {
  /** A window made for the handoff but not recorded. */
  location?: MuxLocation;
  /** A child session the fork wrote but the manifest does not name. */
  session?: { sessionFile: string; sessionId: string };
}

/** Steps before which no worktree exists: a failure there leaves only the manifest (and maybe a branch). */
const STEPS_BEFORE_WORKTREE: ReadonlySet<HandoffStep> = new Set(["preconditions", "manifest", "worktree"]);

/** The step an unfinished transaction was on, from the last state it recorded. */
const NEXT_STEP: Partial<Record<Manifest["state"], HandoffStep>> = {
  provisioning: "worktree",
  provisioned: "fork",
  forked: "launch",
  launching: "confirm",
};

export function classify(facts: HandoffFacts): HandoffReport {
  const { manifest } = facts;
  const worktree = worktreeFact(facts);
  const writers = findWriters(manifest, facts.recordedProcess, facts.piProcesses, facts.lease, facts.workspace);
  const writerUnknown = writers.length > 0 ? undefined : unknownWriterReason(facts);
  const status = statusOf(facts, worktree, writers);
  const flags = flagsOf(facts.changes, facts.branch);
  // A window or session a killed step left unrecorded is shown as the handoff's own.
  const childSessionFile = manifest.child.sessionFile ?? facts.unrecorded?.session?.sessionFile;
  const unrecorded: Array<"window" | "session"> = [
    ...(facts.unrecorded?.location !== undefined ? (["window"] as const) : []),
    ...(facts.unrecorded?.session !== undefined ? (["session"] as const) : []),
  ];
  const report: HandoffReport = {
    id: manifest.id,
    state: manifest.state,
    status,
    flags,
    actions: [],
    branch: manifest.branch,
    base: manifest.base,
    repo: manifest.repo.root,
    worktreePath: manifest.worktree.path,
    ...(childSessionFile === undefined ? {} : { childSessionFile }),
    childSessionExists: facts.childSessionExists,
    mux: facts.unrecorded?.location ?? manifest.mux,
    ...(unrecorded.length > 0 ? { unrecorded } : {}),
    worktree,
    workspace: facts.workspace,
    branchState: facts.branch,
    ...(facts.changes === undefined ? {} : { changes: facts.changes }),
    problems: [...facts.problems],
    ...(writerUnknown === undefined ? {} : { writerUnknown }),
    createdAt: manifest.createdAt,
    updatedAt: manifest.updatedAt,
    child: decideChildStatus({
      manifest,
      live: status.code === "child_running",
      ...childWord(facts),
      ...(status.code === "unfinished" && status.inProgress ? { launching: true } : {}),
      // Only a live child's turn is judged from its tail (decideChildStatus): an exited one's is not parsed.
      ...(facts.childTail === undefined
        ? {}
        : {
            ...(status.code === "child_running" ? { tail: facts.childTail.entries } : {}),
            sessionMtime: facts.childTail.mtime,
          }),
      ...(facts.branch.code === "present" ? { branchTip: facts.branch.tip } : {}),
    }),
  };
  const landing = landingReport(manifest, facts.landingTarget);
  if (landing !== undefined) report.landing = landing;
  // A removed handoff's ports are free for others: the record keeps them, the report does not.
  if (manifest.ports !== undefined && manifest.state !== "removed") report.ports = [...manifest.ports];
  if (facts.ports !== undefined && report.ports !== undefined)
    report.portChecks = facts.ports.map((fact) => judgePort(manifest, fact));
  const rebase = rebaseReport(manifest, facts.branch.code === "present" ? facts.branch.tip : undefined);
  if (rebase !== undefined) report.rebase = rebase;
  report.actions = actionsFor(report, manifest);
  return report;
}

/**
 * Whose a reserved port is now: free, the handoff's own (a listener with its marker or working in
 * its worktree, and no one else's), someone else's (any other listener, or one this user cannot
 * see), or unknown (the bind test failed for another reason, or the listeners could not be read).
 */
export function judgePort(manifest: Pick<Manifest, "id" | "worktree">, fact: PortFact): PortCheck {
  const { port, answer } = fact;
  if (answer.free) return { code: "free", port };
  if (!answer.inUse) return { code: "unknown", port, message: answer.reason };
  if (fact.listenersProblem !== undefined)
    return { code: "unknown", port, message: `it is in use, but ${stripPeriod(fact.listenersProblem)}` };
  const listeners = fact.listeners ?? [];
  const worktree = manifest.worktree.path;
  const own = (listener: DescribedProcess): boolean =>
    listener.handoffId === manifest.id ||
    (listener.cwd !== undefined && (listener.cwd === worktree || listener.cwd.startsWith(`${worktree}/`)));
  const others = listeners.filter((listener) => !own(listener));
  if (listeners.length > 0 && others.length === 0)
    return { code: "in_use_by_handoff", port, pids: listeners.map((listener) => listener.pid) };
  return { code: "taken", port, holders: others.map(({ pid, name }) => ({ pid, name })) };
}

/** The child's own word, while the Pi that said it holds the session's lease (or how it ended, once none does). */
function childWord(facts: HandoffFacts): Pick<ChildStatusFacts, "activity" | "ended"> {
  const record = facts.childState;
  if (record === undefined) return {};
  if (facts.lease?.state === "live") {
    const activity = facts.lease.pid === record.pid ? publishedActivity(record) : undefined;
    return activity === undefined ? {} : { activity };
  }
  return record.state === "exited" ? { ended: publishedEnd(record) } : {};
}

/** Live processes that may write the child session, with the evidence for each (sorted by pid). */
export function findWriters(
  manifest: Manifest,
  recordedProcess: DescribedProcess | undefined,
  piProcesses: readonly DescribedProcess[],
  lease?: SessionLease,
  workspace?: WorkspaceFact,
): LiveWriter[] {
  const evidence = new Map<number, Set<LiveWriter["evidence"][number]>>();
  const add = (pid: number, kind: LiveWriter["evidence"][number]): void => {
    const kinds = evidence.get(pid) ?? new Set();
    kinds.add(kind);
    evidence.set(pid, kinds);
  };
  if (lease?.state === "live") add(lease.pid, "lease");
  const worktree = manifest.worktree.path;
  if (
    recordedProcess !== undefined &&
    recordedProcess.pid === manifest.child.pid &&
    recordedProcess.name === "pi" &&
    (recordedProcess.handoffId === manifest.id || isInside(recordedProcess.cwd, worktree))
  ) {
    add(recordedProcess.pid, "recorded_pid");
  }
  for (const process of piProcesses) {
    if (process.name !== "pi") continue;
    if (process.handoffId === manifest.id) add(process.pid, "marker");
    if (isInside(process.cwd, worktree)) add(process.pid, "cwd");
  }
  // Herdr's own view of the pane: an agent it sees running there on the child session.
  const agent = workspace?.code === "open" ? workspace.agent : undefined;
  if (
    agent !== undefined &&
    agent.sessionFile !== undefined &&
    agent.sessionFile === manifest.child.sessionFile &&
    // A live status, or Herdr's Pi there while its state is unknown (another agent is no child).
    (agent.status !== "unknown" || agent.label === "pi")
  ) {
    for (const pid of agent.pids ?? []) add(pid, "herdr_agent");
  }
  const order: readonly LiveWriter["evidence"][number][] = ["lease", "recorded_pid", "marker", "cwd", "herdr_agent"];
  return [...evidence.entries()]
    .sort(([a], [b]) => a - b)
    .map(([pid, kinds]) => ({ pid, evidence: order.filter((kind) => kinds.has(kind)) }));
}

/** Why no writer could be ruled out, when that is so (see the header). */
function unknownWriterReason(facts: HandoffFacts): string | undefined {
  if (facts.manifest.state === "removed") return undefined;
  if (facts.lease?.state === "unreadable") return stripPeriod(facts.lease.message);
  if (facts.processScanProblem !== undefined) return stripPeriod(facts.processScanProblem);
  return undefined;
}

function worktreeFact(facts: HandoffFacts): WorktreeFact {
  const { registration, manifest } = facts;
  if (!facts.worktreeDirectoryExists) {
    return registration.code === "listed" ? { code: "prunable" } : { code: "missing" };
  }
  switch (registration.code) {
    case "unknown":
      // git could not be asked; the directory is there, so treat it as the worktree and say why in `problems`.
      return { code: "present" };
    case "not_listed":
      // Empty: the claim of a checkout git never made (addWorktree's mkdir, then a kill), not someone's files.
      if (facts.worktreeDirectoryEmpty === true) return { code: "claimed" };
      return { code: "orphaned", reason: "git does not list it as a worktree of the repository" };
    case "listed":
      if (registration.detached)
        return { code: "orphaned", reason: "its HEAD is detached, not on the handoff's branch" };
      if (registration.branch !== manifest.branch) {
        return {
          code: "orphaned",
          reason: `it has branch ${registration.branch ?? "?"} checked out, not ${manifest.branch}`,
        };
      }
      return { code: "present" };
  }
}

/** The verdict: the first check that applies decides, so the order of the checks below is the behaviour. */
function statusOf(facts: HandoffFacts, worktree: WorktreeFact, writers: LiveWriter[]): HandoffStatus {
  const { manifest } = facts;
  if (manifest.state === "removed") {
    const at = [...manifest.history].reverse().find((entry) => entry.state === "removed")?.at;
    return at === undefined ? { code: "removed" } : { code: "removed", at };
  }
  if (writers.length > 0) return { code: "child_running", writers };
  const nextStep = NEXT_STEP[manifest.state];
  // Who ran the transaction, and whether it lives: a dead owner (killed mid-way) cannot be creating
  // anything, so the grace below does not apply and recovery may act at once.
  const owner =
    manifest.owner === undefined || facts.ownerAlive === undefined
      ? {}
      : { owner: { pid: manifest.owner.pid, alive: facts.ownerAlive } };
  if (nextStep !== undefined && isRecent(manifest, facts.now) && facts.ownerAlive !== false) {
    // The transaction may still be creating things: do not judge the worktree yet.
    return { code: "unfinished", step: nextStep, inProgress: true, ...owner };
  }
  const error = manifest.error;
  if (
    manifest.state === "failed" &&
    error !== undefined &&
    STEPS_BEFORE_WORKTREE.has(error.step) &&
    noCheckout(worktree)
  ) {
    return { code: "failed", step: error.step, message: error.message, worktreeCreated: false };
  }
  if (manifest.state === "provisioning" && nextStep !== undefined && noCheckout(worktree)) {
    // Stopped before its worktree was made: nothing went missing, the handoff never got that far.
    return { code: "unfinished", step: nextStep, inProgress: false, ...owner };
  }
  if (noCheckout(worktree)) return { code: "worktree_missing" };
  if (worktree.code === "prunable") return { code: "prunable" };
  if (worktree.code === "orphaned") return { code: "orphaned_checkout", reason: worktree.reason };
  if (manifest.state === "failed") {
    return {
      code: "failed",
      step: error?.step ?? "launch",
      message: error?.message ?? "no error was recorded",
      worktreeCreated: true,
    };
  }
  if (manifest.state === "launch_unconfirmed") {
    return {
      code: "unconfirmed",
      step: error?.step === "launch" ? "launch" : "confirm",
      message: error?.message ?? "the child never confirmed its start",
    };
  }
  if (nextStep !== undefined) return { code: "unfinished", step: nextStep, inProgress: false, ...owner };
  return facts.workspace.code === "open" ? { code: "no_child" } : { code: "workspace_closed" };
}

function flagsOf(changes: Changes | undefined, branch: BranchFact): HandoffFlag[] {
  const flags: HandoffFlag[] = [];
  if (changes !== undefined && changes.dirtyFiles.length > 0) flags.push("dirty");
  if (changes !== undefined && changes.untrackedFiles.length > 0) flags.push("untracked");
  if (branch.code === "present") {
    if (branch.unpushed.total > 0) flags.push("unpushed");
    if (branch.unmerged.total > 0) flags.push("unmerged");
    // Merged means work was done and all of it reached the base; a branch with no commits is not "merged".
    if (branch.aheadOfBase > 0 && branch.unmerged.total === 0) flags.push("merged");
  }
  return flags;
}

function actionsFor(report: HandoffReport, manifest: Manifest): RecoveryAction[] {
  const actions: RecoveryAction[] = [];
  const busy = report.status.code === "removed" || report.status.code === "child_running" || isInProgress(report);
  if (!busy && report.writerUnknown === undefined && canRelaunch(report, manifest)) actions.push("relaunch");
  if (report.workspace.code === "open") actions.push("focus");
  if (canLand(report)) actions.push("land");
  if (!busy) actions.push("remove");
  if (!busy && isPrunable(report)) actions.push("prune");
  return actions;
}

/**
 * Whether `land` is worth offering: the branch has commits the target lacks, and its Pi is not in
 * a turn (a landing refuses then). The landing itself checks everything again.
 */
function canLand(report: HandoffReport): boolean {
  const busy = report.child !== undefined && BUSY_CHILD_STATES.has(report.child.state);
  return (
    report.state !== "removed" &&
    !busy &&
    report.branchState.code === "present" &&
    report.branchState.unmerged.total > 0
  );
}

function canRelaunch(report: HandoffReport, manifest: Manifest): boolean {
  return report.worktree.code === "present" && report.childSessionExists && manifest.child.model !== undefined;
}

/** The ref the handoff's unmerged commits are counted against: its merge target, or its base while the branch cannot be read. */
export function mergeTargetOf(report: HandoffReport): string {
  return report.branchState.code === "present" ? report.branchState.mergeTarget.ref : report.base.ref;
}

export function isInProgress(report: HandoffReport): boolean {
  return report.status.code === "unfinished" && report.status.inProgress;
}

/**
 * Whether `prune` may retire the handoff without losing anything: its worktree is gone and its
 * branch is gone or has nothing unmerged, or it failed before any worktree existed (and has no
 * window open). Retiring records the handoff as removed; it deletes no branch and no file.
 */
export function isPrunable(report: HandoffReport): boolean {
  const { status, branchState } = report;
  // Retiring deletes no file, so it would leave a claim's empty directory for good: remove gives it back.
  if (report.worktree.code === "claimed") return false;
  if (status.code === "worktree_missing" || status.code === "prunable") {
    return branchState.code === "gone" || (branchState.code === "present" && branchState.unmerged.total === 0);
  }
  if (status.code === "failed" && !status.worktreeCreated) {
    return report.workspace.code === "none" || report.workspace.code === "closed";
  }
  if (status.code === "unfinished" && !status.inProgress && report.state === "provisioning") {
    // Interrupted before its worktree existed: retiring it loses nothing when git made nothing either.
    return (
      report.worktree.code === "missing" &&
      branchState.code === "gone" &&
      (report.workspace.code === "none" || report.workspace.code === "closed")
    );
  }
  return false;
}

/** No checkout where the handoff made (or meant to make) it: none at all, or only its empty claim. */
function noCheckout(worktree: WorktreeFact): boolean {
  return worktree.code === "missing" || worktree.code === "claimed";
}

function isRecent(manifest: Manifest, now: Date): boolean {
  const updated = Date.parse(manifest.updatedAt);
  return Number.isFinite(updated) && now.getTime() - updated < IN_PROGRESS_GRACE_MS;
}

/** Whether a process cwd is the worktree or inside it. */
export function isInside(cwd: string | undefined, dir: string): boolean {
  if (cwd === undefined) return false;
  return cwd === dir || cwd.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

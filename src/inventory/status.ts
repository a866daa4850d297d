/**
 * A handoff child's state as its parent shows it: starting, working, waiting for input,
 * compacting, idle, exited, never started, landed or removed, and since when. A pure decision over facts gathered
 * elsewhere (the manifest, the child's own published state, whether a live Pi writes its session,
 * the tail of its session file, Herdr's agent status).
 *
 * Invariants:
 * - Pure: no I/O, no clock; the same facts give the same answer.
 * - `removed` wins over everything (the manifest is a record). Then the child's own word
 *   (child/child-state.ts) while the Pi that said it lives: it is the state, with its own time;
 *   the tail and Herdr are read only for a live child without one (an older version). Then, for
 *   no live Pi: `starting` while a launch runs, `landed` while the branch is still at the commit
 *   that was landed, `not_started` for a failed handoff whose postCreate commands failed (its Pi
 *   was never started, and none acknowledged since), else `exited`.
 * - A live busy child (working, waiting, compacting, starting) beats `landed`; an idle one does not.
 * - Liveness comes from the process facts (or the lease); neither the session tail nor a published
 *   state alone ever makes a child look alive.
 * - Ages are this child process's: a time read from the session (written by an earlier process,
 *   or copied from the parent) never predates the acknowledgement of the Pi that runs now.
 * - Herdr's `agent_status` refines a live child's tail-read state where it knows (`blocked` is a
 *   tool or prompt waiting for the person, `working` a turn); `unknown` or absent changes nothing.
 */
import { KICKOFF_MESSAGE_TYPE } from "../child/acknowledge.ts";
import type { ChildStateFile } from "../child/child-state.ts";
import type { Manifest } from "../manifest/schema.ts";
import type { TailEntry } from "../session/tail.ts";
import type { LandingReport, RebaseReport } from "./report-schema.ts";

export const CHILD_STATES = [
  "starting",
  "working",
  "waiting_input",
  "compacting",
  "idle",
  "exited",
  "not_started",
  "landed",
  "removed",
] as const;
export type ChildState = (typeof CHILD_STATES)[number];

/** How a state reads to a person. */
export const CHILD_STATE_LABELS: Readonly<Record<ChildState, string>> = {
  starting: "starting",
  working: "working",
  waiting_input: "waiting for input",
  compacting: "compacting",
  idle: "idle",
  exited: "exited",
  not_started: "never started",
  landed: "landed",
  removed: "removed",
};

/** The states in which a child's Pi is busy with its session (a landing waits for them to end). */
export const BUSY_CHILD_STATES: ReadonlySet<ChildState> = new Set([
  "starting",
  "working",
  "waiting_input",
  "compacting",
]);

/** The states in which a child's Pi runs. */
export const LIVE_CHILD_STATES: ReadonlySet<ChildState> = new Set([...BUSY_CHILD_STATES, "idle"]);

/** The kickoff message a handoff child sends itself to start its task (a turn follows it at once). */
const TURN_STARTING_CUSTOM_TYPES = new Set([KICKOFF_MESSAGE_TYPE]);
/** Tools whose pending call means the person is being asked something (names as Pi extensions use them). */
const ASKING_TOOL = /(^|_|-)(ask|question|questionnaire|confirm|input|prompt)(_|-|$)/i;

/** What the child's live Pi says it is doing (child/child-state.ts), as the parent reads it. */
export interface PublishedActivity {
  state: "starting" | "working" | "waiting_input" | "compacting" | "idle";
  since: string;
  /** `working`: the tool running. */
  tool?: string;
  /** `waiting_input`: a tool asked the question in a turn (else a dialog is open). */
  question?: boolean;
  /** The session it said so on, when it moved there from the handoff's (/new, /resume). */
  movedTo?: string;
}

export interface ChildStatusFacts {
  manifest: Pick<Manifest, "state" | "history" | "child" | "landings" | "setup">;
  /** Whether a live Pi writes the child's session (process facts or the lease); undefined when not known. */
  live: boolean | undefined;
  /** The live child's own word; when set, the tail and Herdr are not consulted. */
  activity?: PublishedActivity;
  /** How the child's last Pi ended, in its own word: when, and its exit code. */
  ended?: { at: string; code?: number };
  /** The latest time the child's Pi was known to be alive (for an exit it said nothing about). */
  lastAliveAt?: string;
  /** Whether a live process is setting the handoff up or launching its child now. */
  launching?: boolean;
  /** The last entries of the child's session file (undefined: not written yet or unreadable). */
  tail?: readonly TailEntry[];
  /** The session file's modification time (ISO), the fallback time for a state. */
  sessionMtime?: string;
  /** Herdr's `agent_status` for the child's pane, where Herdr runs it. */
  agentStatus?: string;
  /** The handoff branch's tip now, to tell whether a landing is still the last word. */
  branchTip?: string;
}

export interface ChildStatus {
  state: ChildState;
  /** When the child entered this state (ISO), as well as the facts tell. */
  since?: string;
  /** One short clause saying what the state rests on. */
  basis: string;
  /** `working`: the tool its Pi runs now, when it said. */
  tool?: string;
  /** `exited`: its Pi's exit code, when it said. */
  exitCode?: number;
}

type Activity = { kind: "working" | "waiting_input" | "idle"; since?: string; basis: string };

/** What the session's tail says about its turn: in progress, asking, or finished. */
export function turnActivity(tail: readonly TailEntry[]): Activity | undefined {
  for (let index = tail.length - 1; index >= 0; index -= 1) {
    const entry = tail[index];
    if (entry === undefined) continue;
    if (
      entry.type === "custom_message" &&
      entry.customType !== undefined &&
      TURN_STARTING_CUSTOM_TYPES.has(entry.customType)
    ) {
      return { kind: "working", ...since(entry), basis: "its task's first turn started" };
    }
    if (entry.type !== "message") continue;
    if (entry.role === "user") return { kind: "working", ...since(entry), basis: "a prompt is being answered" };
    if (entry.role === "toolResult")
      return { kind: "working", ...since(turnStart(tail, index)), basis: "a turn is in progress" };
    if (entry.role === "assistant") {
      if (entry.stopReason === "toolUse") {
        const asking = (entry.toolCalls ?? []).find((name) => ASKING_TOOL.test(name));
        if (asking !== undefined) return { kind: "waiting_input", ...since(entry), basis: `tool ${asking} is asking` };
        return { kind: "working", ...since(turnStart(tail, index)), basis: "a tool is running" };
      }
      return {
        kind: "idle",
        ...since(entry),
        basis:
          entry.stopReason === "stop" || entry.stopReason === undefined
            ? "its last turn finished"
            : `its last turn ended (${entry.stopReason})`,
      };
    }
  }
  return undefined;
}

/** The user message that opened the turn that `index` belongs to (or the entry itself). */
function turnStart(tail: readonly TailEntry[], index: number): TailEntry | undefined {
  for (let at = index; at >= 0; at -= 1) {
    const entry = tail[at];
    if (entry?.type === "message" && entry.role === "user") return entry;
  }
  return tail[index];
}

/** The entry's time, normalised (a session's timestamps are its writer's; an unreadable one is left out). */
function since(entry: TailEntry | undefined): { since?: string } {
  const time = entry?.timestamp === undefined ? Number.NaN : Date.parse(entry.timestamp);
  return Number.isFinite(time) ? { since: new Date(time).toISOString() } : {};
}

export function decideChildStatus(facts: ChildStatusFacts): ChildStatus {
  const { manifest } = facts;
  if (manifest.state === "removed") {
    const at = [...manifest.history].reverse().find((entry) => entry.state === "removed")?.at;
    return { state: "removed", ...(at === undefined ? {} : { since: at }), basis: "its worktree was retired" };
  }
  const landed = currentLanding(facts);
  if (facts.live === true && facts.activity !== undefined) {
    const { activity } = facts;
    if (activity.state === "idle" && landed !== undefined) return landed;
    return {
      state: activity.state,
      since: activity.since,
      basis: publishedBasis(activity),
      ...(activity.tool === undefined ? {} : { tool: activity.tool }),
    };
  }
  const ack = manifest.child.ackAt;
  const activity = facts.tail === undefined ? undefined : turnActivity(facts.tail);
  if (facts.live === true) {
    const status = facts.agentStatus;
    if (status === "blocked")
      return { state: "waiting_input", ...sinceOf(activity, facts), basis: "Herdr reports it blocked on input" };
    if (status === "working" && activity?.kind !== "waiting_input") {
      return {
        state: "working",
        ...sinceOf(activity?.kind === "working" ? activity : undefined, facts),
        basis: "Herdr reports it working",
      };
    }
    if (activity !== undefined && activity.kind !== "idle")
      return { state: activity.kind, ...sinceOf(activity, facts), basis: activity.basis };
  }
  if (facts.live !== true && facts.launching === true) {
    const at = launchStartedAt(manifest);
    return { state: "starting", ...(at === undefined ? {} : { since: at }), basis: "its launch is under way" };
  }
  if (landed !== undefined) return landed;
  if (facts.live === true) {
    if (activity !== undefined) return { state: "idle", ...sinceOf(activity, facts), basis: activity.basis };
    return {
      state: "idle",
      ...(ack === undefined ? {} : { since: ack }),
      basis: "its Pi runs and has not taken a turn",
    };
  }
  const stopped = stoppedBeforePi(manifest);
  if (stopped !== undefined) return stopped;
  if (facts.ended !== undefined) {
    return {
      state: "exited",
      since: facts.ended.at,
      basis: facts.ended.code === undefined ? "its Pi said it exited" : `its Pi exited with code ${facts.ended.code}`,
      ...(facts.ended.code === undefined ? {} : { exitCode: facts.ended.code }),
    };
  }
  const lastSign = facts.lastAliveAt ?? facts.sessionMtime;
  return {
    state: "exited",
    ...(lastSign === undefined ? {} : { since: lastSign }),
    basis: facts.live === false ? "no Pi runs on its session" : "no live Pi is known on its session",
  };
}

/** A failed handoff whose postCreate commands failed: its Pi never started (and none acknowledged since). */
function stoppedBeforePi(manifest: ChildStatusFacts["manifest"]): ChildStatus | undefined {
  const hooks = manifest.setup?.postCreate;
  if (manifest.state !== "failed" || manifest.child.ackAt !== undefined) return undefined;
  if (hooks?.exitStatus === undefined || hooks.exitStatus === 0) return undefined;
  const which = hooks.failedCommand === undefined ? "" : ` ${hooks.failedCommand} of ${hooks.commands.length}`;
  // No time: there is no Pi whose state began then ("never started 14s" would read as an age).
  return {
    state: "not_started",
    basis: `its postCreate command${which} failed with exit status ${hooks.exitStatus}, so its Pi was not started`,
  };
}

/** The latest landing, while the branch is still at the commit that was landed. */
function currentLanding(facts: ChildStatusFacts): ChildStatus | undefined {
  const landing = [...(facts.manifest.landings ?? [])].reverse().find((entry) => entry.state === "landed");
  if (landing === undefined || (facts.branchTip !== undefined && facts.branchTip !== landing.branchTip))
    return undefined;
  return { state: "landed", since: landing.settledAt ?? landing.at, basis: `landed into ${landing.into}` };
}

/** When the launch under way began: its latest `launching` entry, else the handoff's start. */
function launchStartedAt(manifest: Pick<Manifest, "state" | "history">): string | undefined {
  if (manifest.state === "launching")
    return [...manifest.history].reverse().find((entry) => entry.state === "launching")?.at;
  return manifest.history[0]?.at;
}

function publishedBasis(activity: PublishedActivity): string {
  const where = activity.movedTo === undefined ? "" : ` (on ${activity.movedTo}, where it went on)`;
  switch (activity.state) {
    case "starting":
      return `its Pi is starting${where}`;
    case "working":
      return `its Pi says it is in a turn${activity.tool === undefined ? "" : `, running ${activity.tool}`}${where}`;
    case "waiting_input":
      return `its Pi says ${activity.question === true ? "a tool asked a question" : "a dialog is open"}${where}`;
    case "compacting":
      return `its Pi says it is compacting its session${where}`;
    case "idle":
      return `its Pi says it is idle${where}`;
  }
}

/** A time read from the session, never before this Pi's acknowledgement (see the header). */
function sinceOf(activity: Activity | undefined, facts: ChildStatusFacts): { since?: string } {
  const read = activity?.since ?? facts.sessionMtime;
  const ack = facts.manifest.child.ackAt;
  if (read === undefined) return ack === undefined ? {} : { since: ack };
  if (ack !== undefined && Date.parse(ack) > Date.parse(read)) return { since: ack };
  return { since: read };
}

/** A published record's activity (undefined for `moved` and `exited`); `movedTo`: the session it was read on, when not the handoff's. */
export function publishedActivity(record: ChildStateFile, movedTo?: string): PublishedActivity | undefined {
  switch (record.state) {
    case "starting":
    case "working":
    case "waiting_input":
    case "compacting":
    case "idle":
      return {
        state: record.state,
        since: record.since,
        ...(record.tool === undefined ? {} : { tool: record.tool }),
        ...(record.question === undefined ? {} : { question: record.question }),
        ...(movedTo === undefined ? {} : { movedTo }),
      };
    case "moved":
    case "exited":
      return undefined;
  }
}

/** How a published `exited` record says its Pi ended. */
export function publishedEnd(record: ChildStateFile): { at: string; code?: number } {
  return { at: record.since, ...(record.exitCode === undefined ? {} : { code: record.exitCode }) };
}

/** `3m`, `2h 5m`, `4d`: how long, for a compact status line. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 === 0 ? `${hours}h` : `${hours}h ${minutes % 60}m`;
  return `${Math.floor(hours / 24)}d`;
}

/** The latest landing as a report shows it; `targetAt` is where the target branch is now (for one still `intended`). */
export function landingReport(
  manifest: Pick<Manifest, "id" | "landings">,
  targetAt: string | undefined,
): LandingReport | undefined {
  const landing = manifest.landings?.at(-1);
  if (landing === undefined) return undefined;
  const verdict: LandingReport["verdict"] =
    landing.state !== "intended"
      ? landing.state
      : targetAt === landing.to
        ? "landed_unrecorded"
        : targetAt === landing.from
          ? "not_landed"
          : "unknown";
  return {
    handoffId: manifest.id,
    state: landing.state,
    verdict,
    into: landing.into,
    strategy: landing.strategy,
    from: landing.from,
    to: landing.to,
    commits: landing.commits.length,
    at: landing.settledAt ?? landing.at,
    ...(targetAt === undefined ? {} : { targetAt }),
  };
}

/** The latest rebase as a report shows it; `branchAt` is where the branch is now. */
export function rebaseReport(
  manifest: Pick<Manifest, "rebases">,
  branchAt: string | undefined,
): RebaseReport | undefined {
  const rebase = manifest.rebases?.at(-1);
  if (rebase === undefined) return undefined;
  const verdict: RebaseReport["verdict"] =
    rebase.state === "undoing"
      ? branchAt === rebase.from
        ? "undone_unrecorded"
        : branchAt === rebase.to
          ? "not_undone"
          : "unknown"
      : rebase.state !== "intended"
        ? rebase.state
        : branchAt === rebase.to
          ? "rebased_unrecorded"
          : branchAt === rebase.from
            ? "not_rebased"
            : "unknown";
  return {
    state: rebase.state,
    verdict,
    onto: rebase.onto,
    from: rebase.from,
    to: rebase.to,
    commits: rebase.commits.length,
    at: rebase.settledAt ?? rebase.at,
    ...(branchAt === undefined ? {} : { branchAt }),
  };
}

/**
 * A handoff child's state as its parent shows it: working, waiting for input, idle, exited,
 * landed or removed, and since when. A pure decision over facts gathered elsewhere (the manifest,
 * the tail of the child's session file, whether a live Pi writes it, Herdr's agent status).
 *
 * Invariants:
 * - Pure: no I/O, no clock; the same facts give the same answer.
 * - `removed` wins over everything (the manifest is a record); then a live Pi's activity (working,
 *   waiting for input); then `landed` while the branch is still at the commit that was landed;
 *   then `idle` for a live Pi, `exited` for none.
 * - Liveness comes from the process facts (or the lease); the session tail alone never makes a
 *   child look alive: a file ending mid-turn with no Pi behind it is an exited child.
 * - Herdr's `agent_status` refines a live child's state where it knows (`blocked` is a tool or
 *   prompt waiting for the person, `working` a turn); `unknown` or absent changes nothing.
 */
import { KICKOFF_MESSAGE_TYPE } from "../launch/acknowledge.ts";
import type { Manifest } from "../manifest/schema.ts";
import type { TailEntry } from "../session/tail.ts";
import type { LandingReport } from "./report-schema.ts";

export const CHILD_STATES = ["working", "waiting_input", "idle", "exited", "landed", "removed"] as const;
export type ChildState = (typeof CHILD_STATES)[number];

/** How a state reads to a person. */
export const CHILD_STATE_LABELS: Readonly<Record<ChildState, string>> = {
  working: "working",
  waiting_input: "waiting for input",
  idle: "idle",
  exited: "exited",
  landed: "landed",
  removed: "removed",
};

/** The kickoff message a handoff child sends itself to start its task (a turn follows it at once). */
const TURN_STARTING_CUSTOM_TYPES = new Set([KICKOFF_MESSAGE_TYPE]);
/** Tools whose pending call means the person is being asked something (names as Pi extensions use them). */
const ASKING_TOOL = /(^|_|-)(ask|question|questionnaire|confirm|input|prompt)(_|-|$)/i;

export interface ChildStatusFacts {
  manifest: Pick<Manifest, "state" | "history" | "child" | "landings">;
  /** Whether a live Pi writes the child's session (process facts or the lease); undefined when not known. */
  live: boolean | undefined;
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
}

type Activity = { kind: "working" | "waiting_input" | "idle"; since?: string; basis: string };

/** What the session's tail says about its turn: in progress, asking, or finished. */
export function turnActivity(tail: readonly TailEntry[]): Activity | undefined {
  for (let index = tail.length - 1; index >= 0; index -= 1) {
    const entry = tail[index];
    if (entry === undefined) continue;
    if (entry.type === "custom_message" && entry.customType !== undefined && TURN_STARTING_CUSTOM_TYPES.has(entry.customType)) {
      return { kind: "working", ...since(entry), basis: "its task's first turn started" };
    }
    if (entry.type !== "message") continue;
    if (entry.role === "user") return { kind: "working", ...since(entry), basis: "a prompt is being answered" };
    if (entry.role === "toolResult") return { kind: "working", ...since(turnStart(tail, index)), basis: "a turn is in progress" };
    if (entry.role === "assistant") {
      if (entry.stopReason === "toolUse") {
        const asking = (entry.toolCalls ?? []).find((name) => ASKING_TOOL.test(name));
        if (asking !== undefined) return { kind: "waiting_input", ...since(entry), basis: `tool ${asking} is asking` };
        return { kind: "working", ...since(turnStart(tail, index)), basis: "a tool is running" };
      }
      return { kind: "idle", ...since(entry), basis: entry.stopReason === "stop" || entry.stopReason === undefined ? "its last turn finished" : `its last turn ended (${entry.stopReason})` };
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
  const activity = facts.tail === undefined ? undefined : turnActivity(facts.tail);
  if (facts.live === true) {
    const status = facts.agentStatus;
    if (status === "blocked") return { state: "waiting_input", ...sinceOf(activity, facts), basis: "Herdr reports it blocked on input" };
    if (status === "working" && activity?.kind !== "waiting_input") {
      return { state: "working", ...sinceOf(activity?.kind === "working" ? activity : undefined, facts), basis: "Herdr reports it working" };
    }
    if (activity !== undefined && activity.kind !== "idle") return { state: activity.kind, ...sinceOf(activity, facts), basis: activity.basis };
  }
  const landing = [...(manifest.landings ?? [])].reverse().find((entry) => entry.state === "landed");
  if (landing !== undefined && (facts.branchTip === undefined || facts.branchTip === landing.branchTip)) {
    const at = landing.settledAt ?? landing.at;
    return { state: "landed", since: at, basis: `landed into ${landing.into}` };
  }
  if (facts.live === true) {
    if (activity !== undefined) return { state: "idle", ...sinceOf(activity, facts), basis: activity.basis };
    const ack = manifest.child.ackAt;
    return { state: "idle", ...(ack === undefined ? {} : { since: ack }), basis: "its Pi runs and has not taken a turn" };
  }
  return {
    state: "exited",
    ...(facts.sessionMtime === undefined ? {} : { since: facts.sessionMtime }),
    basis: facts.live === false ? "no Pi runs on its session" : "no live Pi is known on its session",
  };
}

function sinceOf(activity: Activity | undefined, facts: ChildStatusFacts): { since?: string } {
  if (activity?.since !== undefined) return { since: activity.since };
  return facts.sessionMtime === undefined ? {} : { since: facts.sessionMtime };
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
export function landingReport(manifest: Pick<Manifest, "id" | "landings">, targetAt: string | undefined): LandingReport | undefined {
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

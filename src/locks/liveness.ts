/**
 * The one liveness rule: whether the recorded holder of a lock, lease or claim still holds it. Every
 * protocol of src/locks/ (and every reader of a recorded owner) asks `holderLiveness`, so a holder
 * is judged alive, dead or unknown the same way wherever it is recorded.
 *
 * The rule, in order:
 * 1. A holder on another machine (its recorded host is not this one) is never judged by its pid:
 *    that pid names nothing here. Where the protocol keeps a heartbeat, the heartbeat decides (fresh:
 *    alive; older than the protocol's stale age: dead); without one it is `unknown`, which every
 *    taker treats as held, and the refusal says why.
 * 2. On this machine, a pid that does not exist (or is a zombie, which writes nothing) is dead.
 * 3. A live pid whose start (token, else time within a tolerance; holder.ts) differs from the
 *    recorded one is another process that reused the pid: dead.
 * 4. A live pid with the recorded start is alive, whatever its heartbeat says: a suspended process
 *    (SIGSTOP, a sleeping laptop) beats again when it wakes, and a takeover would make two writers.
 * 5. A live pid whose start cannot be compared (unreadable now, not recorded, or read by the other
 *    process-facts implementation) proves neither identity nor reuse. One rule for every protocol:
 *    alive unless a heartbeat says otherwise. With a heartbeat, the heartbeat decides as in 1;
 *    without one it is `unknown`, treated as held. Taking over a live process's lock on a guess
 *    would let two actors in; a lock left held by mistake is at worst reported, and freed once the
 *    pid is gone.
 * A heartbeat is stale once it is older than the protocol's `staleAfterMs` (the session lease: six
 * beats); a heartbeat from the future (clocks of two machines) counts as fresh.
 *
 * Invariants:
 * - `decideLiveness` is pure (the facts are given); `holderLiveness` only reads process facts, and
 *   none at all for a holder on another machine.
 * - Every verdict carries a code, and its words are made here (`livenessClause`).
 */
import { sameStart, type ProcessFacts, type ProcessIdentity } from "../process/facts.ts";
import { thisHost, type Holder } from "./holder.ts";

/** Start times read by different implementations (clock ticks, whole seconds) agree within this. */
export const START_TOLERANCE_MS = 2_000;

/** A protocol's heartbeat: when the holder last beat, and after how long silence means it is gone. */
export interface Heartbeat {
  at: string;
  staleAfterMs: number;
}

export type Liveness =
  | { verdict: "alive"; code: "alive" | "heartbeat_fresh" }
  | { verdict: "unknown"; code: "another_machine" | "start_uncomparable" }
  | { verdict: "dead"; code: "no_such_process" | "pid_reused" | "heartbeat_stale" };

export type LivenessCode = Liveness["code"];

/** What is known now of the holder's pid: on another machine nothing, here its identity. */
export type Observed = { where: "elsewhere" } | { where: "here"; process: ProcessIdentity };

/** Whether a taker must leave the holder be: alive, or unknown (see the header). */
export function stillHeld(liveness: Liveness): boolean {
  return liveness.verdict !== "dead";
}

/** The rule of the header, on facts already read. */
export function decideLiveness(holder: Holder, observed: Observed, now: Date, heartbeat?: Heartbeat): Liveness {
  if (observed.where === "elsewhere")
    return heartbeat === undefined
      ? { verdict: "unknown", code: "another_machine" }
      : heartbeatLiveness(heartbeat, now);
  if (!observed.process.alive) return { verdict: "dead", code: "no_such_process" };
  const same = sameProcess(holder, observed.process);
  if (same === true) return { verdict: "alive", code: "alive" };
  if (same === false) return { verdict: "dead", code: "pid_reused" };
  return heartbeat === undefined
    ? { verdict: "unknown", code: "start_uncomparable" }
    : heartbeatLiveness(heartbeat, now);
}

/**
 * The heartbeat form of the rule, also for a protocol that records no process (a lock directory
 * whose mtime is its heartbeat): fresh while no older than the stale age; an unparseable time is stale.
 */
export function heartbeatLiveness(heartbeat: Heartbeat, now: Date): Liveness {
  return now.getTime() - Date.parse(heartbeat.at) <= heartbeat.staleAfterMs
    ? { verdict: "alive", code: "heartbeat_fresh" }
    : { verdict: "dead", code: "heartbeat_stale" };
}

/** Whether `holder` still holds what it recorded (the rule of the header), reading what it needs. */
export async function holderLiveness(
  holder: Holder,
  facts: ProcessFacts,
  now: Date,
  heartbeat?: Heartbeat,
  host: string = thisHost(),
): Promise<Liveness> {
  if (holder.host !== undefined && holder.host !== host)
    return decideLiveness(holder, { where: "elsewhere" }, now, heartbeat);
  // Nothing recorded to compare a start with: whether the pid lives is all there is to ask.
  const identity: ProcessIdentity =
    holder.start !== undefined || holder.startedAtMs !== undefined
      ? await facts.identify(holder.pid)
      : (await facts.isAlive(holder.pid))
        ? { alive: true }
        : { alive: false };
  return decideLiveness(holder, { where: "here", process: identity }, now, heartbeat);
}

/** The verdict as a clause about "process <pid>" ("is gone", "runs on another machine ..."). */
export function livenessClause(holder: Holder, liveness: Liveness): string {
  switch (liveness.code) {
    case "alive":
      return "is alive";
    case "heartbeat_fresh":
      return "keeps its heartbeat";
    case "another_machine":
      return `runs on another machine (${holder.host ?? "unknown"}), where this one cannot check it, so it counts as alive`;
    case "start_uncomparable":
      return "lives, and its start time cannot be compared to tell it from a later process with its pid, so it counts as alive";
    case "no_such_process":
      return "is gone";
    case "pid_reused":
      return "is gone (its pid now belongs to a process started at another time)";
    case "heartbeat_stale":
      return "stopped its heartbeat";
  }
}

/**
 * Whether the live process `seen` is the recorded `holder`: by start token where both were read the
 * same way, else by start time within the tolerance; undefined when neither can be compared.
 */
export function sameProcess(
  holder: Pick<Holder, "start" | "startedAtMs">,
  seen: Extract<ProcessIdentity, { alive: true }>,
): boolean | undefined {
  const byToken = sameStart(holder.start, seen.start);
  if (byToken !== undefined) return byToken;
  if (holder.startedAtMs === undefined || seen.startedAtMs === undefined) return undefined;
  return Math.abs(holder.startedAtMs - seen.startedAtMs) <= START_TOLERANCE_MS;
}

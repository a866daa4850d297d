/**
 * A Pi session's start as this extension sees it: take the lease on the session (lease.ts), keep
 * its heartbeat, and, in a handoff child, acknowledge the launch and start on the task.
 *
 * Invariants:
 * - Every Pi running the extension leases its own session, handoff child or not, so a Pi started
 *   by hand or restored by Herdr on a handoff's session is seen by relaunch and recovery.
 * - A Pi that finds the lease held by another live Pi neither acknowledges nor starts a turn (that
 *   would make it a second writer); it warns, and takes the lease over only once the other one
 *   stops (checked on every heartbeat tick).
 * - Timers are unref'd and never keep Pi alive; a tick never throws (its failure is reported once).
 * - Released on session switch, on shutdown and, as a last resort, when the process exits; at exit
 *   the holder's last word (`onExit`, its published state) is written before the release.
 * - `onHoldingChange` follows every start and end of holding, so what is published in the
 *   session's name is written only by its lease holder.
 */
import type { ManifestStore } from "../manifest/store.ts";
import { errorClause } from "../errors.ts";
import type { NoticeLevel } from "../text.ts";
import { acknowledgeHandoff, findHandoffDetails, kickoffSent, type AckOutcome, type EntryView } from "./acknowledge.ts";
import {
  acquireSessionLease,
  LEASE_HEARTBEAT_MS,
  type HeldLease,
  type LeaseAcquisition,
  type LeaseOptions,
} from "./lease.ts";

export type LeaseEvent =
  | { code: "taken_over"; message: string }
  /** The lease could not be taken at start (not because another Pi held it) and is held now. */
  | { code: "leased"; message: string }
  | { code: "lost"; message: string }
  | { code: "error"; message: string };

interface Current {
  sessionFile: string;
  handoffId?: string;
  held?: HeldLease;
  /** Why the lease is not held: another live Pi holds it, or it could not be written. */
  waitingFor?: "other_pi" | "io";
}

/** A lease held again (taken over from a Pi that stopped, or taken once writing works) is news; a lost or unrefreshed one a warning. */
export function leaseEventLevel(event: LeaseEvent): NoticeLevel {
  return event.code === "taken_over" || event.code === "leased" ? "info" : "warning";
}

const liveKeepers = new Set<SessionLeaseKeeper>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", (code) => {
    for (const keeper of liveKeepers) keeper.exitSync(code);
  });
}

export interface LeaseKeeperOptions extends LeaseOptions {
  agentDir: string;
  onEvent(event: LeaseEvent): void;
  intervalMs?: number;
  /** Told each time this keeper starts or stops holding a lease (the published state is written only while it holds one). */
  onHoldingChange?: (holding: boolean) => void;
  /** At process exit, while the lease is still held: the holder's last word (child/child-state.ts). */
  onExit?: (code: number) => void;
}

/** Holds the lease on the current session and keeps its heartbeat. */
export class SessionLeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  #current: Current | undefined;
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  #reportedError = false;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
  }

  /** Whether this keeper holds the lease now. */
  get holding(): boolean {
    return this.#current?.held !== undefined;
  }

  /** Releases any previous session's lease, then takes the lease on `sessionFile` (none without a session file). */
  async hold(sessionFile: string | undefined, handoffId?: string): Promise<LeaseAcquisition | undefined> {
    await this.release();
    if (sessionFile === undefined) return undefined;
    const acquired = await this.#acquire(sessionFile, handoffId);
    this.#current = {
      sessionFile,
      ...(handoffId === undefined ? {} : { handoffId }),
      ...(acquired.ok ? { held: acquired.lease } : { waitingFor: acquired.code === "held" ? "other_pi" : "io" }),
    };
    liveKeepers.add(this);
    installExitHook();
    this.#timer = setInterval(() => void this.tick(), this.#options.intervalMs ?? LEASE_HEARTBEAT_MS);
    this.#timer.unref();
    if (acquired.ok) this.#options.onHoldingChange?.(true);
    return acquired;
  }

  /** One heartbeat (or, while another Pi holds the lease, one attempt to take it over). */
  async tick(): Promise<void> {
    const current = this.#current;
    if (current === undefined || this.#ticking) return;
    this.#ticking = true;
    try {
      if (current.held !== undefined) {
        if ((await current.held.heartbeat()) === "lost") {
          delete current.held;
          current.waitingFor = "other_pi";
          this.#options.onHoldingChange?.(false);
          this.#options.onEvent({
            code: "lost",
            message: `Another Pi took over the lease on session ${current.sessionFile}; two Pi processes writing one session corrupt it, so quit one of them.`,
          });
        }
        return;
      }
      const acquired = await this.#acquire(current.sessionFile, current.handoffId);
      if (acquired.ok && this.#current === current) {
        current.held = acquired.lease;
        const after = current.waitingFor;
        delete current.waitingFor;
        this.#options.onHoldingChange?.(true);
        this.#options.onEvent(
          after === "io"
            ? {
                code: "leased",
                message: `The lease on session ${current.sessionFile} is taken now, so recovery sees this Pi as its writer.`,
              }
            : {
                code: "taken_over",
                message: `The other Pi on session ${current.sessionFile} has stopped; this Pi now holds the session.`,
              },
        );
      } else if (acquired.ok) {
        await acquired.lease.release();
      } else if (acquired.code === "held") {
        // Once another Pi was seen holding it, its stop is what the user waits to hear about.
        current.waitingFor = "other_pi";
      }
    } catch (error) {
      if (!this.#reportedError) {
        this.#reportedError = true;
        this.#options.onEvent({
          code: "error",
          message: `The lease on session ${current.sessionFile} could not be refreshed: ${errorClause(error)}.`,
        });
      }
    } finally {
      this.#ticking = false;
    }
  }

  async release(): Promise<void> {
    const current = this.#stop();
    await current?.held?.release();
  }

  releaseSync(): void {
    this.#stop()?.held?.releaseSync();
  }

  /** At process exit: the holder's last word while it still holds the lease, then the release. */
  exitSync(code: number): void {
    if (this.#current?.held !== undefined) {
      try {
        this.#options.onExit?.(code);
      } catch {
        // The process is ending; the lease is released regardless.
      }
    }
    this.releaseSync();
  }

  #stop(): Current | undefined {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const current = this.#current;
    this.#current = undefined;
    liveKeepers.delete(this);
    if (current?.held !== undefined) this.#options.onHoldingChange?.(false);
    return current;
  }

  #acquire(sessionFile: string, handoffId: string | undefined): Promise<LeaseAcquisition> {
    const { agentDir, facts, now, host } = this.#options;
    return acquireSessionLease({
      agentDir,
      sessionFile,
      ...(handoffId === undefined ? {} : { handoffId }),
      ...(facts === undefined ? {} : { facts }),
      ...(now === undefined ? {} : { now }),
      ...(host === undefined ? {} : { host }),
    });
  }
}

export interface SessionStart {
  /** A sentence for the user when this Pi must not write the session, or could not lease it. */
  warning?: string;
  ack?: AckOutcome;
  /** Set when the task kickoff turn is to be sent now. */
  kickoff?: { handoffId: string };
}

/** What a Pi does when its session starts (see the header). */
export async function startOnSession(input: {
  keeper: SessionLeaseKeeper;
  store: ManifestStore;
  branch: readonly EntryView[];
  sessionFile: string | undefined;
  pid: number;
  now: () => Date;
}): Promise<SessionStart> {
  const details = findHandoffDetails(input.branch);
  const lease = await input.keeper.hold(input.sessionFile, details?.handoffId);
  if (lease !== undefined && !lease.ok && lease.code === "held") {
    return {
      warning: `${lease.message} Two Pi processes writing one session file corrupt it: quit this one (/quit) and use the other; this one takes the session over only once the other stops.`,
    };
  }
  const warning =
    lease !== undefined && !lease.ok
      ? `${lease.message} Recovery may not see that this Pi writes the session.`
      : undefined;
  const withWarning = warning === undefined ? {} : { warning };
  if (details === undefined) return withWarning;
  const ack = await acknowledgeHandoff({
    store: input.store,
    details,
    sessionFile: input.sessionFile,
    pid: input.pid,
    now: input.now,
  });
  if (ack.code !== "acknowledged") return { ...withWarning, ack };
  const kickoff = details.hasTask && !kickoffSent(input.branch) ? { kickoff: { handoffId: details.handoffId } } : {};
  return { ...withWarning, ack, ...kickoff };
}

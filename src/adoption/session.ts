/**
 * One session's lineage adoption, behind a small host port so it runs and is tested without Pi:
 * when to scan, what to say at the resume, which runs to watch, when a completion or a reminder
 * is said. The Pi adapter (pi-extension/lineage.ts) only hands Pi's events and state to it.
 *
 * Invariants:
 * - Start-up is never held up: `start` only schedules the scan (SCAN_DELAY_MS); the lineage walk
 *   and the file reads run after start-up, asynchronously.
 * - Delivery follows src/adoption/delivery.ts (`DeliveryQueue`, `Poll`): only at idle points, so a
 *   message never races a turn (a handoff child's kickoff turn, which starts during start-up): at
 *   the scan's end if the host is idle and no kickoff is expected, otherwise after the next
 *   `onSettled`, or KICKOFF_GRACE_MS after the scan when the expected kickoff never started.
 * - Every delivery is followed at once by a ledger entry of its `(source, run, outcome)` triples;
 *   a triple already in the ledger (this session's, or one inherited through a fork) is never
 *   delivered again. Messages never trigger a turn.
 * - The completion watch is a poll of the adopted active runs only (cost bounded by their number),
 *   unref'd, paused when none is left, and stopped with the session; so are the timers. A failed
 *   send (the runtime went away) stops the whole session.
 * - The host is read when needed, never cached beyond the scan's context: the ledger once at
 *   construction, the session's identity and branch at the scan, idleness at each decision.
 */
import { agentDirFromEnv } from "../session/paths.ts";
import { errorMessage } from "../errors.ts";
import { walkLineage, type CurrentSessionInput } from "./ancestry.ts";
import { kickoffExpected } from "./branch-facts.ts";
import { DeliveryQueue, Poll, type DeliveryHost } from "./delivery.ts";
import { readLedger } from "./ledger.ts";
import { buildActiveReminder, buildCompletionMessage, buildResumeMessage } from "./messages.ts";
import { newlyEnded, ownCompletionOwnerId, refreshRuns, scanSources, selectForResume, selectWatched } from "./scan.ts";
import type { AdoptedRun, LineageEntryView, LineageSource, ScanContext } from "./types.ts";

/** Long enough for Pi to finish drawing its first screen before any file is read. */
const SCAN_DELAY_MS = 50;
/** A handoff child's kickoff normally starts its turn at once; after this, it is not coming. */
const KICKOFF_GRACE_MS = 5_000;

/** What a lineage session needs from Pi: delivery (send, append, idle), and the session as it stands now. */
export interface LineageHost extends DeliveryHost {
  /** Every entry of the session (the ledger is read from them). */
  entries(): readonly LineageEntryView[];
  /** The session's active branch (the handoff message and the kickoff live there). */
  branch(): readonly LineageEntryView[];
  /** The session's own file, id and header, where the ancestry walk starts. */
  identity(): CurrentSessionInput;
}

export interface LineageSessionOptions {
  sources: LineageSource[];
  /** How often the adopted active runs are looked at again. */
  pollMs: number;
  /** The variables the sources read (default: `process.env` at the scan). */
  env?: NodeJS.ProcessEnv;
}

/** The state of one session's adoption; a new one per session start. */
export class LineageSession {
  private stopped = false;
  private scanned = false;
  private runs = new Map<string, AdoptedRun>();
  private notes: string[] = [];
  private readonly queue: DeliveryQueue;
  private watched: AdoptedRun[] = [];
  private sawAgentStart = false;
  private scanTimer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private readonly poll: Poll;
  private context: ScanContext | undefined;

  private readonly host: LineageHost;
  private readonly sources: LineageSource[];
  private readonly env: NodeJS.ProcessEnv | undefined;

  constructor(host: LineageHost, options: LineageSessionOptions) {
    this.host = host;
    this.sources = options.sources;
    this.env = options.env;
    // The kickoff turn of a handoff child with a task starts during session_start: wait for it.
    this.queue = new DeliveryQueue(host, readLedger(host.entries()), {
      waitForSettle: kickoffExpected(host.branch()) || !host.isIdle(),
      // A failed send stopped the queue (its runtime went away): the whole session stops with it (poll and timers).
      onStop: () => this.stop(),
    });
    this.poll = new Poll(() => this.refreshWatched(), options.pollMs);
  }

  start(): void {
    this.scanTimer = setTimeout(() => void this.scan(), SCAN_DELAY_MS);
    this.scanTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const timer of [this.scanTimer, this.graceTimer]) if (timer !== undefined) clearTimeout(timer);
    this.poll.stop();
    this.queue.stop();
  }

  get hasScanned(): boolean {
    return this.scanned;
  }

  adoptedRuns(): AdoptedRun[] {
    return [...this.runs.values()];
  }

  scanNotes(): string[] {
    return [...this.notes, ...this.queue.notes];
  }

  /** A turn started (Pi's `agent_start`): an expected kickoff came. */
  onAgentStart(): void {
    this.sawAgentStart = true;
  }

  /** The agent settled (Pi's `agent_settled`): an idle point, deliver what waits. */
  onSettled(): void {
    this.queue.settled();
  }

  /** The session was compacted: remind the model of the runs still active. */
  onCompact(): void {
    const active = this.adoptedRuns().filter((run) => run.outcome === "active");
    this.queue.replace(
      "active-reminder",
      active.length > 0 ? { kind: "active-reminder", message: buildActiveReminder(active), records: [] } : undefined,
    );
    this.queue.flush();
  }

  private scanContext(): ScanContext {
    if (this.context !== undefined) return this.context;
    const env = this.env ?? process.env;
    const lineage = walkLineage(this.host.identity());
    const ownerId = ownCompletionOwnerId();
    this.context = {
      lineage,
      branch: this.host.branch(),
      env,
      agentDir: agentDirFromEnv(env),
      now: Date.now(),
      ...(ownerId === undefined ? {} : { ownCompletionOwnerId: ownerId }),
    };
    return this.context;
  }

  /** Refresh the adopted runs' state now (for the tool), without delivering anything. */
  async refreshAll(): Promise<AdoptedRun[]> {
    if (!this.scanned || this.context === undefined) return this.adoptedRuns();
    const refreshed = await refreshRuns(this.sources, this.adoptedRuns(), { ...this.context, now: Date.now() });
    for (const run of refreshed.runs) this.runs.set(`${run.source}\u0000${run.runId}`, run);
    return this.adoptedRuns();
  }

  private async scan(): Promise<void> {
    if (this.stopped) return;
    try {
      const context = this.scanContext();
      const result = await scanSources(this.sources, context);
      if (this.stopped) return;
      this.notes = [...context.lineage.notes, ...result.notes];
      for (const run of result.runs) this.runs.set(`${run.source}\u0000${run.runId}`, run);
      const resume = selectForResume(result.runs, this.queue.knownKeys());
      if (resume.length > 0)
        this.queue.enqueue({ kind: "resume", message: buildResumeMessage(resume), records: resume });
      this.watched = selectWatched(result.runs);
      if (this.watched.length > 0) this.poll.start();
    } catch (error) {
      this.notes.push(`lineage scan failed: ${errorMessage(error)}`);
    } finally {
      this.scanned = true;
    }
    if (this.queue.awaitingSettle && !this.sawAgentStart && this.isIdle()) {
      // A kickoff was expected but no turn has started: the acknowledgement may have failed, so do
      // not wait for a settle that may never come.
      this.graceTimer = setTimeout(() => {
        if (this.sawAgentStart || this.stopped) return;
        this.queue.release();
      }, KICKOFF_GRACE_MS);
      this.graceTimer.unref();
    }
    this.queue.flush();
  }

  private async refreshWatched(): Promise<void> {
    if (this.stopped || this.context === undefined) return;
    const refreshed = await refreshRuns(this.sources, this.watched, { ...this.context, now: Date.now() });
    if (this.stopped) return;
    for (const run of refreshed.runs) this.runs.set(`${run.source}\u0000${run.runId}`, run);
    for (const run of newlyEnded(refreshed.runs, this.queue.knownKeys())) {
      this.queue.enqueue({ kind: "completion", message: buildCompletionMessage(run), records: [run] });
    }
    this.watched = refreshed.runs.filter((run) => run.outcome === "active");
    if (this.watched.length === 0) this.poll.pause();
    this.queue.flush();
  }

  private isIdle(): boolean {
    try {
      return this.host.isIdle();
    } catch {
      return false;
    }
  }
}

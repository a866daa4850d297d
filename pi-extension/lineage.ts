/**
 * Lineage adoption in every Pi session: a session whose header names a parent picks up the
 * background work its ancestors started (pi-subagents runs, pi-workflows runs, the handoff chain),
 * says so in one resume message, then in one message per adopted run that finishes later.
 *
 * Invariants:
 * - Start-up is never held up: `session_start` only reads the in-memory session and schedules the
 *   scan; the lineage walk and the file reads run after start-up, asynchronously.
 * - The delivery rules below are src/lineage/delivery.ts's (`DeliveryQueue`, `Poll`), shared with
 *   handoff reports; this file wires them to Pi (`piDeliveryHost`) and to the lineage scan.
 * - Messages are delivered only at idle points, so they never race a turn (in particular a handoff
 *   child's kickoff turn, which starts during `session_start`): at the scan's end if Pi is idle and
 *   no kickoff is expected, otherwise after the next `agent_settled`.
 * - Every delivery is followed at once by a ledger entry of its `(source, run, outcome)` triples;
 *   a triple already in the ledger (this session's, or one inherited through a fork) is never
 *   delivered again.
 * - Messages never trigger a turn (`triggerTurn: false`, default delivery): the work was started
 *   by another conversation, possibly for a purpose this worktree no longer has, so acting on it
 *   is the user's call. Sent while idle, Pi appends the message at once; the model reads it with
 *   the next prompt, and the user sees it in the transcript right away.
 * - The completion watch is a poll of the adopted active runs only (cost bounded by their number),
 *   unref'd so it never keeps Pi alive, started in `session_start` and stopped in `session_shutdown`.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Box, Text } from "@earendil-works/pi-tui";
import { Type } from "typebox";
import { pollIntervalMs } from "../src/config/waits.ts";
import { findHandoffDetails, kickoffSent } from "../src/launch/acknowledge.ts";
import { DeliveryQueue, Poll, type DeliveryHost } from "../src/lineage/delivery.ts";
import { readLedger } from "../src/lineage/ledger.ts";
import { walkLineage } from "../src/lineage/ancestry.ts";
import {
  ADOPTED_RUNS_TOOL,
  buildActiveReminder,
  buildCompletionMessage,
  buildResumeMessage,
  LINEAGE_MESSAGE_TYPE,
  LineageMessageDetailsSchema,
  summarizeDetails,
} from "../src/lineage/messages.ts";
import { defaultSources, newlyEnded, ownCompletionOwnerId, refreshRuns, scanSources, selectForResume, selectWatched } from "../src/lineage/scan.ts";
import type { AdoptedRun, LineageEntryView, LineageSource, ScanContext } from "../src/lineage/types.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { answerAdoptedRuns, type AdoptedRunsState } from "../src/lineage/adopted-runs.ts";
import { compactLineageText, type Styler } from "./renderers.ts";
import { errorMessage } from "../src/errors.ts";

/** Long enough for Pi to finish drawing its first screen before any file is read. */
const SCAN_DELAY_MS = 50;
/** A handoff child's kickoff normally starts its turn at once; after this, it is not coming. */
const KICKOFF_GRACE_MS = 5_000;

export interface LineageOptions {
  sources?: LineageSource[];
  pollMs?: number;
}

/** The delivery port over Pi: the extension API sends and appends, the latest context says whether Pi is idle. */
export function piDeliveryHost(pi: ExtensionAPI, context: () => ExtensionContext): DeliveryHost {
  return {
    send: (message, options) => pi.sendMessage(message, options),
    appendEntry: (customType, data) => pi.appendEntry(customType, data),
    isIdle: () => context().isIdle(),
  };
}

/** Whether a handoff child's kickoff turn is still to come (it starts during session_start). */
export function expectsKickoff(ctx: ExtensionContext): boolean {
  const branch = ctx.sessionManager.getBranch();
  const handoff = findHandoffDetails(branch);
  return handoff !== undefined && handoff.hasTask && !kickoffSent(branch);
}

/** The state of one session's adoption; a new one per `session_start`. */
class LineageSession {
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

  private ctx: ExtensionContext;
  private readonly sources: LineageSource[];

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, sources: LineageSource[], pollMs: number) {
    this.ctx = ctx;
    this.sources = sources;
    const entries = ctx.sessionManager.getEntries() as LineageEntryView[];
    // The kickoff turn of a handoff child with a task starts during session_start: wait for it.
    this.queue = new DeliveryQueue(piDeliveryHost(pi, () => this.ctx), readLedger(entries), {
      waitForSettle: expectsKickoff(ctx) || !ctx.isIdle(),
      // A failed send stopped the queue (its runtime went away): the whole session stops with it (poll and timers).
      onStop: () => this.stop(),
    });
    this.poll = new Poll(() => this.refreshWatched(), pollMs);
  }

  /** Whether this session has any lineage at all (no parent and no handoff: nothing to do). */
  static relevant(ctx: ExtensionContext): boolean {
    const header = ctx.sessionManager.getHeader();
    if (header?.parentSession !== undefined && header.parentSession.length > 0) return true;
    return findHandoffDetails(ctx.sessionManager.getBranch()) !== undefined;
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

  onAgentStart(): void {
    this.sawAgentStart = true;
  }

  onSettled(ctx: ExtensionContext): void {
    this.ctx = ctx;
    this.queue.settled();
  }

  onCompact(ctx: ExtensionContext): void {
    this.ctx = ctx;
    const active = this.adoptedRuns().filter((run) => run.outcome === "active");
    this.queue.replace("active-reminder", active.length > 0 ? { kind: "active-reminder", message: buildActiveReminder(active), records: [] } : undefined);
    this.queue.flush();
  }

  private scanContext(): ScanContext {
    if (this.context !== undefined) return this.context;
    const manager = this.ctx.sessionManager;
    const header = manager.getHeader();
    const lineage = walkLineage({
      sessionFile: manager.getSessionFile(),
      sessionId: manager.getSessionId(),
      parentSession: header?.parentSession,
      timestamp: header?.timestamp,
      cwd: header?.cwd,
    });
    const ownerId = ownCompletionOwnerId();
    this.context = {
      lineage,
      branch: manager.getBranch() as LineageEntryView[],
      env: process.env,
      agentDir: agentDirFromEnv(process.env),
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
      if (resume.length > 0) this.queue.enqueue({ kind: "resume", message: buildResumeMessage(resume), records: resume });
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
      return this.ctx.isIdle();
    } catch {
      return false;
    }
  }
}

/** The `adopted_runs` tool; its answers are src/lineage/adopted-runs.ts's, from the session's state. */
function registerAdoptedRunsTool(pi: ExtensionAPI, state: () => Promise<AdoptedRunsState>): void {
  pi.registerTool({
    name: ADOPTED_RUNS_TOOL,
    label: "Adopted runs",
    description:
      "List or inspect the background work this session adopted from the sessions it continues (pi-subagents runs, pi-workflows runs, earlier handoffs): state, progress, and where the status, result and output files are. action=list shows all; action=inspect with runId shows one run in full, with the end of its output log.",
    promptSnippet: "List or inspect background runs adopted from earlier sessions",
    parameters: Type.Object({
      action: Type.String({ enum: ["list", "inspect"], description: "list: every adopted run; inspect: one run in full" }),
      runId: Type.Optional(Type.String({ description: "For inspect: the run id (or a unique prefix)" })),
    }),
    async execute(_toolCallId, params) {
      const answer = await answerAdoptedRuns(params, await state());
      return { content: [{ type: "text", text: answer.text }], details: { runs: answer.runs }, ...(answer.isError === true ? { isError: true } : {}) };
    },
  });
}

export function registerLineage(pi: ExtensionAPI, options: LineageOptions = {}): void {
  let session: LineageSession | undefined;
  /** The current session continues no other: there is nothing to adopt (distinct from "not scanned yet"). */
  let withoutLineage = false;

  pi.registerMessageRenderer(LINEAGE_MESSAGE_TYPE, (message, options, theme) => {
    const parsed = LineageMessageDetailsSchema.safeParse(message.details);
    const details = parsed.success ? parsed.data : undefined;
    const content = typeof message.content === "string" ? message.content : "";
    const style: Styler = { title: (t) => theme.fg("accent", t), strong: (t) => theme.bold(t), dim: (t) => theme.fg("dim", t) };
    // Collapsed: the summary and the first runs by name; expanded: the summary, then the full text the model reads.
    const text = options.expanded
      ? `${theme.fg("accent", `⟲ ${details === undefined ? "Adopted background work" : summarizeDetails(details)}`)}\n\n${content}`
      : compactLineageText(details, options.keyHint("app.tools.expand", "to expand"), style);
    const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(text, 0, 0));
    return box;
  });

  const lineageState = async (): Promise<AdoptedRunsState> => {
    const current = session;
    if (withoutLineage) return { code: "without_lineage" };
    if (current === undefined || !current.hasScanned) return { code: "not_scanned" };
    return { code: "scanned", runs: await current.refreshAll(), notes: current.scanNotes() };
  };
  const registerTool = (): void => registerAdoptedRunsTool(pi, lineageState);

  // Registered with the first session that has a lineage: a session without one has nothing to
  // adopt, and its model need not carry the tool's description in every request.
  let toolRegistered = false;

  pi.on("session_start", async (_event, ctx) => {
    session?.stop();
    session = undefined;
    withoutLineage = !LineageSession.relevant(ctx);
    if (withoutLineage) return;
    if (!toolRegistered) {
      registerTool();
      toolRegistered = true;
    }
    session = new LineageSession(pi, ctx, options.sources ?? defaultSources(), options.pollMs ?? pollIntervalMs(process.env, "PI_HANDOFF_LINEAGE_POLL_MS"));
    session.start();
  });
  pi.on("agent_start", async () => {
    session?.onAgentStart();
  });
  pi.on("agent_settled", async (_event, ctx) => {
    session?.onSettled(ctx);
  });
  pi.on("session_compact", async (_event, ctx) => {
    session?.onCompact(ctx);
  });
  pi.on("session_shutdown", async () => {
    session?.stop();
    session = undefined;
  });
}

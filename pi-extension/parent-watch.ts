/**
 * In a session that handed work off: a compact widget with each own handoff's branch, state and
 * time in it (src/recovery/watch.ts decides), and the delivery of its children's reports
 * (src/lineage/reports.ts, through the shared delivery rules of src/lineage/delivery.ts).
 *
 * Invariants:
 * - Decides nothing: states come from src/recovery/status.ts, delivery rules from delivery.ts.
 * - One unref'd poll per session (`PI_HANDOFF_WATCH_POLL_MS`), started at
 *   `session_start` and stopped at `session_shutdown`; each refresh reads bounded file tails, and
 *   asks each Herdr server that holds a child once for its panes' `agent_status`.
 * - Reports are delivered only at idle points, once (ledger), without triggering a turn unless the
 *   settings ask for it (`reportsTriggerTurn`); a report written while this session was closed is
 *   delivered at its next start.
 * - Nothing at all runs in a session that has no handoffs of its own (one directory listing per poll).
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { pollIntervalMs } from "../src/config/waits.ts";
import { loadHandoffConfig } from "../src/config/load.ts";
import { DeliveryQueue, Poll } from "../src/lineage/delivery.ts";
import { readLedger } from "../src/lineage/ledger.ts";
import { reportMessage, reportTriple, undeliveredReports } from "../src/lineage/reports.ts";
import type { LineageEntryView } from "../src/lineage/types.ts";
import { ChildReportStore } from "../src/manifest/child-reports.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { herdrAgentStatuses, type AgentStatusesOf } from "../src/mux/agent-statuses.ts";
import { formatChildrenWidget } from "../src/recovery/format.ts";
import { ownHandoffStatuses, type ParentIdentity } from "../src/recovery/watch.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { SessionTails } from "../src/session/tail.ts";
import { expectsKickoff, piDeliveryHost } from "./lineage.ts";

export const WIDGET_KEY = "handoff-children";
/** The first look soon after start-up, once Pi has drawn its screen. */
const FIRST_LOOK_MS = 100;

class ParentWatch {
  private ctx: ExtensionContext;
  private readonly queue: DeliveryQueue;
  private readonly poll: Poll;
  private readonly store: ManifestStore;
  private readonly reports: ChildReportStore;
  private readonly parent: ParentIdentity;
  private readonly agentDir: string;
  private readonly agentStatuses: AgentStatusesOf;
  private readonly tails = new SessionTails();
  private firstLook: NodeJS.Timeout | undefined;
  private stopped = false;
  private shown = false;
  /** Handoffs not read again: other sessions', and removed ones no longer shown (see ownHandoffs). */
  private readonly skipped = new Set<string>();

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, triggerTurn: boolean) {
    this.ctx = ctx;
    const agentDir = agentDirFromEnv(process.env);
    this.agentDir = agentDir;
    this.agentStatuses = herdrAgentStatuses(process.env);
    this.store = ManifestStore.forAgentDir(agentDir);
    this.reports = ChildReportStore.forAgentDir(agentDir);
    const file = ctx.sessionManager.getSessionFile();
    this.parent = { sessionId: ctx.sessionManager.getSessionId(), ...(file === undefined ? {} : { sessionFile: file }) };
    const ledger = readLedger(ctx.sessionManager.getEntries() as LineageEntryView[]);
    this.queue = new DeliveryQueue(piDeliveryHost(pi, () => this.ctx), ledger, {
      waitForSettle: expectsKickoff(ctx) || !ctx.isIdle(),
      triggerTurn,
      // A failed send stopped the queue (its runtime went away): the watch stops (poll and first look); the next session_start watches anew.
      onStop: () => this.stop(),
    });
    this.poll = new Poll(() => this.refresh(), pollIntervalMs(process.env, "PI_HANDOFF_WATCH_POLL_MS"));
  }

  start(): void {
    this.firstLook = setTimeout(() => {
      void this.refresh().finally(() => this.poll.start());
    }, FIRST_LOOK_MS);
    this.firstLook.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.firstLook !== undefined) clearTimeout(this.firstLook);
    this.poll.stop();
    this.queue.stop();
  }

  onSettled(ctx: ExtensionContext): void {
    this.ctx = ctx;
    this.queue.settled();
  }

  private async refresh(): Promise<void> {
    if (this.stopped) return;
    const own = await ownHandoffStatuses(
      { store: this.store, now: () => new Date(), agentDir: this.agentDir, agentStatuses: this.agentStatuses, tails: this.tails },
      this.parent,
      this.skipped,
    );
    if (this.stopped) return;
    if (own.length > 0 || this.shown) {
      this.shown = own.length > 0;
      this.setWidget(own.length > 0 ? formatChildrenWidget(own, Date.now()) : undefined);
    }
    if (own.length === 0) return;
    const pending = await undeliveredReports(this.reports, own.map((handoff) => handoff.id), (triple) => this.queue.known(triple));
    if (this.stopped) return;
    for (const report of pending) this.queue.enqueue({ kind: `report-${report.kind}`, message: reportMessage(report), records: [reportTriple(report)] });
    this.queue.flush();
  }

  private setWidget(lines: string[] | undefined): void {
    try {
      if (this.ctx.hasUI) this.ctx.ui.setWidget(WIDGET_KEY, lines, { placement: "belowEditor" });
    } catch {
      // A context from a replaced runtime: the next session_start makes a new watch.
    }
  }
}

/** The user's choice (settings `reportsTriggerTurn`); unreadable settings mean the default, never a turn. */
async function reportsTriggerTurn(ctx: ExtensionContext): Promise<boolean> {
  try {
    const loaded = await loadHandoffConfig({ cwd: ctx.cwd, agentDir: agentDirFromEnv(process.env), projectTrusted: ctx.isProjectTrusted() });
    return loaded.ok && loaded.config.reportsTriggerTurn === true;
  } catch {
    return false;
  }
}

export function registerParentWatch(pi: ExtensionAPI): void {
  let watch: ParentWatch | undefined;
  pi.on("session_start", async (_event, ctx) => {
    watch?.stop();
    watch = new ParentWatch(pi, ctx, await reportsTriggerTurn(ctx));
    watch.start();
  });
  pi.on("agent_settled", async (_event, ctx) => {
    watch?.onSettled(ctx);
  });
  pi.on("session_shutdown", async () => {
    watch?.stop();
    watch = undefined;
  });
}

/**
 * In a session that handed work off: a compact widget with each own handoff's branch, state and
 * time in it (src/watch/watch.ts decides), and the delivery of its children's reports
 * (src/adoption/reports.ts, through the shared delivery rules of src/adoption/delivery.ts).
 *
 * Invariants:
 * - Decides nothing: states come from src/inventory/status.ts, delivery rules from delivery.ts.
 * - One unref'd poll per session (`PI_HANDOFF_WATCH_POLL_MS`), started at `session_start` and
 *   stopped at `session_shutdown`; between polls the watch (src/watch/watch.ts `HandoffWatch`)
 *   shows a child's change as soon as it notices it (its state file, its manifest, its pid gone).
 * - Reports are delivered only at idle points, once (ledger), without triggering a turn unless the
 *   settings ask for it (`reportsTriggerTurn`); those waiting when the session starts are delivered
 *   during `session_start`, before any prompt, in every mode (print mode ends before a poll).
 * - Nothing at all runs in a session that has no handoffs of its own (one directory listing per poll).
 * - What watches and delivers loads in the session's start, after this Pi's acknowledgement
 *   (extension.ts registers that first), never with Pi; later events wait for it.
 * - The widget marks a child whose target moved past it or that would conflict (src/forecast/forecast.ts:
 *   one branch listing per repository per refresh, merges only when a tip moved).
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { pollIntervalMs } from "../src/config/waits.ts";
import type { DeliveryQueue, Poll } from "../src/adoption/delivery.ts";
import type { LineageEntryView } from "../src/adoption/types.ts";
import type { ChildReportStore } from "../src/manifest/child-reports.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import type { OwnHandoff, ParentIdentity } from "../src/watch/watch.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import type { ChildrenView } from "./children-view.ts";
import { expectsKickoff, piDeliveryHost } from "./lineage.ts";
import { loadOnce, OrderedStart } from "./load-once.ts";
import { HANDOFF_PROGRESS_CHANNEL } from "./progress-channel.ts";

/** What watches and delivers: loaded in the session's start, after this Pi's acknowledgement. */
const loadDelivery = loadOnce(async () => {
  const [config, delivery, ledger, reports, childReports] = await Promise.all([
    import("../src/config/load.ts"),
    import("../src/adoption/delivery.ts"),
    import("../src/adoption/ledger.ts"),
    import("../src/adoption/reports.ts"),
    import("../src/manifest/child-reports.ts"),
  ]);
  return {
    loadHandoffConfig: config.loadHandoffConfig,
    ...delivery,
    ...ledger,
    ...reports,
    ChildReportStore: childReports.ChildReportStore,
  };
});
type Delivery = Awaited<ReturnType<typeof loadDelivery>>;

export const WIDGET_KEY = "handoff-children";
/** The first look soon after start-up, once Pi has drawn its screen. */
const FIRST_LOOK_MS = 100;
/** How often the ages in the widget are redrawn (from what was read; nothing is read for it). */
const AGE_TICK_MS = 1_000;

class ParentWatch {
  private ctx: ExtensionContext;
  private readonly queue: DeliveryQueue;
  private readonly poll: Poll;
  private readonly store: ManifestStore;
  private readonly reports: ChildReportStore;
  private lookedAt = 0;
  private readonly parent: ParentIdentity;
  private readonly agentDir: string;
  private readonly triggerTurn: boolean;
  /** The watch and the widget's text (./children-view.ts), loaded at the first look, off Pi's start. */
  private view: Promise<ChildrenView> | undefined;
  private loadedView: ChildrenView | undefined;
  private firstLook: NodeJS.Timeout | undefined;
  /** Redraws the ages every second from what was read (no reads), when the text changed. */
  private ageTick: NodeJS.Timeout | undefined;
  private stopped = false;
  private looking = false;
  private shown = false;
  private lastLines = "";

  private readonly delivery: Delivery;

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, triggerTurn: boolean, delivery: Delivery) {
    const { ChildReportStore, DeliveryQueue, Poll, readLedger } = delivery;
    this.ctx = ctx;
    this.triggerTurn = triggerTurn;
    this.delivery = delivery;
    const agentDir = agentDirFromEnv(process.env);
    this.agentDir = agentDir;
    this.store = ManifestStore.forAgentDir(agentDir);
    this.reports = ChildReportStore.forAgentDir(agentDir);
    const file = ctx.sessionManager.getSessionFile();
    this.parent = {
      sessionId: ctx.sessionManager.getSessionId(),
      ...(file === undefined ? {} : { sessionFile: file }),
    };
    const ledger = readLedger(ctx.sessionManager.getEntries() as LineageEntryView[]);
    this.queue = new DeliveryQueue(
      piDeliveryHost(pi, () => this.ctx),
      ledger,
      {
        waitForSettle: expectsKickoff(ctx) || !ctx.isIdle(),
        triggerTurn,
        // A failed send stopped the queue (its runtime went away): the watch stops (poll and first look); the next session_start watches anew.
        onStop: () => this.stop(),
      },
    );
    this.poll = new Poll(() => this.refresh(), pollIntervalMs(process.env, "PI_HANDOFF_WATCH_POLL_MS"));
  }

  /** The reports that waited while this session was closed, delivered now (before any prompt). */
  async deliverPending(): Promise<void> {
    // Every Pi starts here: only the handoffs that sent reports are read, usually none.
    const withReports = await this.reports.handoffsWithReports();
    if (withReports.size === 0) return;
    const { ownHandoffs } = await import("../src/watch/watch.ts");
    const own = await ownHandoffs({ store: this.store, now: () => new Date() }, this.parent, new Set(), withReports);
    if (this.stopped || own.length === 0) return;
    await this.enqueueReports(own.map((manifest) => manifest.id));
    this.queue.flush({ triggerTurn: this.delivery.startDeliveryTriggersTurn(this.triggerTurn, this.ctx.mode) });
  }

  start(): void {
    this.firstLook = setTimeout(() => {
      void this.refresh().finally(() => this.poll.start());
    }, FIRST_LOOK_MS);
    this.firstLook.unref();
    this.ageTick = setInterval(() => {
      if (this.shown && this.loadedView !== undefined) this.show(this.loadedView.watch.shown());
    }, AGE_TICK_MS);
    this.ageTick.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.firstLook !== undefined) clearTimeout(this.firstLook);
    if (this.ageTick !== undefined) clearInterval(this.ageTick);
    this.poll.stop();
    this.loadedView?.watch.stop();
    this.queue.stop();
  }

  /**
   * A handoff of this session is under way: its manifest is read now, not at the next poll. Also
   * while other handoffs are watched (the watch follows only ids it knows), at most every
   * LOOK_NOW_MIN_MS, since every status line of the handoff asks.
   */
  lookNow(): void {
    if (this.stopped || this.looking || Date.now() - this.lookedAt < LOOK_NOW_MIN_MS) return;
    this.looking = true;
    this.lookedAt = Date.now();
    void this.refresh().finally(() => {
      this.looking = false;
    });
  }

  onSettled(ctx: ExtensionContext): void {
    this.ctx = ctx;
    this.queue.settled();
  }

  /** The view, made once; a watch made after this one stopped is stopped at once. */
  private async loadView(): Promise<ChildrenView> {
    this.view ??= import("./children-view.ts").then(({ watchChildren }) => {
      const view = watchChildren({
        store: this.store,
        agentDir: this.agentDir,
        parent: this.parent,
        onChange: (own) => this.show(own),
      });
      this.loadedView = view;
      if (this.stopped) view.watch.stop();
      return view;
    });
    return this.view;
  }

  private async refresh(): Promise<void> {
    if (this.stopped) return;
    const { watch } = await this.loadView();
    if (this.stopped) return;
    const own = await watch.refresh();
    if (this.stopped) return;
    this.show(own);
    // Reports of every own handoff still read, also one no longer shown (landed a while ago).
    const ids = watch.ownIds();
    if (ids.length === 0) return;
    await this.enqueueReports(ids);
    this.queue.flush();
  }

  private show(own: readonly OwnHandoff[]): void {
    if (this.stopped || (own.length === 0 && !this.shown)) return;
    this.shown = own.length > 0;
    const lines = own.length > 0 ? this.loadedView?.format(own, Date.now()) : undefined;
    const text = lines?.join("\n") ?? "";
    if (text === this.lastLines) return;
    this.lastLines = text;
    this.setWidget(lines);
  }

  private async enqueueReports(handoffIds: readonly string[]): Promise<void> {
    const { undeliveredReports, reportMessage, reportTriple } = this.delivery;
    const pending = await undeliveredReports(this.reports, handoffIds, (triple) => this.queue.known(triple));
    if (this.stopped) return;
    for (const report of pending)
      this.queue.enqueue({
        kind: `report-${report.kind}`,
        message: reportMessage(report),
        records: [reportTriple(report)],
      });
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
async function reportsTriggerTurn(ctx: ExtensionContext, delivery: Delivery): Promise<boolean> {
  try {
    const loaded = await delivery.loadHandoffConfig({
      cwd: ctx.cwd,
      agentDir: agentDirFromEnv(process.env),
      projectTrusted: ctx.isProjectTrusted(),
    });
    return loaded.ok && loaded.config.reportsTriggerTurn === true;
  } catch {
    return false;
  }
}

/** How often a running handoff's progress may make the widget look at the store again. */
const LOOK_NOW_MIN_MS = 250;

export function registerParentWatch(pi: ExtensionAPI): void {
  let watch: ParentWatch | undefined;
  /** The current start while the watch loads: later events wait for it. */
  const starts = new OrderedStart();
  pi.on("session_start", async (_event, ctx) => {
    watch?.stop();
    watch = undefined;
    await starts.begin(async (current) => {
      const delivery = await loadDelivery();
      const triggerTurn = await reportsTriggerTurn(ctx, delivery);
      if (!current()) return;
      const started = new ParentWatch(pi, ctx, triggerTurn, delivery);
      watch = started;
      try {
        await started.deliverPending();
      } catch {
        // An unreadable store must not stop Pi from starting; the watch's refreshes try again.
      }
      if (current()) started.start();
    });
  });
  pi.on("agent_settled", async (_event, ctx) => {
    await starts.settled();
    watch?.onSettled(ctx);
  });
  pi.events.on(HANDOFF_PROGRESS_CHANNEL, () => watch?.lookNow());
  pi.on("session_shutdown", async () => {
    starts.end();
    watch?.stop();
    watch = undefined;
  });
}

/**
 * In a handoff child: the notes recovery leaves for it (src/manifest/handoff-notes.ts; today
 * `pi-handoff rebase`: its base moved), delivered once each into its conversation at an idle
 * point, through the delivery rules reports use the other way (src/adoption/delivery.ts).
 *
 * Invariants:
 * - Decides nothing: what a note says and whether it was delivered are src/adoption/notes.ts's and
 *   the ledger's; this file wires them to Pi.
 * - Only in a handoff child (a session with the handoff message); one unref'd poll of one small
 *   directory (`PI_HANDOFF_WATCH_POLL_MS`), started at `session_start`, stopped at
 *   `session_shutdown`. Delivered without starting a turn.
 * - What delivers loads in the child's start, after its acknowledgement (extension.ts registers
 *   that first), never with Pi.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { pollIntervalMs } from "../src/config/waits.ts";
import { findHandoffDetails } from "../src/child/acknowledge.ts";
import type { DeliveryQueue, Poll } from "../src/adoption/delivery.ts";
import type { LineageEntryView } from "../src/adoption/types.ts";
import type { HandoffNoteStore } from "../src/manifest/handoff-notes.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { loadOnce, OrderedStart } from "./load-once.ts";
import { expectsKickoff, piDeliveryHost } from "./lineage.ts";

/** What delivers the notes: loaded in a handoff child's start, after its acknowledgement. */
const loadDelivery = loadOnce(async () => {
  const [delivery, ledger, notes, store] = await Promise.all([
    import("../src/adoption/delivery.ts"),
    import("../src/adoption/ledger.ts"),
    import("../src/adoption/notes.ts"),
    import("../src/manifest/handoff-notes.ts"),
  ]);
  return { ...delivery, ...ledger, ...notes, HandoffNoteStore: store.HandoffNoteStore };
});
type Delivery = Awaited<ReturnType<typeof loadDelivery>>;

class ChildNotes {
  private ctx: ExtensionContext;
  private readonly queue: DeliveryQueue;
  private readonly poll: Poll;
  private readonly notes: HandoffNoteStore;
  private readonly handoffId: string;
  private readonly delivery: Delivery;

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, handoffId: string, delivery: Delivery) {
    const { DeliveryQueue, Poll, readLedger, HandoffNoteStore } = delivery;
    this.ctx = ctx;
    this.handoffId = handoffId;
    this.delivery = delivery;
    this.notes = HandoffNoteStore.forAgentDir(agentDirFromEnv(process.env));
    this.queue = new DeliveryQueue(
      piDeliveryHost(pi, () => this.ctx),
      readLedger(ctx.sessionManager.getEntries() as LineageEntryView[]),
      { waitForSettle: expectsKickoff(ctx) || !ctx.isIdle(), onStop: () => this.stop() },
    );
    this.poll = new Poll(() => this.refresh(), pollIntervalMs(process.env, "PI_HANDOFF_WATCH_POLL_MS"));
  }

  start(): void {
    void this.refresh().finally(() => this.poll.start());
  }

  stop(): void {
    this.poll.stop();
    this.queue.stop();
  }

  onSettled(ctx: ExtensionContext): void {
    this.ctx = ctx;
    this.queue.settled();
  }

  private async refresh(): Promise<void> {
    if (this.queue.isStopped) return;
    const { undeliveredNotes, noteMessage, noteTriple } = this.delivery;
    for (const note of await undeliveredNotes(this.notes, this.handoffId, (triple) => this.queue.known(triple)))
      this.queue.enqueue({ kind: `note-${note.kind}`, message: noteMessage(note), records: [noteTriple(note)] });
    this.queue.flush();
  }
}

export function registerChildNotes(pi: ExtensionAPI): void {
  let notes: ChildNotes | undefined;
  /** The current start while what delivers loads: later events wait for it. */
  const starts = new OrderedStart();
  pi.on("session_start", async (_event, ctx) => {
    starts.end();
    notes?.stop();
    notes = undefined;
    const details = findHandoffDetails(ctx.sessionManager.getBranch());
    if (details === undefined) return;
    await starts.begin(async (current) => {
      const delivery = await loadDelivery();
      if (!current()) return;
      notes = new ChildNotes(pi, ctx, details.handoffId, delivery);
      notes.start();
    });
  });
  pi.on("agent_settled", async (_event, ctx) => {
    await starts.settled();
    notes?.onSettled(ctx);
  });
  pi.on("session_shutdown", async () => {
    starts.end();
    notes?.stop();
    notes = undefined;
  });
}

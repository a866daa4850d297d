/**
 * In a handoff child: the notes recovery leaves for it (src/manifest/handoff-notes.ts; today
 * `pi-handoff rebase`: its base moved), delivered once each into its conversation at an idle
 * point, through the delivery rules reports use the other way (src/lineage/delivery.ts).
 *
 * Invariants:
 * - Decides nothing: what a note says and whether it was delivered are src/lineage/notes.ts's and
 *   the ledger's; this file wires them to Pi.
 * - Only in a handoff child (a session with the handoff message); one unref'd poll of one small
 *   directory (`PI_HANDOFF_WATCH_POLL_MS`), started at `session_start`, stopped at
 *   `session_shutdown`. Delivered without starting a turn.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { pollIntervalMs } from "../src/config/waits.ts";
import { findHandoffDetails } from "../src/launch/acknowledge.ts";
import { DeliveryQueue, Poll } from "../src/lineage/delivery.ts";
import { readLedger } from "../src/lineage/ledger.ts";
import { noteMessage, noteTriple, undeliveredNotes } from "../src/lineage/notes.ts";
import type { LineageEntryView } from "../src/lineage/types.ts";
import { HandoffNoteStore } from "../src/manifest/handoff-notes.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { expectsKickoff, piDeliveryHost } from "./lineage.ts";

class ChildNotes {
  private ctx: ExtensionContext;
  private readonly queue: DeliveryQueue;
  private readonly poll: Poll;
  private readonly notes = HandoffNoteStore.forAgentDir(agentDirFromEnv(process.env));
  private readonly handoffId: string;

  constructor(pi: ExtensionAPI, ctx: ExtensionContext, handoffId: string) {
    this.ctx = ctx;
    this.handoffId = handoffId;
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
    for (const note of await undeliveredNotes(this.notes, this.handoffId, (triple) => this.queue.known(triple)))
      this.queue.enqueue({ kind: `note-${note.kind}`, message: noteMessage(note), records: [noteTriple(note)] });
    this.queue.flush();
  }
}

export function registerChildNotes(pi: ExtensionAPI): void {
  let notes: ChildNotes | undefined;
  pi.on("session_start", async (_event, ctx) => {
    notes?.stop();
    notes = undefined;
    const details = findHandoffDetails(ctx.sessionManager.getBranch());
    if (details === undefined) return;
    notes = new ChildNotes(pi, ctx, details.handoffId);
    notes.start();
  });
  pi.on("agent_settled", async (_event, ctx) => {
    notes?.onSettled(ctx);
  });
  pi.on("session_shutdown", async () => {
    notes?.stop();
    notes = undefined;
  });
}

/**
 * The delivery state machine (src/adoption/delivery.ts) on a recording host: idle points only, a
 * settle awaited first when asked, one ledger entry per delivery, nothing twice (ledger or queue),
 * reminders replaced, a host failure stopping the queue, and the poll never overlapping itself.
 */
import { describe, expect, it } from "vitest";
import {
  DeliveryQueue,
  Poll,
  tripleKey,
  type DeliveryHost,
  type DeliveryMessage,
} from "../../src/adoption/delivery.ts";
import { LINEAGE_LEDGER_TYPE } from "../../src/adoption/ledger.ts";
import { startDeliveryTriggersTurn } from "../../src/adoption/reports.ts";

function recordingHost(idle = true) {
  const sent: { message: DeliveryMessage; triggerTurn: boolean }[] = [];
  const entries: { customType: string; data: unknown }[] = [];
  const state = { idle, failSend: false };
  const host: DeliveryHost = {
    send: (message, options) => {
      if (state.failSend) throw new Error("runtime gone");
      sent.push({ message, triggerTurn: options.triggerTurn });
    },
    appendEntry: (customType, data) => entries.push({ customType, data }),
    isIdle: () => state.idle,
  };
  return { host, sent, entries, state };
}

const message = (content: string): DeliveryMessage => ({ customType: "t", content, display: true });
const triple = (runId: string) => ({ source: "handoff-report", runId, outcome: "report" });
const at = () => new Date("2026-01-02T03:04:05.000Z");

describe("DeliveryQueue", () => {
  it("delivers only at idle points, then writes one ledger entry with the delivery's keys", () => {
    const { host, sent, entries, state } = recordingHost(false);
    const queue = new DeliveryQueue(host, new Set(), { waitForSettle: false, now: at });
    queue.enqueue({ kind: "report", message: message("one"), records: [triple("r1")] });
    queue.flush();
    expect(sent).toEqual([]);
    state.idle = true;
    queue.flush();
    expect(sent).toEqual([{ message: message("one"), triggerTurn: false }]);
    expect(entries).toEqual([
      {
        customType: LINEAGE_LEDGER_TYPE,
        data: { version: 1, kind: "report", at: "2026-01-02T03:04:05.000Z", delivered: [triple("r1")] },
      },
    ]);
    queue.flush();
    expect(sent).toHaveLength(1);
  });

  it("lets one flush override whether a turn starts (a delivery at session start)", () => {
    const { host, sent } = recordingHost(true);
    const queue = new DeliveryQueue(host, new Set(), { waitForSettle: false, triggerTurn: true, now: at });
    queue.enqueue({ kind: "report", message: message("at start"), records: [triple("r1")] });
    queue.flush({ triggerTurn: false });
    queue.enqueue({ kind: "report", message: message("later"), records: [triple("r2")] });
    queue.flush();
    expect(sent.map((item) => [item.message.content, item.triggerTurn])).toEqual([
      ["at start", false],
      ["later", true],
    ]);
    // At start a turn is started only in the TUI, and only when the settings ask for it.
    expect(
      (["tui", "print", "json", "rpc"] as const).map((mode) => [
        startDeliveryTriggersTurn(true, mode),
        startDeliveryTriggersTurn(false, mode),
      ]),
    ).toEqual([
      [true, false],
      [false, false],
      [false, false],
      [false, false],
    ]);
  });

  it("waits for a settle when asked, and release() ends the wait", () => {
    const { host, sent } = recordingHost(true);
    const queue = new DeliveryQueue(host, new Set(), { waitForSettle: true });
    queue.enqueue({ kind: "report", message: message("one"), records: [] });
    queue.flush();
    expect(sent).toEqual([]);
    expect(queue.awaitingSettle).toBe(true);
    queue.release();
    expect(sent.map((item) => item.message.content)).toEqual(["one"]);
  });

  it("knows what the ledger holds or the queue waits with, so nothing is queued twice", () => {
    const { host } = recordingHost(false);
    const queue = new DeliveryQueue(host, new Set([tripleKey(triple("old"))]), { waitForSettle: false });
    expect(queue.known(triple("old"))).toBe(true);
    expect(queue.known(triple("new"))).toBe(false);
    queue.enqueue({ kind: "report", message: message("new"), records: [triple("new")] });
    expect(queue.known(triple("new"))).toBe(true);
    expect([...queue.knownKeys()].sort()).toEqual([tripleKey(triple("new")), tripleKey(triple("old"))].sort());
  });

  it("replaces a waiting reminder rather than stacking it, and triggers a turn only when asked", () => {
    const { host, sent, entries, state } = recordingHost(false);
    const queue = new DeliveryQueue(host, new Set(), { waitForSettle: false, triggerTurn: true });
    queue.replace("reminder", { kind: "reminder", message: message("first"), records: [] });
    queue.replace("reminder", { kind: "reminder", message: message("second"), records: [] });
    state.idle = true;
    queue.settled();
    expect(sent).toEqual([{ message: message("second"), triggerTurn: true }]);
    expect(entries).toEqual([]);
  });

  it("stops on a host failure, with a note, and delivers nothing more", () => {
    const { host, sent, state } = recordingHost(true);
    let stops = 0;
    const queue = new DeliveryQueue(host, new Set(), { waitForSettle: false, onStop: () => void (stops += 1) });
    state.failSend = true;
    queue.enqueue({ kind: "report", message: message("one"), records: [triple("r1")] });
    queue.flush();
    expect(queue.isStopped).toBe(true);
    // Its owner is told once, to end the poll that feeds it.
    queue.stop();
    expect(stops).toBe(1);
    expect(queue.notes).toEqual(["delivery failed: runtime gone"]);
    state.failSend = false;
    queue.enqueue({ kind: "report", message: message("two"), records: [] });
    queue.flush();
    expect(sent).toEqual([]);
  });
});

describe("Poll", () => {
  it("never runs a tick while the previous one is still running, and stops for good", async () => {
    let running = 0;
    let overlapped = false;
    let ticks = 0;
    let release: () => void = () => {};
    const poll = new Poll(async () => {
      ticks += 1;
      if (running > 0) overlapped = true;
      running += 1;
      await new Promise<void>((resolve) => (release = resolve));
      running -= 1;
    }, 5);
    poll.start();
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(ticks).toBe(1);
    release();
    await new Promise((resolve) => setTimeout(resolve, 40));
    poll.stop();
    release();
    const after = ticks;
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(ticks).toBe(after);
    expect(overlapped).toBe(false);
    expect(poll.active).toBe(false);
  });
});

describe("notes into a handoff child (adoption/notes.ts)", () => {
  it("delivers a rebase note once, at an idle point, without a turn, and never again (ledger, restart)", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { HandoffNoteStore } = await import("../../src/manifest/handoff-notes.ts");
    const { noteMessage, noteTriple, undeliveredNotes } = await import("../../src/adoption/notes.ts");
    const { NOTE_MESSAGE_TYPE } = await import("../../src/session/message-types.ts");
    const { readLedger } = await import("../../src/adoption/ledger.ts");
    const dir = mkdtempSync(join(tmpdir(), "phw-notes-"));
    try {
      const store = new HandoffNoteStore(dir);
      const sha = (c: string) => c.repeat(40);
      const input = {
        handoffId: "h-1234",
        kind: "rebased" as const,
        branch: "feat/x",
        text: "The base of this handoff moved.\u001b[31m",
        rebase: { onto: { ref: "main", sha: sha("a") }, from: sha("b"), to: sha("c"), commits: 2 },
        fixedId: { at: new Date("2026-01-02T03:04:05.000Z"), hex: sha("c") },
      };
      expect((await store.write(input)).written).toBe(true);
      // Told again after a crash: the same note, not a second one.
      expect((await store.write(input)).written).toBe(false);
      const { host, sent, entries, state } = recordingHost(false);
      const queue = new DeliveryQueue(host, new Set(), { waitForSettle: false, now: at });
      const feed = async (q: DeliveryQueue) => {
        for (const note of await undeliveredNotes(store, "h-1234", (t) => q.known(t)))
          q.enqueue({ kind: `note-${note.kind}`, message: noteMessage(note), records: [noteTriple(note)] });
        q.flush();
      };
      await feed(queue);
      expect(sent).toEqual([]);
      state.idle = true;
      await feed(queue);
      await feed(queue);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({
        triggerTurn: false,
        message: { customType: NOTE_MESSAGE_TYPE, content: "The base of this handoff moved." },
      });
      // A restarted child reads its ledger back and delivers nothing again.
      const again = recordingHost(true);
      const ledger = readLedger(
        entries.map((entry) => ({ type: "custom", customType: entry.customType, data: entry.data })),
      );
      await feed(new DeliveryQueue(again.host, ledger, { waitForSettle: false }));
      expect(again.sent).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The child's state as the parent shows it (src/inventory/status.ts) and the session tail it reads
 * (src/session/tail.ts): every state, its time, the precedence of facts, and a tail cut anywhere.
 */
import { appendFileSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { waitFor } from "../support/tmux.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Landing, Manifest } from "../../src/manifest/schema.ts";
import {
  decideChildStatus,
  formatDuration,
  turnActivity,
  type ChildStatusFacts,
  type PublishedActivity,
} from "../../src/inventory/status.ts";
import { parseTail, readSessionTail, SessionTails, type TailEntry } from "../../src/session/tail.ts";

const T0 = "2026-01-01T10:00:00.000Z";
const T1 = "2026-01-01T10:01:00.000Z";
const T2 = "2026-01-01T10:02:00.000Z";
const sha = (c: string) => c.repeat(40);

const user = (at = T1): TailEntry => ({ type: "message", role: "user", timestamp: at });
const assistant = (stopReason: string, at = T2, toolCalls?: string[]): TailEntry => ({
  type: "message",
  role: "assistant",
  stopReason,
  timestamp: at,
  ...(toolCalls === undefined ? {} : { toolCalls }),
});
const toolResult = (at = T2): TailEntry => ({ type: "message", role: "toolResult", timestamp: at });

function manifest(extra: Partial<Pick<Manifest, "state" | "history" | "landings">> = {}): ChildStatusFacts["manifest"] {
  return { state: "running", history: [{ state: "provisioning", at: T0 }], child: { ackAt: T0 }, ...extra };
}

const landing = (state: Landing["state"]): Landing => ({
  state,
  at: T1,
  settledAt: T2,
  into: "main",
  strategy: "ff",
  from: sha("a"),
  to: sha("b"),
  branchTip: sha("b"),
  commits: [{ sha: sha("b"), subject: "x" }],
});

describe("turnActivity", () => {
  it("reads a turn in progress, a tool asking, and a finished turn from the last entries", () => {
    expect(turnActivity([assistant("stop", T0), user(T1)])).toEqual({
      kind: "working",
      since: T1,
      basis: "a prompt is being answered",
    });
    expect(turnActivity([user(T1), assistant("toolUse", T2, ["bash"])])).toEqual({
      kind: "working",
      since: T1,
      basis: "a tool is running",
    });
    expect(turnActivity([user(T1), assistant("toolUse", T2, ["bash"]), toolResult(T2)])).toEqual({
      kind: "working",
      since: T1,
      basis: "a turn is in progress",
    });
    expect(turnActivity([user(T1), assistant("toolUse", T2, ["ask_user"])])).toEqual({
      kind: "waiting_input",
      since: T2,
      basis: "tool ask_user is asking",
    });
    expect(
      turnActivity([
        user(T1),
        assistant("stop", T2),
        { type: "custom", customType: "ledger", timestamp: "2026-01-01T11:00:00.000Z" },
      ]),
    ).toEqual({ kind: "idle", since: T2, basis: "its last turn finished" });
    expect(turnActivity([user(T1), assistant("aborted", T2)])).toEqual({
      kind: "idle",
      since: T2,
      basis: "its last turn ended (aborted)",
    });
    expect(turnActivity([{ type: "custom_message", customType: "handoff-worktree-kickoff", timestamp: T1 }])).toEqual({
      kind: "working",
      since: T1,
      basis: "its task's first turn started",
    });
    expect(turnActivity([{ type: "session", timestamp: T0 }])).toBeUndefined();
  });
});

describe("decideChildStatus", () => {
  it("a handoff whose postCreate command failed: its Pi never started (no time), until one acknowledges", () => {
    const hooks = { commands: ["true", "exit 4"], statusFile: "/s", exitStatus: 4, failedCommand: 2 };
    const failed = { state: "failed" as const, history: [{ state: "provisioning" as const, at: T0 }], child: {} };
    expect(
      decideChildStatus({ manifest: { ...failed, setup: { postCreate: hooks } }, live: false, sessionMtime: T1 }),
    ).toEqual({
      state: "not_started",
      basis: "its postCreate command 2 of 2 failed with exit status 4, so its Pi was not started",
    });
    // Another failure, or a Pi that acknowledged (started by hand after the fix): as before.
    expect(decideChildStatus({ manifest: failed, live: false, sessionMtime: T1 }).state).toBe("exited");
    expect(
      decideChildStatus({
        manifest: { ...failed, child: { ackAt: T1 }, setup: { postCreate: hooks } },
        live: false,
        sessionMtime: T1,
      }).state,
    ).toBe("exited");
  });

  it("removed wins over everything, with the time of the removal", () => {
    const removed = manifest({
      state: "removed",
      history: [
        { state: "provisioning", at: T0 },
        { state: "removed", at: T2 },
      ],
    });
    expect(decideChildStatus({ manifest: removed, live: true, tail: [user()] })).toEqual({
      state: "removed",
      since: T2,
      basis: "its worktree was retired",
    });
  });

  it("a live Pi's turn: working, waiting for input (the tail or Herdr's blocked), else idle", () => {
    expect(decideChildStatus({ manifest: manifest(), live: true, tail: [user(T1)] })).toMatchObject({
      state: "working",
      since: T1,
    });
    expect(
      decideChildStatus({
        manifest: manifest(),
        live: true,
        tail: [user(T1), assistant("stop")],
        agentStatus: "blocked",
      }),
    ).toMatchObject({ state: "waiting_input", basis: "Herdr reports it blocked on input" });
    expect(
      decideChildStatus({
        manifest: manifest(),
        live: true,
        tail: [user(T1), assistant("stop")],
        agentStatus: "working",
      }),
    ).toMatchObject({ state: "working", basis: "Herdr reports it working" });
    expect(
      decideChildStatus({
        manifest: manifest(),
        live: true,
        tail: [user(T1), assistant("stop", T2)],
        agentStatus: "unknown",
      }),
    ).toEqual({ state: "idle", since: T2, basis: "its last turn finished" });
    expect(decideChildStatus({ manifest: manifest(), live: true })).toEqual({
      state: "idle",
      since: T0,
      basis: "its Pi runs and has not taken a turn",
    });
  });

  it("a tail ending mid-turn without a live Pi is an exited child, since the file last changed", () => {
    expect(decideChildStatus({ manifest: manifest(), live: false, tail: [user(T1)], sessionMtime: T2 })).toEqual({
      state: "exited",
      since: T2,
      basis: "no Pi runs on its session",
    });
  });

  it("landed while the branch is still at the landed tip and no turn runs; a later commit makes it idle or exited again", () => {
    const landed = manifest({ landings: [landing("landed")] });
    expect(decideChildStatus({ manifest: landed, live: true, tail: [assistant("stop")], branchTip: sha("b") })).toEqual(
      { state: "landed", since: T2, basis: "landed into main" },
    );
    expect(decideChildStatus({ manifest: landed, live: false, branchTip: sha("c") })).toMatchObject({
      state: "exited",
    });
    expect(decideChildStatus({ manifest: landed, live: true, tail: [user(T1)] })).toMatchObject({ state: "working" });
    expect(decideChildStatus({ manifest: manifest({ landings: [landing("abandoned")] }), live: false })).toMatchObject({
      state: "exited",
    });
  });

  it("a live child's own word is its state, with its own time, whatever the tail or Herdr say", () => {
    const said = (activity: PublishedActivity) =>
      decideChildStatus({ manifest: manifest(), live: true, activity, tail: [user(T0)], agentStatus: "blocked" });
    expect(said({ state: "working", since: T2, tool: "bash" })).toEqual({
      state: "working",
      since: T2,
      tool: "bash",
      basis: "its Pi says it is in a turn, running bash",
    });
    expect(said({ state: "waiting_input", since: T1 })).toEqual({
      state: "waiting_input",
      since: T1,
      basis: "its Pi says a dialog is open",
    });
    expect(said({ state: "waiting_input", since: T1, question: true }).basis).toBe(
      "its Pi says a tool asked a question",
    );
    expect(said({ state: "compacting", since: T1 })).toMatchObject({ state: "compacting", since: T1 });
    expect(said({ state: "starting", since: T1 })).toMatchObject({ state: "starting", basis: "its Pi is starting" });
    expect(said({ state: "idle", since: T2, movedTo: "/s/new.jsonl" })).toEqual({
      state: "idle",
      since: T2,
      basis: "its Pi says it is idle (on /s/new.jsonl, where it went on)",
    });
    // Without a live Pi the word counts for nothing: exited.
    expect(
      decideChildStatus({ manifest: manifest(), live: false, activity: { state: "working", since: T2 } }).state,
    ).toBe("exited");
    // A busy child beats a landing, an idle one does not.
    const landed = manifest({ landings: [landing("landed")] });
    const live = (state: PublishedActivity["state"]) =>
      decideChildStatus({ manifest: landed, live: true, activity: { state, since: T1 }, branchTip: sha("b") }).state;
    expect([live("compacting"), live("idle")]).toEqual(["compacting", "landed"]);
  });

  it("starting while a launch is under way and no Pi runs yet, since the launch began", () => {
    const launching = manifest({
      state: "launching",
      history: [
        { state: "provisioning", at: T0 },
        { state: "launching", at: T1 },
        { state: "running", at: T1 },
        { state: "launching", at: T2 },
      ],
    });
    expect(decideChildStatus({ manifest: launching, live: false, launching: true })).toEqual({
      state: "starting",
      since: T2,
      basis: "its launch is under way",
    });
    expect(decideChildStatus({ manifest: manifest({ state: "forked" }), live: false, launching: true })).toMatchObject({
      state: "starting",
      since: T0,
    });
    // A launch whose process died is no start: exited.
    expect(decideChildStatus({ manifest: launching, live: false, launching: false }).state).toBe("exited");
  });

  it("exited since its own word (with the code), else the last sign of life, else the session file", () => {
    expect(
      decideChildStatus({ manifest: manifest(), live: false, ended: { at: T2, code: 0 }, sessionMtime: T1 }),
    ).toEqual({
      state: "exited",
      since: T2,
      exitCode: 0,
      basis: "its Pi exited with code 0",
    });
    expect(decideChildStatus({ manifest: manifest(), live: false, lastAliveAt: T2, sessionMtime: T1 })).toMatchObject({
      state: "exited",
      since: T2,
    });
  });

  it("ages are this Pi's: a time read from the session never predates its acknowledgement", () => {
    const acked = { ...manifest(), child: { ackAt: T2 } };
    // The tail's last turn is the parent's, copied at the fork (T1); this Pi started at T2.
    expect(decideChildStatus({ manifest: acked, live: true, tail: [user(T0), assistant("stop", T1)] })).toEqual({
      state: "idle",
      since: T2,
      basis: "its last turn finished",
    });
  });

  it("formats durations compactly", () => {
    expect([0, 59_000, 60_000, 3_599_000, 3_600_000, 3_900_000, 90_000_000].map(formatDuration)).toEqual([
      "0s",
      "59s",
      "1m",
      "59m",
      "1h",
      "1h 5m",
      "1d",
    ]);
  });
});

describe("session tail", () => {
  const dir = mkdtempSync(join(tmpdir(), "phw-tail-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps only complete lines: a window cut mid-line and a line still being written are dropped", () => {
    const lines = [
      JSON.stringify({ type: "message", timestamp: T1, message: { role: "user", content: "x".repeat(100) } }),
      JSON.stringify({
        type: "message",
        timestamp: T2,
        message: {
          role: "assistant",
          stopReason: "toolUse",
          content: [
            { type: "text", text: "t" },
            { type: "toolCall", name: "bash", id: "1", arguments: {} },
          ],
        },
      }),
    ];
    const text = `${lines.join("\n")}\n{"type":"mess`;
    expect(parseTail(text, false)).toEqual([
      { type: "message", timestamp: T1, role: "user" },
      { type: "message", timestamp: T2, role: "assistant", stopReason: "toolUse", toolCalls: ["bash"] },
    ]);
    expect(parseTail(text.slice(10), true)).toEqual([
      { type: "message", timestamp: T2, role: "assistant", stopReason: "toolUse", toolCalls: ["bash"] },
    ]);
    expect(parseTail("not json\n[1]\n", false)).toEqual([]);
  });

  it("reads no more than its window of a long file, and nothing of a missing one", async () => {
    const file = join(dir, "long.jsonl");
    const filler = JSON.stringify({ type: "custom", customType: "filler", data: "y".repeat(1000) });
    writeFileSync(
      file,
      `${Array.from({ length: 500 }, () => filler).join("\n")}\n${JSON.stringify({ type: "message", timestamp: T2, message: { role: "assistant", stopReason: "stop" } })}\n`,
    );
    const tail = await readSessionTail(file, 4096);
    expect(tail?.entries.length).toBeLessThanOrEqual(4);
    expect(tail?.entries.at(-1)).toEqual({ type: "message", timestamp: T2, role: "assistant", stopReason: "stop" });
    expect(await readSessionTail(join(dir, "missing.jsonl"))).toBeUndefined();
  });

  it("SessionTails reads a file again only once it changed, and forgets what is no longer watched", async () => {
    const file = join(dir, "watched.jsonl");
    const entry = (stopReason: string) =>
      JSON.stringify({ type: "message", timestamp: T2, message: { role: "assistant", stopReason } });
    const at = new Date("2026-01-01T10:03:00Z");
    writeFileSync(file, `${entry("stop")}\n`);
    utimesSync(file, at, at);
    const tails = new SessionTails();
    const first = await tails.read(file);
    expect(first?.entries).toEqual([{ type: "message", timestamp: T2, role: "assistant", stopReason: "stop" }]);
    // Unchanged: the tail read before, not a new read.
    expect(await tails.read(file)).toBe(first);
    // Other bytes of the same size with the modification time put back: the change time tells
    // (rewritten until it moved, as a coarse kernel clock may not have ticked since the first write).
    const ctimeBefore = statSync(file, { bigint: true }).ctimeNs;
    await waitFor(() => {
      writeFileSync(file, `${entry("left")}\n`);
      utimesSync(file, at, at);
      return statSync(file, { bigint: true }).ctimeNs !== ctimeBefore;
    });
    expect((await tails.read(file))?.entries.map((e) => e.stopReason)).toEqual(["left"]);
    // Appended: read again.
    appendFileSync(file, `${entry("toolUse")}\n`);
    expect((await tails.read(file))?.entries.map((e) => e.stopReason)).toEqual(["left", "toolUse"]);
    // Forgotten: the next read reads the file even though it did not change.
    const cached = await tails.read(file);
    tails.keepOnly(new Set());
    const reread = await tails.read(file);
    expect(reread).not.toBe(cached);
    expect(reread?.entries).toEqual(cached?.entries);
    rmSync(file);
    expect(await tails.read(file)).toBeUndefined();
  });
});

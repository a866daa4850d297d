/**
 * The end of the final notice: for each outcome, the exact next commands (the way to the child's
 * window and back, `/handoffs`, `pi-handoff inspect|relaunch|remove|prune <id>`), per backend.
 */
import { describe, expect, it } from "vitest";
import { nextSteps } from "../../src/handoff/next-steps.ts";
import { switchCommand } from "../../src/mux/registry.ts";
import { windowKey } from "../../src/mux/tmux/tmux.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestSchema, type Manifest, type MuxLocation } from "../../src/manifest/schema.ts";

const ID = "20260101-100000-feat-x-abcd";
const WORKTREE = "/work/repo.worktrees/feat-x";
const CHILD = "/s/child.jsonl";
const TMUX: MuxLocation = { kind: "tmux", socketPath: "/tmp/sock", sessionId: "$1", windowId: "@7", paneId: "%7" };
const HERDR: MuxLocation = {
  kind: "herdr",
  socketPath: "/h/herdr.sock",
  workspaceId: "w2",
  tabId: "w2:t1",
  paneId: "w2:p1",
};

function manifest(mux: MuxLocation, patch: (m: Manifest) => void = () => {}): Manifest {
  const m = newManifest({
    id: ID,
    now: new Date("2026-01-01T10:00:00.000Z"),
    branch: "feat/x",
    base: { ref: "main", sha: "a".repeat(40) },
    repo: { root: "/work/repo", commonDir: "/work/repo/.git" },
    parent: { sessionFile: "/s/parent.jsonl", sessionId: "p", leafId: "abcd1234", cwd: "/work/repo" },
    worktree: { path: WORKTREE },
    mux,
  });
  m.child = { sessionFile: CHILD, sessionId: "c", pid: 4242 };
  patch(m);
  return ManifestSchema.parse(m);
}

const focused = (m: Manifest) => {
  m.focus = { at: "2026-01-01T10:00:05.000Z" };
};
const everything = () => true;

describe("nextSteps", () => {
  it("says nothing after a refusal (its sentence already says what to do)", () => {
    expect(nextSteps({ code: "refused" }, { env: {} })).toEqual([]);
  });

  it("running in tmux, focused: the keys back to the parent's window and forth to the child's", () => {
    const keys = { back: "Ctrl-b 0", goTo: "Ctrl-b 1" };
    expect(
      nextSteps({ code: "running", manifest: manifest(TMUX, focused), keys }, { env: { TMUX_PANE: "%0" } }),
    ).toEqual([
      "Next: you are in its window now; come back with Ctrl-b 0, return with Ctrl-b 1.",
      `Later: /handoffs here, or pi-handoff inspect ${ID} in a shell (relaunch its Pi, switch to it, remove it).`,
    ]);
  });

  it("running in tmux without keys (a window past 9): what to type in each Pi, never a bare shell command", () => {
    expect(
      nextSteps({ code: "running", manifest: manifest(TMUX, focused), keys: {} }, { env: { TMUX_PANE: "%0" } })[0],
    ).toBe(
      "Next: you are in its window now; come back with !!tmux select-window -t %0 typed in its Pi, return with /handoffs here.",
    );
  });

  it("running with --no-focus (or a failed focus): how to switch to it", () => {
    expect(
      nextSteps(
        { code: "running", manifest: manifest(TMUX), keys: { back: "Ctrl-a 0", goTo: "Ctrl-a 7" } },
        { env: { TMUX_PANE: "%0" } },
      )[0],
    ).toBe("Next: switch to it with Ctrl-a 7, come back with Ctrl-a 0.");
    const failedFocus = manifest(TMUX, (m) => {
      m.focus = { error: "Window @7 is gone.", at: "2026-01-01T10:00:05.000Z" };
    });
    expect(nextSteps({ code: "running", manifest: failedFocus }, { env: {} })[0]).toBe(
      "Next: switch to it with /handoffs here, come back with your multiplexer's switch key.",
    );
  });

  it("running in Herdr: the way back from $HERDR_WORKSPACE_ID, typed in the child's Pi; /handoffs to return", () => {
    expect(
      nextSteps({ code: "running", manifest: manifest(HERDR, focused) }, { env: { HERDR_WORKSPACE_ID: "w1" } })[0],
    ).toBe(
      "Next: you are in its workspace now; come back with !!herdr workspace focus w1 typed in its Pi, return with /handoffs here.",
    );
    // A malformed id is not offered as a command.
    expect(
      nextSteps({ code: "running", manifest: manifest(HERDR) }, { env: { HERDR_WORKSPACE_ID: "w1; rm -rf /" } })[0],
    ).toBe("Next: switch to it with /handoffs here, come back with your multiplexer's switch key.");
  });

  it("unconfirmed: look at the window, relaunch if no Pi runs, inspect or remove", () => {
    expect(nextSteps({ code: "launch_unconfirmed", manifest: manifest(HERDR) }, { env: {} })).toEqual([
      `Next: look at its workspace (/handoffs here): answer what Pi asks there, or if no Pi runs, pi-handoff relaunch ${ID}.`,
      `What exists: /handoffs here, or pi-handoff inspect ${ID} in a shell; clean up with pi-handoff remove ${ID} (keeps the branch, refuses uncommitted work).`,
    ]);
  });

  it("failed after the worktree: inspect, relaunch only when the session exists, remove", () => {
    const failed = manifest(TMUX);
    expect(nextSteps({ code: "failed", manifest: failed }, { env: {}, exists: everything })).toEqual([
      `Next: see what exists with /handoffs here, or pi-handoff inspect ${ID} in a shell; pi-handoff relaunch ${ID} starts its Pi; pi-handoff remove ${ID} cleans up (keeps the branch, refuses uncommitted work).`,
    ]);
    expect(nextSteps({ code: "failed", manifest: failed }, { env: {}, exists: (path) => path === WORKTREE })).toEqual([
      `Next: see what exists with /handoffs here, or pi-handoff inspect ${ID} in a shell; pi-handoff remove ${ID} cleans up (keeps the branch, refuses uncommitted work).`,
    ]);
  });

  it("failed before any worktree: try again, prune retires the record", () => {
    expect(
      nextSteps(
        { code: "failed", manifest: manifest({ kind: "tmux", socketPath: "/tmp/sock" }) },
        { env: {}, exists: () => false },
      ),
    ).toEqual([
      "Next: fix the cause above and run /handoff-worktree feat/x again; pi-handoff prune retires this record.",
    ]);
  });

  it("reads a tmux key from the server's answer: the prefix as a person reads it, then the window's number", () => {
    expect(windowKey("0\tC-b\n")).toBe("Ctrl-b 0");
    expect(windowKey("3\tM-a\n")).toBe("Alt-a 3");
    expect(windowKey("1\tC-M-x\n")).toBe("Ctrl-Alt-x 1");
    expect(windowKey("2\t`\n")).toBe("` 2");
    // No default binding past 9, no prefix at all, or an answer that is not one: no key.
    expect(windowKey("10\tC-b\n")).toBeUndefined();
    expect(windowKey("0\tNone\n")).toBeUndefined();
    expect(windowKey("")).toBeUndefined();
  });

  it("names no switch command without a recorded window", () => {
    expect(switchCommand({ kind: "tmux", socketPath: "/tmp/sock" })).toBeUndefined();
    expect(switchCommand({ kind: "herdr" })).toBeUndefined();
    expect(nextSteps({ code: "running", manifest: manifest({ kind: "herdr" }) }, { env: {} })).toEqual([
      `Later: /handoffs here, or pi-handoff inspect ${ID} in a shell (relaunch its Pi, switch to it, remove it).`,
    ]);
  });
});

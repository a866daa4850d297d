/**
 * The parent's view of its own handoffs (src/watch/watch.ts): only manifests whose parent is
 * this session (by file, or by id), removed ones only for a while, each with its child's state from
 * the session tail and whether the recorded pid is a live `pi` of that handoff.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ManifestStore } from "../../src/manifest/store.ts";
import { formatChildrenWidget } from "../../src/inventory/format.ts";
import { HandoffWatch, ownHandoffStatuses, REMOVED_READ_MS, RETIRED_SHOWN_MS } from "../../src/watch/watch.ts";
import { sessionKey } from "../../src/child/lease.ts";
import type { PublishedState } from "../../src/child/child-state.ts";
import { waitFor } from "../support/tmux.ts";
import { SessionTails } from "../../src/session/tail.ts";
import type { ChildState } from "../../src/inventory/status.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-watch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const T = "2026-01-01T10:00:00.000Z";

/** Kept tails that note each file asked for. */
class CountingTails extends SessionTails {
  readonly files: string[] = [];
  override read(file: string, maxBytes?: number): ReturnType<SessionTails["read"]> {
    this.files.push(file);
    return super.read(file, maxBytes);
  }
}

/** A session whose last entry is the user's prompt: a turn in progress. */
function writeUserTurn(file: string): void {
  writeFileSync(
    file,
    `${JSON.stringify({ type: "message", timestamp: T, message: { role: "user", content: "go" } })}\n`,
  );
}

function handoff(
  store: ManifestStore,
  branch: string,
  parent: { sessionFile: string; sessionId: string },
  child: { sessionFile?: string; pid?: number },
) {
  return storeRunningHandoff(store, { branch, at: T, parent, child, worktreeRoot: dir });
}

describe("ownHandoffStatuses", () => {
  it("with the watch's kept tails: a changed session is read again, a leased child's pid is not described", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent-kept"));
    const me = { sessionFile: join(dir, "me-kept.jsonl"), sessionId: "me-kept" };
    const childFile = join(dir, "kept.jsonl");
    writeUserTurn(childFile);
    const child = await handoff(store, "kept/child", me, { sessionFile: childFile, pid: 4243 });
    const described: number[] = [];
    const deps = {
      store,
      now: () => new Date(),
      tails: new CountingTails(),
      readLease: async () => ({ state: "live" as const, pid: 4243, heartbeatAt: T }),
      describeProcess: async (pid: number) => {
        described.push(pid);
        return undefined;
      },
    };
    expect((await ownHandoffStatuses(deps, me)).map((own) => own.status.state)).toEqual(["working"]);
    // The watch reads through its kept tails, not past them.
    expect(deps.tails.files).toEqual([childFile]);
    appendFileSync(
      childFile,
      `${JSON.stringify({ type: "message", timestamp: T, message: { role: "assistant", stopReason: "stop", content: [] } })}\n`,
    );
    expect((await ownHandoffStatuses(deps, me)).map((own) => own.status.state)).toEqual(["idle"]);
    // The lease answered for the child: its pid was never described.
    expect(described).toEqual([]);
    // Without a live lease the recorded pid is what tells.
    const unleased = await ownHandoffStatuses({ ...deps, readLease: async () => ({ state: "none" as const }) }, me);
    expect(unleased.map((own) => own.status.state)).toEqual(["exited"]);
    expect(described).toEqual([4243]);
    // Removed: its tail is no longer kept (read again, as a new object, once asked for).
    const kept = await deps.tails.read(childFile);
    expect(await deps.tails.read(childFile)).toBe(kept);
    await store.transition(child.id, "removed");
    await ownHandoffStatuses(deps, me);
    expect(await deps.tails.read(childFile)).not.toBe(kept);
  });

  it("lists this session's handoffs only, with each child's state, and drops long-removed ones", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent"));
    const me = { sessionFile: join(dir, "me.jsonl"), sessionId: "me" };
    const busyFile = join(dir, "busy.jsonl");
    writeUserTurn(busyFile);
    const busy = await handoff(store, "own/busy", me, { sessionFile: busyFile, pid: 4242 });
    await handoff(store, "own/by-id", { sessionFile: "/elsewhere/moved.jsonl", sessionId: "me" }, {});
    await handoff(store, "other/parent", { sessionFile: join(dir, "other.jsonl"), sessionId: "other" }, {});
    const gone = await handoff(store, "own/gone", me, {});
    await store.transition(gone.id, "removed");

    const livePi = async (pid: number) => (pid === 4242 ? { pid, name: "pi", handoffId: busy.id } : undefined);
    const at = (ms: number) => () => new Date(Date.now() + ms);
    const soon = await ownHandoffStatuses({ store, now: at(0), describeProcess: livePi }, me);
    expect(soon.map((own) => [own.branch, own.status.state])).toEqual([
      ["own/busy", "working"],
      ["own/by-id", "exited"],
      ["own/gone", "removed"],
    ]);
    expect(soon[0]?.status).toEqual({ state: "working", since: T, basis: "a prompt is being answered" });
    const later = await ownHandoffStatuses({ store, now: at(RETIRED_SHOWN_MS + 60_000), describeProcess: livePi }, me);
    expect(later.map((own) => own.branch)).toEqual(["own/busy", "own/by-id"]);
    // A pid that is alive but not this handoff's Pi does not make the child live.
    const stranger = await ownHandoffStatuses(
      { store, now: at(0), describeProcess: async (pid) => ({ pid, name: "pi", handoffId: "someone-else" }) },
      me,
    );
    expect(stranger[0]?.status.state).toBe("exited");
    // The child's live lease on its session makes it live, whatever the recorded pid says.
    const leased = await ownHandoffStatuses(
      {
        store,
        now: at(0),
        describeProcess: async () => undefined,
        readLease: async (file) => (file === busyFile ? { state: "live", pid: 1, heartbeatAt: T } : { state: "none" }),
      },
      me,
    );
    expect(leased.map((own) => own.status.state)).toEqual(["working", "exited", "removed"]);
    const unleased = await ownHandoffStatuses(
      {
        store,
        now: at(0),
        describeProcess: async () => undefined,
        readLease: async () => ({ state: "stale", pid: 1, heartbeatAt: T }),
      },
      me,
    );
    expect(unleased[0]?.status.state).toBe("exited");
    // Other sessions' manifests are remembered and not read again.
    const foreign = new Set<string>();
    await ownHandoffStatuses({ store, now: at(0), describeProcess: livePi }, me, foreign);
    const others = (await store.list())
      .filter((entry) => entry.ok && entry.manifest.branch === "other/parent")
      .map((entry) => entry.id);
    expect([...foreign]).toEqual(others);
    expect((await store.list({ skip: (id) => foreign.has(id) })).map((entry) => entry.id)).not.toContain(others[0]);
    // A removed one no longer shown is still read a while (its last reports), then never again.
    await ownHandoffStatuses({ store, now: at(RETIRED_SHOWN_MS + 60_000), describeProcess: livePi }, me, foreign);
    expect([...foreign].sort()).toEqual([...others].sort());
    await ownHandoffStatuses({ store, now: at(REMOVED_READ_MS + 60_000), describeProcess: livePi }, me, foreign);
    expect([...foreign].sort()).toEqual([...others, gone.id].sort());
  });

  it("renders a compact widget: what needs the person first, then live ones, a few, and a sum of the rest that /handoffs lists", () => {
    const now = Date.parse(T) + 125_000;
    const row = (name: string, state: ChildState, extra: { tool?: string; exitCode?: number } = {}) => ({
      id: name,
      branch: `feat/${name}`,
      status: { state, since: T, ...extra },
    });
    expect(formatChildrenWidget([row("a", "idle"), row("b", "idle")], now)).toEqual([
      "handoff feat/a  idle 2m",
      "handoff feat/b  idle 2m",
    ]);
    expect(
      formatChildrenWidget(
        [
          row("gone", "removed"),
          row("old", "exited", { exitCode: 1 }),
          row("done", "landed"),
          row("a", "working", { tool: "bash" }),
          row("b", "starting"),
          row("c", "compacting"),
          row("d", "waiting_input"),
          row("e", "idle"),
        ],
        now,
      ),
    ).toEqual([
      // Waiting for input and failed first (widget-rows.ts), then live ones (all changed at once).
      "handoff feat/d    waiting for input 2m",
      "handoff feat/old  exited 2m (code 1)",
      "handoff feat/a    working 2m (bash)",
      "handoff feat/b    starting 2m",
      // c, e and done are listed by /handoffs; the removed one is not, and is not counted.
      "handoffs: 3 more (/handoffs lists them)",
    ]);
    expect(formatChildrenWidget([row("a", "idle"), row("old", "exited", { exitCode: 143 })], now)).toEqual([
      "handoff feat/old  exited 2m (code 143)",
      "handoff feat/a    idle 2m",
    ]);
  });

  it("starting while the launch's process lives, landed and removed ones only for a short while", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent-short"));
    const me = { sessionFile: join(dir, "me-short.jsonl"), sessionId: "me-short" };
    const launching = await handoff(store, "own/launching", me, {});
    await store.transition(launching.id, "launching", (m) => {
      m.owner = { pid: 777 };
    });
    const landedFile = join(dir, "landed.jsonl");
    writeFileSync(landedFile, "");
    const landed = await handoff(store, "own/landed", me, { sessionFile: landedFile });
    const landedAt = new Date().toISOString();
    await store.update(landed.id, (m) => {
      m.landings = [
        {
          state: "landed",
          at: landedAt,
          settledAt: landedAt,
          into: "main",
          strategy: "ff",
          from: "a".repeat(40),
          to: "b".repeat(40),
          branchTip: "b".repeat(40),
          commits: [{ sha: "b".repeat(40), subject: "x" }],
        },
      ];
    });
    const owners: number[] = [];
    const deps = (ms: number, ownerLives: boolean) => ({
      store,
      now: () => new Date(Date.now() + ms),
      describeProcess: async () => undefined,
      ownerAlive: async (owner: { pid: number }) => {
        owners.push(owner.pid);
        return ownerLives;
      },
    });
    const soon = await ownHandoffStatuses(deps(0, true), me);
    // (Both made in the same second: the store's order between them is its ids' random part.)
    expect(soon.map((own) => [own.branch, own.status.state, own.status.basis]).sort()).toEqual([
      ["own/landed", "landed", "landed into main"],
      ["own/launching", "starting", "its launch is under way"],
    ]);
    expect(owners).toEqual([777]);
    // The launch's process died: no start; a while after the landing it is no longer shown.
    const later = await ownHandoffStatuses(deps(RETIRED_SHOWN_MS + 1_000, false), me);
    expect(later.map((own) => [own.branch, own.status.state])).toEqual([["own/launching", "exited"]]);
  });

  it("HandoffWatch: a change while a read runs is read after it, and the watch keeps going after (no pass left hanging)", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent-watch"));
    const me = { sessionFile: join(dir, "me-watch.jsonl"), sessionId: "me-watch" };
    const childFile = join(dir, "watched-child.jsonl");
    writeFileSync(childFile, "");
    await handoff(store, "own/watched", me, { sessionFile: childFile, pid: 4343 });
    let said: PublishedState = "idle";
    let seq = 0;
    let begun = 0;
    let hold: Promise<void> | undefined;
    const events: ((name: string | undefined) => void)[] = [];
    const shown: string[] = [];
    const watch = new HandoffWatch({
      deps: {
        store,
        now: () => new Date(),
        agentDir: join(dir, "agent-watch"),
        readLease: async () => ({ state: "live", pid: 4343, heartbeatAt: T }),
        readChildState: async (file) => {
          begun += 1;
          await hold;
          seq += 1;
          return {
            code: "ok",
            record: {
              version: 1,
              sessionFile: file,
              pid: 4343,
              host: "here",
              state: said,
              since: T,
              seq,
              writtenAt: T,
            },
          };
        },
      },
      parent: me,
      onChange: (own) => shown.push(own.map((handoff) => handoff.status.state).join(",")),
      watchDirectory: (_dir, onChange) => {
        events.push(onChange);
        return { watching: true, close: () => {} };
      },
      livenessMs: 0,
    });
    try {
      expect((await watch.refresh()).map((own) => own.status.state)).toEqual(["idle"]);
      const stateEvents = events[0];
      if (stateEvents === undefined) throw new Error("the state directory is not watched");
      const key = sessionKey(childFile);
      // A change, read slowly; a second change comes while that read runs.
      let release: () => void = () => {};
      hold = new Promise<void>((resolve) => (release = resolve));
      said = "working";
      stateEvents(key);
      await waitFor(() => (begun > 1 ? true : undefined), {
        timeoutMs: 20_000,
        description: "the first read to start",
      });
      said = "waiting_input";
      stateEvents(key);
      release();
      hold = undefined;
      await waitFor(() => (shown.at(-1) === "waiting_input" ? true : undefined), {
        timeoutMs: 20_000,
        description: "the second change",
      });
      // Long after that pass: another change is still read.
      await new Promise((resolve) => setTimeout(resolve, 100));
      said = "compacting";
      stateEvents(key);
      await waitFor(() => (shown.at(-1) === "compacting" ? true : undefined), {
        timeoutMs: 20_000,
        description: "a later change",
      });
      // A file no child is known by reads nothing.
      const reads = seq;
      stateEvents("0123456789abcdef.json");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(seq).toBe(reads);
    } finally {
      watch.stop();
    }
  });

  it("HandoffWatch: follows a Pi that says it went on with another session while it still holds the old lease", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent-moved"));
    const me = { sessionFile: join(dir, "me-moved.jsonl"), sessionId: "me-moved" };
    const oldFile = join(dir, "moved-old.jsonl");
    const newFile = join(dir, "moved-new.jsonl");
    writeFileSync(oldFile, "");
    const moved = await handoff(store, "own/moved", me, { sessionFile: oldFile, pid: 4545 });
    // The new session: no lease and no word yet, until the test says so.
    let newSpoke = false;
    const record = (file: string, state: PublishedState, extra: object = {}) => ({
      code: "ok" as const,
      record: {
        version: 1 as const,
        sessionFile: file,
        pid: 4545,
        host: "h",
        state,
        since: T,
        seq: 1,
        writtenAt: T,
        ...extra,
      },
    });
    const events: ((name: string | undefined) => void)[] = [];
    const shown: string[] = [];
    const watch = new HandoffWatch({
      deps: {
        store,
        now: () => new Date(),
        agentDir: join(dir, "agent-moved"),
        // The old session's lease is still held: the word "moved" comes before its release.
        readLease: async (file) =>
          file === oldFile || newSpoke ? { state: "live", pid: 4545, heartbeatAt: T } : { state: "none" },
        readChildState: async (file) =>
          file === oldFile
            ? record(file, "moved", { movedTo: newFile })
            : newSpoke
              ? record(file, "working")
              : { code: "none" },
        // Its recorded pid is still its Pi (the same process, on its new session).
        describeProcess: async (pid) => ({ pid, name: "pi", handoffId: moved.id }),
      },
      parent: me,
      onChange: (own) => shown.push(own.map((handoff) => `${handoff.status.state} ${handoff.status.basis}`).join(",")),
      watchDirectory: (_dir, onChange) => {
        events.push(onChange);
        return { watching: true, close: () => {} };
      },
      livenessMs: 0,
    });
    try {
      const first = await watch.refresh();
      expect(first[0]?.status.state).toBe("idle");
      newSpoke = true;
      events[0]?.(sessionKey(newFile));
      await waitFor(() => (shown.at(-1)?.startsWith("working") === true ? true : undefined), {
        timeoutMs: 20_000,
        description: "the change on the new session",
      });
      expect(shown.at(-1)).toBe(`working its Pi says it is in a turn (on ${newFile}, where it went on)`);
    } finally {
      watch.stop();
    }
  });

  it("marks a child its target moved past or that would conflict, from the forecast port, for live handoffs only", async () => {
    const store = ManifestStore.forAgentDir(join(dir, "agent-forecast"));
    const me = { sessionFile: join(dir, "me-forecast.jsonl"), sessionId: "me-forecast" };
    const behind = await handoff(store, "own/behind", me, {});
    const clean = await handoff(store, "own/clean", me, {});
    const gone = await handoff(store, "own/gone", me, {});
    await store.transition(gone.id, "removed");
    const asked: string[][] = [];
    const own = await ownHandoffStatuses(
      {
        store,
        now: () => new Date(),
        forecast: async (manifests) => {
          asked.push(manifests.map((manifest) => manifest.branch));
          return {
            problems: [],
            entries: [
              {
                code: "to-land",
                id: behind.id,
                branch: "own/behind",
                target: "main",
                behind: 3,
                conflicts: ["a.txt", "b.txt"],
                siblings: [{ id: clean.id, branch: "own/clean", conflicts: ["c.txt"] }],
              },
              {
                code: "to-land",
                id: clean.id,
                branch: "own/clean",
                target: "main",
                behind: 0,
                conflicts: [],
                siblings: [],
              },
            ],
          };
        },
      },
      me,
    );
    expect(asked).toEqual([["own/behind", "own/clean"]]);
    expect(own.map((child) => [child.branch, child.forecast])).toEqual([
      ["own/behind", "behind 3, conflicts 2, clashes with own/clean"],
      ["own/clean", undefined],
      ["own/gone", undefined],
    ]);
    expect(formatChildrenWidget(own.slice(0, 1), Date.now())[0]).toMatch(
      /^handoff own\/behind  exited( \S+)?  \(behind 3, conflicts 2, clashes with own\/clean\)$/,
    );
  });
});

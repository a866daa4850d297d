/**
 * The parent's view of its own handoffs (src/recovery/watch.ts): only manifests whose parent is
 * this session (by file, or by id), removed ones only for a while, each with its child's state from
 * the session tail and whether the recorded pid is a live `pi` of that handoff.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ManifestStore } from "../../src/manifest/store.ts";
import { formatChildrenWidget } from "../../src/recovery/format.ts";
import { ownHandoffStatuses, REMOVED_SHOWN_MS } from "../../src/recovery/watch.ts";
import { SessionTails } from "../../src/session/tail.ts";
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
  writeFileSync(file, `${JSON.stringify({ type: "message", timestamp: T, message: { role: "user", content: "go" } })}\n`);
}

function handoff(store: ManifestStore, branch: string, parent: { sessionFile: string; sessionId: string }, child: { sessionFile?: string; pid?: number }) {
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
    appendFileSync(childFile, `${JSON.stringify({ type: "message", timestamp: T, message: { role: "assistant", stopReason: "stop", content: [] } })}\n`);
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
    const later = await ownHandoffStatuses({ store, now: at(REMOVED_SHOWN_MS + 60_000), describeProcess: livePi }, me);
    expect(later.map((own) => own.branch)).toEqual(["own/busy", "own/by-id"]);
    // A pid that is alive but not this handoff's Pi does not make the child live.
    const stranger = await ownHandoffStatuses({ store, now: at(0), describeProcess: async (pid) => ({ pid, name: "pi", handoffId: "someone-else" }) }, me);
    expect(stranger[0]?.status.state).toBe("exited");
    // The child's live lease on its session makes it live, whatever the recorded pid says.
    const leased = await ownHandoffStatuses(
      { store, now: at(0), describeProcess: async () => undefined, readLease: async (file) => (file === busyFile ? { state: "live", pid: 1, heartbeatAt: T } : { state: "none" }) },
      me,
    );
    expect(leased.map((own) => own.status.state)).toEqual(["working", "exited", "removed"]);
    const unleased = await ownHandoffStatuses({ store, now: at(0), describeProcess: async () => undefined, readLease: async () => ({ state: "stale", pid: 1, heartbeatAt: T }) }, me);
    expect(unleased[0]?.status.state).toBe("exited");
    // Other sessions' manifests are remembered and not read again.
    const foreign = new Set<string>();
    await ownHandoffStatuses({ store, now: at(0), describeProcess: livePi }, me, foreign);
    const others = (await store.list()).filter((entry) => entry.ok && entry.manifest.branch === "other/parent").map((entry) => entry.id);
    expect([...foreign]).toEqual(others);
    expect((await store.list({ skip: (id) => foreign.has(id) })).map((entry) => entry.id)).not.toContain(others[0]);
    // So are removed ones once they are no longer shown.
    await ownHandoffStatuses({ store, now: at(REMOVED_SHOWN_MS + 60_000), describeProcess: livePi }, me, foreign);
    expect([...foreign].sort()).toEqual([...others, gone.id].sort());
  });

  it("renders a compact widget, the newest few with the time in their state", () => {
    const now = Date.parse(T) + 125_000;
    const rows = ["a", "b", "c", "d", "e"].map((name) => ({ id: name, branch: `feat/${name}`, status: { state: "idle" as const, since: T } }));
    expect(formatChildrenWidget(rows.slice(0, 2), now)).toEqual(["handoff feat/a  idle 2m", "handoff feat/b  idle 2m"]);
    expect(formatChildrenWidget(rows, now)).toEqual([
      "handoffs: 1 more (/handoffs lists them all)",
      "handoff feat/b  idle 2m",
      "handoff feat/c  idle 2m",
      "handoff feat/d  idle 2m",
      "handoff feat/e  idle 2m",
    ]);
  });
});

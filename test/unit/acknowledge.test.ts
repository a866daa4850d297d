import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { acknowledgeHandoff } from "../../src/child/acknowledge.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import type { HandoffState, Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { HandoffDetails } from "../../src/session/handoff-message.ts";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const SESSION = "/sessions/child.jsonl";

let tempRoot: string;
let store: ManifestStore;
let tick: number;
const clock = (): Date => new Date(Date.parse("2025-03-04T05:06:07.000Z") + 1000 * tick++);

beforeEach(async () => {
  tempRoot = await mkdtemp(join(tmpdir(), "acknowledge-"));
  tick = 0;
  store = ManifestStore.forAgentDir(join(tempRoot, "agent"), { now: clock });
});

afterEach(async () => {
  await rm(tempRoot, { recursive: true, force: true });
});

/** A handoff moved along the state machine to `states`' last, its child session written. */
async function handoffAt(states: readonly HandoffState[]): Promise<Manifest> {
  const manifest = newManifest({
    id: store.newId("feature/ack"),
    now: clock(),
    branch: "feature/ack",
    base: { ref: "main", sha: SHA },
    repo: { root: "/repo", commonDir: "/repo/.git" },
    parent: { sessionFile: "/sessions/p.jsonl", sessionId: "p1", leafId: "leaf1", cwd: "/repo" },
    worktree: { path: "/repo-worktrees/feature/ack" },
    mux: { kind: "tmux", socketPath: "/tmp/tmux-test" },
  });
  const created = await store.create(manifest);
  if (!created.ok) throw new Error(created.message);
  let current = created.manifest;
  for (const state of states)
    current = await store.transition(current.id, state, (m) => {
      m.child.sessionFile = SESSION;
    });
  return current;
}

function details(manifest: Manifest): HandoffDetails {
  return {
    handoffId: manifest.id,
    manifestPath: store.pathFor(manifest.id),
    branch: manifest.branch,
    baseRef: "main",
    baseSha: SHA,
    worktreePath: manifest.worktree.path,
    mainCheckout: "/repo",
    parentSessionFile: "/sessions/p.jsonl",
    hasTask: false,
    taskOmittedChars: 0,
    redactions: {},
  };
}

const ack = (manifest: Manifest, pid: number, sessionFile: string | undefined = SESSION) =>
  acknowledgeHandoff({ store, details: details(manifest), sessionFile, pid, now: clock });

describe("the acknowledgement, a transition to running", () => {
  it("moves a launching handoff to running with one history entry naming the pid", async () => {
    const launching = await handoffAt(["provisioned", "forked", "launching"]);
    const outcome = await ack(launching, 4242);
    if (outcome.code !== "acknowledged") throw new Error(outcome.code);
    expect(outcome.manifest.state).toBe("running");
    // The acknowledgement is dated by the child's clock, its history entry by the store's (as every transition).
    expect(outcome.manifest.child).toEqual({
      sessionFile: SESSION,
      pid: 4242,
      ackAt: new Date(Date.parse(outcome.manifest.updatedAt) - 1000).toISOString(),
      confirmedBy: "ack",
    });
    expect(outcome.manifest.history.slice(launching.history.length)).toEqual([
      { state: "running", at: outcome.manifest.updatedAt, note: "acknowledged by pid 4242" },
    ]);
    expect(await store.read(launching.id)).toEqual({ ok: true, manifest: outcome.manifest });
  });

  it("dates the same Pi's acknowledgement anew without a history entry; another pid gets one", async () => {
    const launching = await handoffAt(["provisioned", "forked", "launching"]);
    const first = await ack(launching, 4242);
    if (first.code !== "acknowledged") throw new Error(first.code);
    const again = await ack(launching, 4242);
    if (again.code !== "acknowledged") throw new Error(again.code);
    expect(again.manifest.history).toEqual(first.manifest.history);
    expect(Date.parse(again.manifest.child.ackAt ?? "")).toBeGreaterThan(Date.parse(first.manifest.child.ackAt ?? ""));
    const other = await ack(launching, 5151);
    if (other.code !== "acknowledged") throw new Error(other.code);
    expect(other.manifest.child.pid).toBe(5151);
    expect(other.manifest.history.map((entry) => entry.note ?? entry.state).slice(-2)).toEqual([
      "acknowledged by pid 4242",
      "acknowledged by pid 5151",
    ]);
  });

  it("acknowledges a launch that failed at launch, never a removed handoff or another session", async () => {
    const failed = await handoffAt(["provisioned", "forked", "launching"]);
    await store.transition(failed.id, "failed", (m) => {
      m.error = { step: "launch", message: "no start", at: m.updatedAt };
    });
    const outcome = await ack(failed, 7);
    expect(outcome.code === "acknowledged" && outcome.manifest.state).toBe("running");

    const removed = await handoffAt(["provisioned", "forked", "removed"]);
    expect(await ack(removed, 7)).toEqual({
      code: "not_pending",
      message: `Handoff ${removed.id} is removed; nothing to acknowledge.`,
    });
    expect((await store.read(removed.id)).ok && (await store.read(removed.id))).toEqual({
      ok: true,
      manifest: removed,
    });
    expect(await ack(removed, 7, "/sessions/other.jsonl")).toEqual({
      code: "not_this_session",
      message: `Handoff ${removed.id} belongs to another session file.`,
    });
    const noSession = { store, details: details(removed), sessionFile: undefined, pid: 7, now: clock };
    expect(await acknowledgeHandoff(noSession)).toEqual({ code: "not_a_handoff_child" });
  });
});

/**
 * Recovery against real states on the real zellij: handoffs made by the real transaction (real
 * git, real fork, a zellij session of its own, the stand-in child started by the tab's own
 * launcher), then changed for real and judged by the shared inventory (test/support/recovery-ladder.ts);
 * relaunch into the open tab and into a reopened one; remove and prune closing only the handoff's tab.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { executePrune, planPrune } from "../../src/remove/prune.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import * as ladder from "../support/recovery-ladder.ts";
import {
  createZellijRecoveryRig,
  killAndWait,
  runningManifest,
  type ZellijRecoveryRig,
} from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

let rig: ZellijRecoveryRig;

beforeAll(async () => {
  rig = await createZellijRecoveryRig();
});
afterAll(async () => {
  await rig?.cleanup();
});

function tabOf(manifest: Manifest): ladder.LadderWindow {
  if (manifest.mux.kind !== "zellij" || manifest.mux.tabId === undefined || manifest.mux.paneId === undefined) {
    throw new Error(`expected a zellij tab in ${JSON.stringify(manifest.mux)}`);
  }
  return { id: manifest.mux.tabId, paneId: manifest.mux.paneId };
}

async function tabIds(): Promise<string[]> {
  return [...new Set((await rig.zellij.panes()).map((pane) => String(pane.tab_id)))];
}

const zellij: ladder.LadderBackend = {
  launchedEvidence: ["recorded_pid", "marker", "cwd"],
  openWorkspace: () => ({ code: "open" }),
  window: tabOf,
  describeWindow: (manifest) => `zellij tab ${tabOf(manifest).id} of session tests (pane ${tabOf(manifest).paneId})`,
  closeWindow: async (manifest) => {
    expect((await rig.zellij.zellij(["action", "close-tab-by-id", tabOf(manifest).id])).exitCode).toBe(0);
    await ladder.waitForExit(manifest.child.pid, "the child to die with its tab");
  },
  reusesWindowIds: true,
  openWindowIds: tabIds,
  // zellij's client switches tabs a moment after the action returns: a focus shows within a second or so.
  isFocused: async (window) =>
    waitFor(async () => String(await rig.zellij.focusedTabId()) === window.id, { timeoutMs: 3_000 }).then(
      () => true,
      () => false,
    ),
  // zellij has no such session: the transaction fails before anything is created.
  failBeforeWorktree: (branch) => rig.handoff(branch, { targetSession: "no-such-session" }),
  focusElsewhere: async () => {
    expect((await rig.zellij.zellij(["action", "go-to-tab-by-id", "0"])).exitCode).toBe(0);
    return async () => {};
  },
};

describe("the inventory on real states (zellij)", () => {
  it("follows one handoff through every state a person can leave it in", () => ladder.walkStateLadder(rig, zellij));

  it("names the step of a handoff that failed or was never confirmed", () => ladder.nameFailedSteps(rig, zellij));
});

describe("relaunch on zellij", () => {
  it("refuses while the child lives (by pid), relaunches after it died, typed into the tab's shell", () =>
    ladder.relaunchAfterTheChildDied(rig, zellij));

  it("reopens a closed tab, then launches and confirms there", () => ladder.relaunchIntoAReopenedWindow(rig, zellij));
});

describe("remove and prune on zellij", () => {
  it("refuses uncommitted work, then removes the checkout and closes only the handoff's tab, keeping the branch", async () => {
    const manifest = runningManifest(await rig.handoff("feat/zj-remove", { focus: false }));
    const tab = tabOf(manifest);
    await killAndWait(manifest.child.pid ?? 0);
    writeFileSync(join(manifest.worktree.path, "draft.txt"), "unsaved\n");
    const refused = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: false, deleteBranch: false });
    expect(refused).toMatchObject({ code: "refused" });
    expect(existsSync(join(manifest.worktree.path, "draft.txt"))).toBe(true);
    expect(await tabIds()).toContain(tab.id);

    rmSync(join(manifest.worktree.path, "draft.txt"));
    const others = (await tabIds()).filter((id) => id !== tab.id);
    const removed = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: false, deleteBranch: false });
    expect(removed.code, removed.message).toBe("removed");
    expect(existsSync(manifest.worktree.path)).toBe(false);
    expect(rig.repo.run(["rev-parse", "--verify", "refs/heads/feat/zj-remove"])).toMatch(/^[0-9a-f]{40}$/);
    await waitFor(async () => !(await tabIds()).includes(tab.id), { description: "the handoff's tab to close" });
    expect((await tabIds()).sort()).toEqual(others.sort());
    expect((await rig.read(manifest.id)).state).toBe("removed");
  });

  it("prune retires a handoff whose worktree was deleted, closing its tab (a shell in the deleted directory)", async () => {
    const manifest = runningManifest(await rig.handoff("feat/zj-prune", { focus: false }));
    const tab = tabOf(manifest);
    await killAndWait(manifest.child.pid ?? 0);
    // Its branch is merged (it has no commits of its own); the directory goes by hand.
    rmSync(manifest.worktree.path, { recursive: true, force: true });
    const planned = await planPrune(rig.recoveryDeps());
    const retire = planned.actions.find((action) => action.code === "retire" && action.id === manifest.id);
    expect(retire).toMatchObject({ code: "retire", closesWindow: true });
    const results = await executePrune(rig.recoveryDeps(), planned.actions);
    expect(results.every((result) => result.ok)).toBe(true);
    await waitFor(async () => !(await tabIds()).includes(tab.id), { description: "the pruned handoff's tab to close" });
    expect((await rig.read(manifest.id)).state).toBe("removed");
  });
});

/**
 * A window and a child session that exist but that the manifest does not name (the handoff was
 * killed between creating them and recording them; test/e2e/crash-points.test.ts kills it there
 * for real on tmux). Here the same state is made on both backends (tmux, and the Herdr double) by
 * dropping the recorded ids from a real handoff's manifest, which keeps its intent (the window's
 * name, the session directory): recovery finds both through the intent, shows them as the
 * handoff's, and `remove` closes that window through the backend and records both.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { muxLabel } from "../../src/mux/label.ts";
import { FactGatherer } from "../../src/inventory/gather.ts";
import { inspectHandoff } from "../../src/inventory/inventory.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import { describeRemovalPlan } from "../../src/remove/words.ts";
import {
  createHerdrRecoveryRig,
  createRecoveryRig,
  killAndWait,
  runningManifest,
  type HerdrRecoveryRig,
  type RecoveryRig,
  type RecoveryRigBase,
} from "../support/recovery-rig.ts";

let tmuxRig: RecoveryRig;
let herdrRig: HerdrRecoveryRig;

beforeAll(async () => {
  [tmuxRig, herdrRig] = await Promise.all([createRecoveryRig(), createHerdrRecoveryRig()]);
});
afterAll(async () => {
  await Promise.all([tmuxRig?.cleanup(), herdrRig?.cleanup()]);
});

/**
 * The manifest as a failure inside the worktree step leaves it (the step where a window can be
 * made but not recorded), with the window's and the session's ids gone: intent only.
 */
async function forgetWindowAndSession(rig: RecoveryRigBase, manifest: Manifest): Promise<Manifest> {
  return rig.store.transition(manifest.id, "failed", (m) => {
    m.error = { step: "worktree", message: "killed inside the worktree step (test)", at: new Date().toISOString() };
    // Only what the server location records survives (what `serverLocation()` wrote first).
    m.mux =
      m.mux.kind === "zellij"
        ? {
            kind: "zellij",
            ...(m.mux.socketDir === undefined ? {} : { socketDir: m.mux.socketDir }),
            ...(m.mux.sessionName === undefined ? {} : { sessionName: m.mux.sessionName }),
          }
        : { kind: m.mux.kind, ...(m.mux.socketPath === undefined ? {} : { socketPath: m.mux.socketPath }) };
    delete m.child.sessionFile;
    delete m.child.sessionId;
  });
}

describe.each(["tmux", "herdr"] as const)("on %s: what a killed step left unrecorded", (backend) => {
  const rig = (): RecoveryRigBase => (backend === "tmux" ? tmuxRig : herdrRig);

  it("is found through the intent, shown as the handoff's, and closed and recorded by remove", async () => {
    const handedOff = runningManifest(await rig().handoff(`unrecorded/${backend}`));
    await killAndWait(handedOff.child.pid ?? 0);
    expect(handedOff.intent).toEqual({
      windowLabel: muxLabel(`unrecorded/${backend}`),
      sessionDir: expect.any(String),
    });
    const forgotten = await forgetWindowAndSession(rig(), handedOff);
    expect(forgotten.child.sessionFile).toBeUndefined();

    const inspected = await inspectHandoff(rig().recoveryDeps(), handedOff.id);
    if (inspected.code !== "found") throw new Error(inspected.message);
    const { report } = inspected;
    expect(report.unrecorded).toEqual(["window", "session"]);
    expect(report.mux).toEqual(handedOff.mux);
    expect(report.workspace).toEqual({ code: "open" });
    expect(report.childSessionFile).toBe(handedOff.child.sessionFile);
    expect(report.childSessionExists).toBe(true);
    expect(report.problems).toEqual([]);

    const removed = await removeHandoff(
      rig().recoveryDeps(),
      handedOff.id,
      { force: false, deleteBranch: false },
      (plan) => {
        const lines = describeRemovalPlan(plan);
        expect(lines.some((line) => line.includes("was made but never recorded"))).toBe(true);
        expect(lines).toContain(
          `Its child session ${handedOff.child.sessionFile} was written but never recorded (the handoff was killed first); it is kept and recorded.`,
        );
      },
    );
    expect(removed.code, removed.message).toBe("removed");
    const record = await rig().read(handedOff.id);
    expect(record.state).toBe("removed");
    expect(record.mux).toEqual(handedOff.mux);
    expect(record.child.sessionFile).toBe(handedOff.child.sessionFile);
    // The window went with the worktree (through the backend); the session is kept.
    const mux = rig().recoveryDeps().muxFor(handedOff.mux);
    if (!mux.ok) throw new Error(mux.message);
    expect(await mux.mux.workspaceState(handedOff.mux)).toEqual({ code: "closed" });
    expect(existsSync(handedOff.worktree.path)).toBe(false);
    expect(existsSync(handedOff.child.sessionFile ?? "")).toBe(true);
  });

  it("takes no older handoff's session and no other window: nothing is unrecorded when nothing matches", async () => {
    const handedOff = runningManifest(await rig().handoff(`unrecorded/none-${backend}`));
    await killAndWait(handedOff.child.pid ?? 0);
    // Another name, and a start after the session was written: neither the window nor the session is this handoff's.
    await rig().store.update(handedOff.id, (m) => {
      m.intent = {
        windowLabel: "someone-else",
        ...(m.intent?.sessionDir === undefined ? {} : { sessionDir: m.intent.sessionDir }),
      };
    });
    await forgetWindowAndSession(rig(), handedOff);
    // createdAt cannot change through the store: judge the manifest as if the handoff began later.
    const later = new Date(Date.now() + 60_000).toISOString();
    const facts = await new FactGatherer(rig().recoveryDeps()).gather({
      ...(await rig().read(handedOff.id)),
      createdAt: later,
    });
    expect(facts.unrecorded).toBeUndefined();
    expect(facts.workspace).toEqual({ code: "none" });
    expect(facts.childSessionExists).toBe(false);
  });
});

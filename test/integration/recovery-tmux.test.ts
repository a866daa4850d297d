/**
 * Recovery against real states on tmux: handoffs made by the real transaction (real git, real
 * fork, a private tmux server, the stand-in child started by the real launch command), then
 * changed for real (child killed, window closed, files dirtied, commits made and merged, worktree
 * deleted), and judged by the shared inventory; relaunch refusing and succeeding for real. The
 * ladder every backend shares is test/support/recovery-ladder.ts; what is tmux's own is here.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionLease } from "../../src/child/lease.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { muxForLocation } from "../../src/mux/registry.ts";
import { relaunchHandoff } from "../../src/relaunch/relaunch.ts";
import { formatReport } from "../../src/inventory/format.ts";
import { planRemoval } from "../../src/remove/plan.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import { describeRemovalPlan } from "../../src/remove/words.ts";
import { NODE_BIN } from "../support/pi.ts";
import * as ladder from "../support/recovery-ladder.ts";
import {
  createRecoveryRig,
  killAndWait,
  runningManifest,
  STAND_IN_PI,
  type RecoveryRig,
} from "../support/recovery-rig.ts";
import { paneEnv, waitFor } from "../support/tmux.ts";
import { PROJECT_ROOT } from "../support/pi.ts";

let rig: RecoveryRig;

beforeAll(async () => {
  rig = await createRecoveryRig();
});
afterAll(async () => {
  await rig?.cleanup();
});

function tmuxLocation(manifest: Manifest): ladder.LadderWindow {
  if (manifest.mux.kind !== "tmux" || manifest.mux.windowId === undefined || manifest.mux.paneId === undefined) {
    throw new Error(`expected a tmux window in ${JSON.stringify(manifest.mux)}`);
  }
  return { id: manifest.mux.windowId, paneId: manifest.mux.paneId };
}

async function windowIds(): Promise<string[]> {
  return (await rig.tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"])).split("\n").filter(Boolean);
}

const tmux: ladder.LadderBackend = {
  launchedEvidence: ["recorded_pid", "marker", "cwd"],
  openWorkspace: () => ({ code: "open" }),
  window: tmuxLocation,
  describeWindow: (manifest) => `tmux window ${tmuxLocation(manifest).id} (pane ${tmuxLocation(manifest).paneId})`,
  closeWindow: async (manifest) => {
    await rig.tmux.tmux(["kill-window", "-t", tmuxLocation(manifest).id]);
    await ladder.waitForExit(manifest.child.pid, "the child to die with its window");
  },
  openWindowIds: windowIds,
  isFocused: async (window) =>
    (await rig.tmux.tmux(["display-message", "-p", "-t", window.id, "#{window_active}"])).trim() === "1",
  // tmux has no such session: the transaction fails before anything is created.
  failBeforeWorktree: (branch) => rig.handoff(branch, { targetSession: "$999" }),
  focusElsewhere: async () => {
    await rig.tmux.tmux(["select-window", "-t", rig.tmux.firstPaneId]);
    return async () => {};
  },
  beforeRelaunch: async (manifest) => {
    // The recorded command names a Pi that no longer exists: relaunch must not replay it.
    await rig.store.update(manifest.id, (m) => {
      m.child.command = "cd /gone && env /gone/node /gone/pi --session /gone.jsonl";
    });
  },
  checkRelaunched: async (manifest, after) => {
    // The window's launcher gave the pane back to the shell when the first Pi died: the short
    // line was typed there once, and its params hold the command rebuilt for this environment.
    const launcherFile = rig.store.pathFor(manifest.id).replace(/\.json$/, ".launch.sh");
    expect(after.child.command).toBe(`sh ${launcherFile}`);
    expect(after.launch).toMatchObject({ launcherFile, typed: 1 });
    const params = readFileSync(launcherFile.replace(/\.sh$/, ".params"), "utf8");
    expect(params).toContain(`launch_cwd=${after.worktree.path}\n`);
    expect(params).toContain(
      `launch_exec_pi() { exec env PI_CODING_AGENT_DIR=${rig.agentDir} PI_HANDOFF_ID=${manifest.id} ${NODE_BIN} ${STAND_IN_PI} --session ${after.child.sessionFile}`,
    );
    expect(params).toContain("--model faux/faux-1 --thinking medium");
  },
  checkReopened: async (_manifest, after) => {
    // The new child is the reopened pane's own process.
    const pid = after.child.pid ?? 0;
    const panePid = Number(
      (await rig.tmux.tmux(["display-message", "-p", "-t", tmuxLocation(after).paneId, "#{pane_pid}"])).trim(),
    );
    expect(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1]).toBe(String(panePid));
  },
};

describe("the inventory on real states (tmux)", () => {
  it("follows one handoff through every state a person can leave it in", () => ladder.walkStateLadder(rig, tmux));

  it("calls a checkout that is no longer the branch's worktree an orphaned checkout", async () => {
    const manifest = runningManifest(await rig.handoff("feat/orphan"));
    await killAndWait(manifest.child.pid ?? 0);
    rig.repo.run(["checkout", "-q", "-b", "side"], { cwd: manifest.worktree.path });
    let report = await ladder.judge(rig.recoveryDeps(), manifest.id);
    expect(report.status).toEqual({
      code: "orphaned_checkout",
      reason: "it has branch side checked out, not feat/orphan",
    });
    expect(report.actions).not.toContain("relaunch");

    // git forgets the worktree altogether (its admin dir is gone), the directory stays.
    const adminDir = rig.repo.run(["rev-parse", "--git-dir"], { cwd: manifest.worktree.path });
    rmSync(adminDir, { recursive: true, force: true });
    report = await ladder.judge(rig.recoveryDeps(), manifest.id);
    expect(report.status).toEqual({
      code: "orphaned_checkout",
      reason: "git does not list it as a worktree of the repository",
    });
  });

  it("names the step of a handoff that failed or was never confirmed", () => ladder.nameFailedSteps(rig, tmux));
});

describe("relaunch on tmux", () => {
  it("refuses while the child lives (by pid), relaunches after it died with a rebuilt command", () =>
    ladder.relaunchAfterTheChildDied(rig, tmux));

  it("refuses while a Pi without the marker runs in the worktree (as Herdr restarts it)", async () => {
    const manifest = runningManifest(await rig.handoff("feat/restarted"));
    await killAndWait(manifest.child.pid ?? 0);
    const restarted = spawn(NODE_BIN, ["-e", 'process.title = "pi"; setInterval(() => {}, 60000);'], {
      cwd: manifest.worktree.path,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      stdio: "ignore",
    });
    try {
      const pid = restarted.pid ?? 0;
      await waitFor(() => ladder.piProcessesIn(manifest.worktree.path).includes(pid), {
        description: "the restarted pi",
      });
      const report = await ladder.judge(rig.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({ code: "child_running", writers: [{ pid, evidence: ["cwd"] }] });
      const refused = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
      expect(refused).toMatchObject({ code: "refused", reason: "child_running" });
      expect(refused.message).toContain(`(pid ${pid})`);
      expect((await rig.read(manifest.id)).state).toBe("running");
    } finally {
      await killAndWait(restarted.pid ?? 0);
    }
  });

  it("re-reads the session lease right before typing: a Pi that leased the session meanwhile stops the relaunch", async () => {
    const manifest = runningManifest(await rig.handoff("feat/late-writer"));
    await killAndWait(manifest.child.pid ?? 0);
    const manifestPath = rig.store.pathFor(manifest.id);
    const before = readFileSync(manifestPath, "utf8");
    // The window's launcher hands the pane to its shell once the child is gone: wait for its prompt.
    const paneId = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
    const paneBefore = await waitFor(
      async () => {
        const screen = await rig.tmux.capturePane(paneId);
        return /[#$] *\n*$/.test(screen) ? screen : undefined;
      },
      { timeoutMs: 15_000, description: "the shell's prompt in the child's pane" },
    );
    // The inventory sees no lease; by the time the launch would type, a Pi (pid 4242) holds it.
    const answers: SessionLease[] = [
      { state: "none" },
      { state: "live", pid: 4242, heartbeatAt: new Date().toISOString() },
    ];
    const readLease = async (): Promise<SessionLease> => answers.shift() ?? { state: "none" };
    const refused = await relaunchHandoff({ ...rig.relaunchDeps(), readLease }, manifest.id, { focus: false });
    expect(refused).toEqual({
      code: "refused",
      reason: "child_running",
      message: `Handoff ${manifest.id} was not relaunched: a Pi (pid 4242) started on its session meanwhile.`,
    });
    expect(answers).toEqual([]);
    expect(readFileSync(manifestPath, "utf8")).toBe(before);
    expect(await rig.tmux.capturePane(paneId)).toBe(paneBefore);
  });

  it("a launcher it cannot write is launcher_not_written: nothing typed, the handoff unchanged", async () => {
    const manifest = runningManifest(await rig.handoff("feat/no-launcher"));
    await killAndWait(manifest.child.pid ?? 0);
    const manifestPath = rig.store.pathFor(manifest.id);
    const paneId = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
    const paneBefore = await waitFor(
      async () => {
        const screen = await rig.tmux.capturePane(paneId);
        return /[#$] *\n*$/.test(screen) ? screen : undefined;
      },
      { timeoutMs: 15_000, description: "the shell's prompt in the child's pane" },
    );
    const before = readFileSync(manifestPath, "utf8");
    // Something in the way of the launcher file: a directory that cannot be replaced.
    const script = manifestPath.replace(/\.json$/, ".launch.sh");
    rmSync(script, { force: true });
    mkdirSync(join(script, "in-the-way"), { recursive: true });
    try {
      const failed = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
      expect(failed).toMatchObject({ code: "failed", reason: "launcher_not_written" });
      expect(failed.message.startsWith(`Could not write the launcher ${script}: `), failed.message).toBe(true);
      expect(failed.message.endsWith(` Nothing was typed; handoff ${manifest.id} is unchanged.`), failed.message).toBe(
        true,
      );
      expect(readFileSync(manifestPath, "utf8")).toBe(before);
      expect(await rig.tmux.capturePane(paneId)).toBe(paneBefore);
    } finally {
      rmSync(script, { recursive: true, force: true });
    }
  });

  it("refuses, with the reason, when it cannot be checked whether a Pi writes the session", async () => {
    const manifest = runningManifest(await rig.handoff("feat/unknown-writer"));
    await killAndWait(manifest.child.pid ?? 0);
    const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const unreadable = "The session lease /x/leases/y.json is not valid JSON.";
    const noLease = await relaunchHandoff(
      { ...rig.relaunchDeps(), readLease: async () => ({ state: "unreadable", message: unreadable }) },
      manifest.id,
      { focus: false },
    );
    expect(noLease).toEqual({
      code: "refused",
      reason: "writer_unknown",
      message: `Handoff ${manifest.id} was not relaunched because it could not be checked whether a Pi still writes its session: The session lease /x/leases/y.json is not valid JSON.`,
    });
    const problem = "Running processes could not be looked for: ps did not answer within 5 s.";
    const noTable = await relaunchHandoff(
      { ...rig.relaunchDeps(), scanProcesses: async () => ({ piProcesses: [], problem }) },
      manifest.id,
      { focus: false },
    );
    expect(noTable).toMatchObject({ code: "refused", reason: "writer_unknown" });
    expect(noTable.message).toBe(
      `Handoff ${manifest.id} was not relaunched because it could not be checked whether a Pi still writes its session: ${problem}`,
    );
    // Nor is its checkout removed under a Pi no one could see, unless the person says so.
    const blind = { ...rig.recoveryDeps(), scanProcesses: async () => ({ piProcesses: [], problem }) };
    const removal = await removeHandoff(blind, manifest.id, { force: false, deleteBranch: false });
    expect(removal).toMatchObject({ code: "refused", reason: "needs_force" });
    expect(removal.message).toBe(
      `Handoff ${manifest.id} has a session that could not be checked for a running Pi (${problem.slice(0, -1)}); nothing was removed (add --force to remove it anyway: the checkout goes even if a Pi still works in it).`,
    );
    expect(removal.code === "refused" && removal.plan !== undefined ? describeRemovalPlan(removal.plan) : []).toContain(
      `It could not be checked whether a Pi still works in it (${problem.slice(0, -1)}); quit any Pi there first.`,
    );
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);
    expect(existsSync(manifest.worktree.path)).toBe(true);
    const forced = await removeHandoff(blind, manifest.id, { force: true, deleteBranch: false });
    expect(forced.code, forced.message).toBe("removed");
    expect(existsSync(manifest.worktree.path)).toBe(false);
  });

  it("gives back an empty directory claimed for a checkout git never made, closing the window opened in it", async () => {
    // What a kill between addWorktree's claim (mkdir) and git's checkout leaves: the handoff's
    // window open in an empty directory git does not list (decision 0020).
    const manifest = runningManifest(await rig.handoff("feat/claimed"));
    const { id: windowId, paneId } = tmuxLocation(manifest);
    await killAndWait(manifest.child.pid ?? 0);
    rig.repo.run(["worktree", "remove", "--force", manifest.worktree.path]);
    mkdirSync(manifest.worktree.path);
    // A plain shell there (the window's own command would start the launcher again).
    await rig.tmux.tmux(["respawn-pane", "-k", "-c", manifest.worktree.path, "-t", paneId, "exec sh"]);
    await waitFor(
      async () =>
        (await rig.tmux.tmux(["display-message", "-p", "-t", paneId, "#{pane_current_path}"])).trim() ===
        manifest.worktree.path,
      { description: "the pane's shell in the claimed directory" },
    );
    // The manifest as the kill leaves it: still provisioning, the window only named (its intent),
    // the process that ran the handoff dead.
    const windowLabel = (await rig.tmux.tmux(["display-message", "-p", "-t", paneId, "#{window_name}"])).trim();
    const deadOwner = spawnSync("true").pid;
    // Written as the killed process left it (the store only appends to a history).
    const killedAtClaim: Manifest = {
      ...manifest,
      state: "provisioning",
      history: [{ state: "provisioning", at: manifest.createdAt }],
      child: {},
      mux: { kind: "tmux", socketPath: rig.tmux.socketPath, sessionId: rig.tmux.sessionId },
      intent: { windowLabel },
      owner: { pid: deadOwner },
    };
    writeFileSync(rig.store.pathFor(manifest.id), `${JSON.stringify(killedAtClaim, null, 2)}\n`);
    const report = await ladder.judge(rig.recoveryDeps(), manifest.id);
    expect(report.worktree).toEqual({ code: "claimed" });
    expect(formatReport(report)).toContain(
      `worktree:      ${manifest.worktree.path} (never checked out: an empty directory the handoff claimed)`,
    );
    expect(report.status).toEqual({
      code: "unfinished",
      step: "worktree",
      inProgress: false,
      owner: { pid: deadOwner, alive: false },
    });
    expect(report.unrecorded).toEqual(["window"]);
    expect(report.mux).toMatchObject({ windowId, paneId });
    expect(report.actions).not.toContain("prune");

    // A file put there between the plan and the act is someone's: looked at again right before
    // acting, the removal stops before closing anything.
    const note = join(manifest.worktree.path, "notes.txt");
    const stopped = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: true, deleteBranch: false }, () => {
      writeFileSync(note, "mine\n");
    });
    expect(stopped).toMatchObject({
      code: "failed",
      message: `The directory ${manifest.worktree.path} is no longer an empty directory; handoff ${manifest.id} was not removed.`,
    });
    expect(readFileSync(note, "utf8")).toBe("mine\n");
    expect(await windowIds()).toContain(windowId);
    expect((await rig.read(manifest.id)).state).toBe("provisioning");
    rmSync(note);

    const removal = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: false, deleteBranch: false });
    expect(removal.code, removal.message).toBe("removed");
    expect(removal.code === "removed" ? describeRemovalPlan(removal.plan, "will")[0] : "").toBe(
      `The empty directory ${manifest.worktree.path}, claimed for a checkout git never made, will be removed and its window closed.`,
    );
    expect(removal.message).toContain(`removed the empty directory ${manifest.worktree.path}`);
    expect(existsSync(manifest.worktree.path)).toBe(false);
    expect(await windowIds()).not.toContain(windowId);
    expect((await rig.read(manifest.id)).state).toBe("removed");
  });

  it("closes the window a killed handoff left in the directory git took back, and keeps one that moved elsewhere", async () => {
    // What git leaves when it is killed checking out into the claimed directory: it removes that
    // directory again, and the window's shell sits in a deleted directory.
    const manifest = runningManifest(await rig.handoff("feat/taken-back"));
    const { id: windowId, paneId } = tmuxLocation(manifest);
    await killAndWait(manifest.child.pid ?? 0);
    mkdirSync(join(manifest.worktree.path, "sub"));
    await rig.tmux.tmux(["respawn-pane", "-k", "-c", join(manifest.worktree.path, "sub"), "-t", paneId, "exec sh"]);
    rig.repo.run(["worktree", "remove", "--force", manifest.worktree.path]);
    await waitFor(
      async () =>
        (await rig.tmux.tmux(["display-message", "-p", "-t", paneId, "#{pane_current_path}"])).trim() ===
        `${join(manifest.worktree.path, "sub")} (deleted)`,
      { description: "the pane's shell in the deleted directory" },
    );
    const other = runningManifest(await rig.handoff("feat/moved-on"));
    await killAndWait(other.child.pid ?? 0);
    const moved = tmuxLocation(other);
    await rig.tmux.tmux(["respawn-pane", "-k", "-c", rig.repo.dir, "-t", moved.paneId, "exec sh"]);
    rig.repo.run(["worktree", "remove", "--force", other.worktree.path]);

    const dry = await planRemoval(rig.recoveryDeps(), manifest.id, { force: false, deleteBranch: false });
    expect(dry.code === "planned" ? describeRemovalPlan(dry.plan, "would")[0] : dry.message).toBe(
      `The worktree ${manifest.worktree.path} is already gone; its window would be closed if it still shows that directory.`,
    );
    const removal = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: false, deleteBranch: false });
    expect(removal.code, removal.message).toBe("removed");
    expect(removal.message).toContain("closed its window");
    expect(await windowIds()).not.toContain(windowId);

    // A window whose shell went elsewhere is someone's now: it stays, and the removal says so.
    const kept = await removeHandoff(rig.recoveryDeps(), other.id, { force: false, deleteBranch: false });
    expect(kept.code, kept.message).toBe("removed");
    expect(kept.message).toContain(
      `its window (tmux window ${moved.id} (pane ${moved.paneId})) stays open: it no longer shows the worktree`,
    );
    expect(await windowIds()).toContain(moved.id);
  });

  it("refuses a locked worktree before closing its window, even with --force: window, checkout and record stay", async () => {
    const manifest = runningManifest(await rig.handoff("feat/locked"));
    const windowId = manifest.mux.kind === "tmux" ? manifest.mux.windowId : undefined;
    rig.repo.run(["worktree", "lock", "--reason", "on a stick", manifest.worktree.path]);
    try {
      await killAndWait(manifest.child.pid ?? 0);
      const removal = await removeHandoff(rig.recoveryDeps(), manifest.id, { force: true, deleteBranch: false });
      expect(removal.code).not.toBe("removed");
      expect(removal.message).toContain(
        `The worktree at ${manifest.worktree.path} is locked (git worktree lock), so it was not removed and nothing running in it was stopped; unlock it with git worktree unlock ${manifest.worktree.path} first.`,
      );
      expect(await windowIds()).toContain(windowId);
      expect(existsSync(manifest.worktree.path)).toBe(true);
      expect((await rig.read(manifest.id)).state).not.toBe("removed");
    } finally {
      rig.repo.run(["worktree", "unlock", manifest.worktree.path]);
    }
  });

  it("reopens a closed window, then launches and confirms there", () => ladder.relaunchIntoAReopenedWindow(rig, tmux));

  it("reopens in the caller's tmux when the recorded session is gone, and changes nothing when there is none", async () => {
    const otherSession = (
      await rig.tmux.tmux(["new-session", "-d", "-s", "other", "-P", "-F", "#{session_id}"])
    ).trim();
    const manifest = runningManifest(
      await rig.handoff("feat/lost-session", { targetSession: otherSession, focus: false }),
    );
    expect(manifest.mux).toMatchObject({ sessionId: otherSession });
    await rig.tmux.tmux(["kill-session", "-t", otherSession]);
    await ladder.waitForExit(manifest.child.pid, "the child to die with its session");

    // Outside tmux, with the recorded session gone, there is nowhere to open a window.
    const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const nowhere = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
    expect(nowhere).toMatchObject({ code: "failed", reason: "reopen_failed" });
    expect(nowhere.message).toBe(
      `Could not reopen a window for handoff ${manifest.id}: Could not find a tmux session to open the window in (tmux has no session or pane ${otherSession}); run this inside tmux.`,
    );
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);

    // From a pane of the rig's tmux, the window opens in that pane's session.
    const env = { ...rig.env, ...(await paneEnv(rig.tmux)) };
    const relaunched = await relaunchHandoff(
      { ...rig.relaunchDeps(), env, muxFor: (location) => muxForLocation(location, { env, git: rig.git }) },
      manifest.id,
      { focus: false },
    );
    expect(relaunched.code).toBe("running");
    if (relaunched.code !== "running") return;
    expect(relaunched.manifest.mux).toMatchObject({
      kind: "tmux",
      socketPath: rig.tmux.socketPath,
      sessionId: rig.tmux.sessionId,
    });
    await killAndWait(relaunched.manifest.child.pid ?? 0);
  });
});

/** `pi-handoff` as a person runs it in a shell outside tmux (stdout a pipe). */
function cli(
  args: readonly string[],
  env: Record<string, string> = {},
): { status: number; stdout: string; stderr: string } {
  const run = spawnSync(NODE_BIN, [join(PROJECT_ROOT, "bin", "pi-handoff.mjs"), ...args], {
    cwd: rig.repo.root,
    env: { ...rig.env, ...env },
    encoding: "utf8",
    timeout: 120_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

describe("what pi-handoff says before a removal, as a person runs it", () => {
  it("while the child's Pi runs: list offers what works and says remove waits for it; remove --dry-run lists what would be lost with the refusal", async () => {
    const manifest = runningManifest(await rig.handoff("feat/live-remove"));
    const pid = manifest.child.pid ?? 0;
    writeFileSync(join(manifest.worktree.path, "draft.txt"), "draft\n");
    try {
      const listed = cli(["list", "--repo", rig.repo.root]);
      expect(listed.status).toBe(0);
      const row = listed.stdout.split("\n").find((line) => line.startsWith(manifest.id)) ?? "";
      expect(row.endsWith("  focus (quit its Pi to remove)"), row).toBe(true);
      expect(row).not.toMatch(/\bremove,|,remove\b/);

      const dry = cli(["remove", manifest.id, "--dry-run"]);
      expect(dry).toEqual({
        status: 1,
        stdout: [
          `The worktree ${manifest.worktree.path} would be deleted and its window closed.`,
          "Would be lost for good (1 file with uncommitted work):",
          "  untracked  draft.txt",
          "Branch feat/live-remove would be kept.",
          "",
        ].join("\n"),
        stderr: `pi-handoff remove: Dry run: Handoff ${manifest.id} still has a live Pi (pid ${pid}); quit it first, then remove the handoff.\n`,
      });
      // The real run says the same, and removes nothing.
      const real = cli(["remove", manifest.id, "--force"]);
      expect(real).toEqual({
        status: 1,
        stdout: dry.stdout,
        stderr: `pi-handoff remove: Handoff ${manifest.id} still has a live Pi (pid ${pid}); quit it first, then remove the handoff.\n`,
      });
      expect(readFileSync(join(manifest.worktree.path, "draft.txt"), "utf8")).toBe("draft\n");
      const inspected = cli(["inspect", manifest.id]);
      expect(inspected.stdout).toContain(
        `\n  next:          pi-handoff focus ${manifest.id} | quit its Pi first to remove it\n`,
      );
    } finally {
      await killAndWait(pid);
    }
  });

  it("a locked worktree: the dry run refuses with the real run's reason, even with --force", async () => {
    const manifest = runningManifest(await rig.handoff("feat/locked-dry"));
    await killAndWait(manifest.child.pid ?? 0);
    rig.repo.run(["worktree", "lock", "--reason", "on a stick", manifest.worktree.path]);
    try {
      const reason = `The worktree at ${manifest.worktree.path} is locked (git worktree lock), so it was not removed and nothing running in it was stopped; unlock it with git worktree unlock ${manifest.worktree.path} first. Handoff ${manifest.id} was not removed.`;
      const plan = [
        `The worktree ${manifest.worktree.path} would be deleted and its window closed.`,
        "Branch feat/locked-dry would be kept.",
        "",
      ].join("\n");
      for (const force of [[], ["--force"]]) {
        expect(cli(["remove", manifest.id, "--dry-run", ...force])).toEqual({
          status: 1,
          stdout: plan,
          stderr: `pi-handoff remove: Dry run: ${reason}\n`,
        });
      }
      expect(cli(["remove", manifest.id, "--force"])).toEqual({
        status: 1,
        stdout: plan,
        stderr: `pi-handoff remove: ${reason}\n`,
      });
      expect(existsSync(manifest.worktree.path)).toBe(true);
      expect((await rig.read(manifest.id)).state).not.toBe("removed");
    } finally {
      rig.repo.run(["worktree", "unlock", manifest.worktree.path]);
    }
  });
});

describe("pi-handoff list fits the terminal", () => {
  it("cuts its table to COLUMNS, to a real terminal's width, and to nothing in a pipe or in --json", async () => {
    const manifest = runningManifest(await rig.handoff("feat/a-branch-name-long-enough-to-need-cutting"));
    await killAndWait(manifest.child.pid ?? 0);
    const longest = (text: string): number => Math.max(...text.split("\n").map((line) => line.length));

    // A pipe: the whole table, every id whole.
    const piped = cli(["list", "--repo", rig.repo.root]);
    expect(piped.stdout).toContain(`${manifest.id}  `);
    expect(longest(piped.stdout)).toBeGreaterThan(90);

    // COLUMNS is honoured in a pipe too; a cut cell ends in ~, and the id is never cut.
    const cut = cli(["list", "--repo", rig.repo.root], { COLUMNS: "150" });
    expect(cut.status).toBe(0);
    expect(longest(cut.stdout)).toBeLessThanOrEqual(150);
    const row = cut.stdout.split("\n").find((line) => line.startsWith(`${manifest.id}  `)) ?? "";
    // How far the branch is cut depends on the other cells (the child's "exited 2s" or "exited 1m 4s").
    expect(row).toMatch(/  feat\/a-[a-z-]*~  /);
    expect(cut.stdout.split("\n")[0]).toMatch(/^ID +STATUS +CHILD +BRANCH +FLAGS +FORECAST +ACTIONS$/);

    // At 80 columns the id and the actions still come out whole: the row is wider than asked.
    const narrow = cli(["list", "--repo", rig.repo.root], { COLUMNS: "80" });
    const narrowRow = narrow.stdout.split("\n").find((line) => line.startsWith(`${manifest.id}  `)) ?? "";
    expect(narrowRow).toMatch(/  relaunch,focus,remove$/);
    expect(narrow.stdout.split("\n")[0]).toMatch(/^ID +STATUS {4}CHILD {5}BRANCH {4}FLAGS +FORECAST +ACTIONS$/);

    // --json is never cut.
    const json = cli(["list", "--repo", rig.repo.root, "--json"], { COLUMNS: "40" });
    expect(
      JSON.parse(json.stdout).handoffs.map((handoff: { id: string; branch: string }) => [handoff.id, handoff.branch]),
    ).toContainEqual([manifest.id, "feat/a-branch-name-long-enough-to-need-cutting"]);

    // A real terminal 72 columns wide (a tmux pane), no COLUMNS: its width is the one fitted to,
    // and the id comes out whole (the terminal wraps the row).
    // The window is made and sized first, then the list runs in it.
    const paneId = (await rig.tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "cat"])).trim();
    try {
      await rig.tmux.tmux(["resize-window", "-x", "72", "-y", "30", "-t", paneId]);
      await rig.tmux.tmux([
        "respawn-pane",
        "-k",
        "-t",
        paneId,
        ...Object.entries({ ...rig.env, COLUMNS: "" }).flatMap(([name, value]) => ["-e", `${name}=${value}`]),
        "sh",
        "-c",
        'cd "$1" && shift && "$@"; echo "list-exit=$?"; exec cat',
        "sh",
        rig.repo.root,
        NODE_BIN,
        join(PROJECT_ROOT, "bin", "pi-handoff.mjs"),
        "list",
      ]);
      const shown = await waitFor(
        async () => {
          // With the scrollback: the other tests' handoffs make the table taller than the pane.
          const text = await rig.tmux.tmux(["capture-pane", "-p", "-J", "-S", "-", "-t", paneId]);
          return text.includes("list-exit=") ? text : undefined;
        },
        { description: "pi-handoff list in a 72-column pane" },
      );
      expect(shown).toContain("list-exit=0");
      expect(shown).toMatch(/^ID +STATUS {4}CHILD/m);
      expect(shown).toContain(`\n${manifest.id}  `);
    } finally {
      await rig.tmux.tmux(["kill-pane", "-t", paneId]);
    }
  });
});

/**
 * Recovery against real states on tmux: handoffs made by the real transaction (real git, real
 * fork, a private tmux server, the stand-in child started by the real launch command), then
 * changed for real (child killed, window closed, files dirtied, commits made and merged, worktree
 * deleted), and judged by the shared inventory; relaunch refusing and succeeding for real.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, realpathSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionLease } from "../../src/launch/lease.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { muxForLocation } from "../../src/mux/for-location.ts";
import { inspectHandoff } from "../../src/recovery/inventory.ts";
import { HandoffReportSchema, type HandoffReport } from "../../src/recovery/report-schema.ts";
import { relaunchHandoff } from "../../src/recovery/relaunch.ts";
import { NODE_BIN } from "../support/pi.ts";
import { createRecoveryRig, isProcessAlive, killAndWait, runningManifest, STAND_IN_PI, type RecoveryRig } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

let rig: RecoveryRig;

beforeAll(async () => {
  rig = await createRecoveryRig();
});
afterAll(async () => {
  await rig?.cleanup();
});

async function judge(id: string): Promise<HandoffReport> {
  const inspected = await inspectHandoff(rig.recoveryDeps(), id);
  if (inspected.code !== "found") throw new Error(inspected.message);
  return HandoffReportSchema.parse(inspected.report);
}

function tmuxLocation(manifest: Manifest): { windowId: string; paneId: string } {
  if (manifest.mux.kind !== "tmux" || manifest.mux.windowId === undefined || manifest.mux.paneId === undefined) {
    throw new Error(`expected a tmux window in ${JSON.stringify(manifest.mux)}`);
  }
  return { windowId: manifest.mux.windowId, paneId: manifest.mux.paneId };
}

async function windowIds(): Promise<string[]> {
  return (await rig.tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"])).split("\n").filter(Boolean);
}

/** Every live process named `pi` whose cwd is in the worktree (what a second writer would be). */
function piProcessesIn(worktree: string): number[] {
  const pids: number[] = [];
  for (const name of readdirProc()) {
    try {
      if (readFileSync(`/proc/${name}/comm`, "utf8").trim() !== "pi") continue;
      const cwd = realpathSync(readlinkSync(`/proc/${name}/cwd`));
      if (cwd === worktree || cwd.startsWith(`${worktree}/`)) pids.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return pids.sort((a, b) => a - b);
}

function readdirProc(): string[] {
  return readdirSync("/proc").filter((name) => /^\d+$/.test(name));
}

describe("the inventory on real states (tmux)", () => {
  it("follows one handoff through every state a person can leave it in", async () => {
    const manifest = runningManifest(await rig.handoff("feat/states"));
    const worktree = manifest.worktree.path;
    const pid = manifest.child.pid ?? 0;
    const { windowId } = tmuxLocation(manifest);

    let report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "child_running", writers: [{ pid, evidence: ["recorded_pid", "marker", "cwd"] }] });
    expect(report.actions).toEqual(["focus"]);
    expect(report.workspace).toEqual({ code: "open" });
    expect(report.worktree).toEqual({ code: "present" });

    // The child exits: its shell is back in the window.
    await killAndWait(pid);
    report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "no_child" });
    expect(report.actions).toEqual(["relaunch", "focus", "remove"]);
    expect(report.flags).toEqual([]);

    // The window is closed.
    await rig.tmux.tmux(["kill-window", "-t", windowId]);
    report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "workspace_closed" });
    expect(report.workspace).toEqual({ code: "closed" });
    expect(report.actions).toEqual(["relaunch", "remove"]);

    // Uncommitted work.
    writeFileSync(join(worktree, "README.md"), "# changed in the worktree\n");
    writeFileSync(join(worktree, "notes.txt"), "new file\n");
    report = await judge(manifest.id);
    expect(report.flags).toEqual(["dirty", "untracked"]);
    expect(report.changes).toEqual({ dirtyFiles: ["README.md"], untrackedFiles: ["notes.txt"] });

    // Committed, not merged (and there is no remote, so not pushed either).
    rig.repo.run(["add", "-A"], { cwd: worktree });
    rig.repo.run(["commit", "-q", "-m", "work in the worktree"], { cwd: worktree });
    const tip = rig.repo.run(["rev-parse", "HEAD"], { cwd: worktree });
    report = await judge(manifest.id);
    expect(report.flags).toEqual(["unpushed", "unmerged"]);
    expect(report.branchState).toEqual({
      code: "present",
      tip,
      mergeTarget: { ref: "HEAD", sha: manifest.base.sha },
      aheadOfBase: 1,
      unmerged: { total: 1, commits: [{ sha: tip, subject: "work in the worktree" }] },
      unpushed: { total: 1, commits: [{ sha: tip, subject: "work in the worktree" }] },
    });

    // Merged into the base (the main checkout's HEAD).
    rig.repo.run(["merge", "-q", "--ff-only", "feat/states"]);
    report = await judge(manifest.id);
    expect(report.flags).toEqual(["unpushed", "merged"]);
    expect(report.branchState).toMatchObject({ mergeTarget: { ref: "HEAD", sha: tip }, unmerged: { total: 0 } });

    // The worktree directory is deleted: git still lists it, then no longer after a prune.
    rmSync(worktree, { recursive: true, force: true });
    report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "prunable" });
    expect(report.actions).toEqual(["remove", "prune"]);
    rig.repo.run(["worktree", "prune"]);
    report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "worktree_missing" });
    expect(report.actions).toEqual(["remove", "prune"]);
    expect(report.changes).toBeUndefined();
  });

  it("calls a checkout that is no longer the branch's worktree an orphaned checkout", async () => {
    const manifest = runningManifest(await rig.handoff("feat/orphan"));
    await killAndWait(manifest.child.pid ?? 0);
    rig.repo.run(["checkout", "-q", "-b", "side"], { cwd: manifest.worktree.path });
    let report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "orphaned_checkout", reason: "it has branch side checked out, not feat/orphan" });
    expect(report.actions).not.toContain("relaunch");

    // git forgets the worktree altogether (its admin dir is gone), the directory stays.
    const adminDir = rig.repo.run(["rev-parse", "--git-dir"], { cwd: manifest.worktree.path });
    rmSync(adminDir, { recursive: true, force: true });
    report = await judge(manifest.id);
    expect(report.status).toEqual({ code: "orphaned_checkout", reason: "git does not list it as a worktree of the repository" });
  });

  it("names the step of a handoff that failed or was never confirmed", async () => {
    // tmux has no such session: the transaction fails before anything is created.
    const early = await rig.handoff("feat/early", { targetSession: "$999" });
    if (early.code !== "failed") throw new Error(`expected a failure, got ${early.code}`);
    let report = await judge(early.manifest.id);
    expect(report.status).toMatchObject({ code: "failed", step: "worktree", worktreeCreated: false });
    expect(report.worktree).toEqual({ code: "missing" });
    expect(report.workspace).toEqual({ code: "none" });
    expect(report.actions).toEqual(["remove", "prune"]);

    const unconfirmed = await rig.handoff("feat/unconfirmed", { faultAt: "confirm", confirmMs: 300 });
    expect(unconfirmed.code).toBe("launch_unconfirmed");
    if (unconfirmed.code !== "launch_unconfirmed") return;
    report = await judge(unconfirmed.manifest.id);
    expect(report.status).toEqual({
      code: "unconfirmed",
      step: "confirm",
      // The window's launcher ran and started nothing (the fault): said at once, not after the timeout.
      message: "The launcher started, but its Pi exited (or never started) before confirming; the new pane shows why.",
    });
    expect(report.actions).toEqual(["relaunch", "focus", "remove"]);

    const atLaunch = await rig.handoff("feat/at-launch", { faultAt: "launch" });
    if (atLaunch.code !== "failed") throw new Error(`expected a failure, got ${atLaunch.code}`);
    report = await judge(atLaunch.manifest.id);
    expect(report.status).toEqual({
      code: "failed",
      step: "launch",
      message: "Injected fault at the launch step (PI_HANDOFF_FAULT).",
      worktreeCreated: true,
    });
  });
});

describe("relaunch on tmux", () => {
  it("refuses while the child lives (by pid), relaunches after it died with a rebuilt command", async () => {
    const manifest = runningManifest(await rig.handoff("feat/relaunch"));
    const firstPid = manifest.child.pid ?? 0;
    const manifestPath = rig.store.pathFor(manifest.id);
    const before = readFileSync(manifestPath, "utf8");

    const refused = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: true });
    expect(refused).toEqual({
      code: "refused",
      reason: "child_running",
      message: `Handoff ${manifest.id} already has a live Pi on its session (pid ${firstPid}), so no second one was started.`,
    });
    expect(readFileSync(manifestPath, "utf8")).toBe(before);
    expect(piProcessesIn(manifest.worktree.path)).toEqual([firstPid]);

    // The recorded command names a Pi that no longer exists: relaunch must not replay it.
    await rig.store.update(manifest.id, (m) => {
      m.child.command = "cd /gone && env /gone/node /gone/pi --session /gone.jsonl";
    });
    await killAndWait(firstPid);
    // Another window is active now, so the focus is observable.
    await rig.tmux.tmux(["select-window", "-t", rig.tmux.firstPaneId]);

    const relaunched = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: true });
    expect(relaunched.code).toBe("running");
    if (relaunched.code !== "running") return;
    const after = relaunched.manifest;
    const secondPid = after.child.pid ?? 0;
    expect(secondPid).not.toBe(firstPid);
    expect(isProcessAlive(secondPid)).toBe(true);
    expect(piProcessesIn(manifest.worktree.path)).toEqual([secondPid]);
    expect(after.state).toBe("running");
    expect(after.child.confirmedBy).toBe("ack");
    expect(after.history.slice(-3).map((h) => [h.state, h.note])).toEqual([
      ["running", `acknowledged by pid ${firstPid}`],
      ["launching", "relaunched"],
      ["running", `acknowledged by pid ${secondPid}`],
    ]);
    // The window's launcher gave the pane back to the shell when the first Pi died: the short
    // line was typed there once, and its params hold the command rebuilt for this environment.
    const launcherFile = manifestPath.replace(/\.json$/, ".launch.sh");
    expect(after.child.command).toBe(`sh ${launcherFile}`);
    expect(after.launch).toMatchObject({ launcherFile, typed: 1 });
    const params = readFileSync(manifestPath.replace(/\.json$/, ".launch.params"), "utf8");
    expect(params).toContain(`launch_cwd=${after.worktree.path}\n`);
    expect(params).toContain(`launch_exec_pi() { exec env PI_CODING_AGENT_DIR=${rig.agentDir} PI_HANDOFF_ID=${manifest.id} ${NODE_BIN} ${STAND_IN_PI} --session ${after.child.sessionFile}`);
    expect(params).toContain("--model faux/faux-1 --thinking medium");
    expect(after.mux).toEqual(manifest.mux);
    expect(after.focus).toEqual({ at: expect.any(String) });
    expect((await rig.tmux.tmux(["display-message", "-p", "-t", tmuxLocation(after).windowId, "#{window_active}"])).trim()).toBe("1");
    expect(relaunched.message).toBe(
      `Relaunched handoff ${manifest.id}: Pi pid ${secondPid} runs on ${after.child.sessionFile} in tmux window ${tmuxLocation(after).windowId} (pane ${tmuxLocation(after).paneId}).`,
    );
    await killAndWait(secondPid);
  });

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
      await waitFor(() => piProcessesIn(manifest.worktree.path).includes(pid), { description: "the restarted pi" });
      const report = await judge(manifest.id);
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
    const paneBefore = await waitFor(async () => {
      const screen = await rig.tmux.capturePane(paneId);
      return /[#$] *\n*$/.test(screen) ? screen : undefined;
    }, { timeoutMs: 15_000, description: "the shell's prompt in the child's pane" });
    // The inventory sees no lease; by the time the launch would type, a Pi (pid 4242) holds it.
    const answers: SessionLease[] = [{ state: "none" }, { state: "live", pid: 4242, heartbeatAt: new Date().toISOString() }];
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

  it("refuses, with the reason, when it cannot be checked whether a Pi writes the session", async () => {
    const manifest = runningManifest(await rig.handoff("feat/unknown-writer"));
    await killAndWait(manifest.child.pid ?? 0);
    const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const unreadable = "The session lease /x/leases/y.json is not valid JSON.";
    const noLease = await relaunchHandoff({ ...rig.relaunchDeps(), readLease: async () => ({ state: "unreadable", message: unreadable }) }, manifest.id, { focus: false });
    expect(noLease).toEqual({
      code: "refused",
      reason: "writer_unknown",
      message: `Handoff ${manifest.id} was not relaunched because it could not be checked whether a Pi still writes its session: The session lease /x/leases/y.json is not valid JSON.`,
    });
    const problem = "Running processes could not be looked for: ps did not answer within 5000 ms.";
    const noTable = await relaunchHandoff({ ...rig.relaunchDeps(), scanProcesses: async () => ({ piProcesses: [], problem }) }, manifest.id, { focus: false });
    expect(noTable).toMatchObject({ code: "refused", reason: "writer_unknown" });
    expect(noTable.message).toBe(`Handoff ${manifest.id} was not relaunched because it could not be checked whether a Pi still writes its session: ${problem}`);
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);
  });

  it("reopens a closed window, then launches and confirms there", async () => {
    const manifest = runningManifest(await rig.handoff("feat/reopen", { focus: false }));
    const old = tmuxLocation(manifest);
    // Closing the window hangs up the child with it.
    await rig.tmux.tmux(["kill-window", "-t", old.windowId]);
    await waitFor(() => !isProcessAlive(manifest.child.pid ?? 0), { timeoutMs: 10_000, description: "the child to die with its window" });

    const relaunched = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
    expect(relaunched.code).toBe("running");
    if (relaunched.code !== "running") return;
    const reopened = tmuxLocation(relaunched.manifest);
    expect(reopened.windowId).not.toBe(old.windowId);
    expect(await windowIds()).toContain(reopened.windowId);
    expect(await windowIds()).not.toContain(old.windowId);
    expect(relaunched.manifest.history.at(-2)).toMatchObject({
      state: "launching",
      note: `relaunched in a reopened window (tmux window ${reopened.windowId} (pane ${reopened.paneId}))`,
    });
    // The new child runs in the reopened pane, in the worktree.
    const pid = relaunched.manifest.child.pid ?? 0;
    const panePid = Number((await rig.tmux.tmux(["display-message", "-p", "-t", reopened.paneId, "#{pane_pid}"])).trim());
    expect(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1]).toBe(String(panePid));
    expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(manifest.worktree.path);
    expect(relaunched.manifest.focus).toBeUndefined();
    await killAndWait(pid);
  });

  it("reopens in the caller's tmux when the recorded session is gone, and changes nothing when there is none", async () => {
    const otherSession = (await rig.tmux.tmux(["new-session", "-d", "-s", "other", "-P", "-F", "#{session_id}"])).trim();
    const manifest = runningManifest(await rig.handoff("feat/lost-session", { targetSession: otherSession, focus: false }));
    expect(manifest.mux).toMatchObject({ sessionId: otherSession });
    await rig.tmux.tmux(["kill-session", "-t", otherSession]);
    await waitFor(() => !isProcessAlive(manifest.child.pid ?? 0), { timeoutMs: 10_000, description: "the child to die with its session" });

    // Outside tmux, with the recorded session gone, there is nowhere to open a window.
    const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const nowhere = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
    expect(nowhere).toMatchObject({ code: "failed", reason: "reopen_failed" });
    expect(nowhere.message).toBe(
      `Could not reopen a window for handoff ${manifest.id}: Could not find a tmux session to open the window in (tmux has no session or pane ${otherSession}); run this inside tmux.`,
    );
    expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);

    // From a pane of the rig's tmux, the window opens in that pane's session.
    const serverPid = (await rig.tmux.tmux(["display-message", "-p", "#{pid}"])).trim();
    const env = { ...rig.env, TMUX: `${rig.tmux.socketPath},${serverPid},0`, TMUX_PANE: rig.tmux.firstPaneId };
    const relaunched = await relaunchHandoff(
      { ...rig.relaunchDeps(), env, muxFor: (location) => muxForLocation(location, { env, git: rig.git }) },
      manifest.id,
      { focus: false },
    );
    expect(relaunched.code).toBe("running");
    if (relaunched.code !== "running") return;
    expect(relaunched.manifest.mux).toMatchObject({ kind: "tmux", socketPath: rig.tmux.socketPath, sessionId: rig.tmux.sessionId });
    await killAndWait(relaunched.manifest.child.pid ?? 0);
  });
});

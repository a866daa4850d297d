/**
 * The recovery state ladder, written once and run on each backend (recovery-tmux.test.ts,
 * recovery-herdr.test.ts, one file per backend so vitest runs them side by side): one handoff
 * walked through every state a person can leave it in, the steps a handoff can fail or stay
 * unconfirmed at, relaunch after the child died, relaunch into a closed window. Each scenario
 * asserts what holds on every backend; what a backend adds (Herdr's agent view, tmux's launcher
 * params, ...) comes in through its `LadderBackend` hooks, and backend-only cases stay in the files.
 *
 * Invariants:
 * - Scenarios make real handoffs on the rig they are given and change them for real (kill the
 *   child, close the window, dirty, commit, merge, delete); every outcome is asserted exactly.
 * - A scenario leaves no child of its own running (it kills the Pis it relaunched).
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { HandoffOutcome } from "../../src/handoff/transaction.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { inspectHandoff } from "../../src/inventory/inventory.ts";
import { HandoffReportSchema, type HandoffReport } from "../../src/inventory/report-schema.ts";
import { relaunchHandoff } from "../../src/relaunch/relaunch.ts";
import { isProcessAlive, killAndWait, runningManifest, type RecoveryRigBase } from "./recovery-rig.ts";
import { waitFor } from "./tmux.ts";

/** The inventory's report on one handoff, checked against its schema. */
export async function judge(deps: Parameters<typeof inspectHandoff>[0], id: string): Promise<HandoffReport> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code !== "found") throw new Error(inspected.message);
  return HandoffReportSchema.parse(inspected.report);
}

/** Every live process named `pi` whose cwd is in the worktree (what a second writer would be). */
export function piProcessesIn(worktree: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
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

/** A handoff's window as the backend names it: a tmux window or a Herdr workspace, and its pane. */
export interface LadderWindow {
  id: string;
  paneId: string;
}

type WriterEvidence = Extract<HandoffReport["status"], { code: "child_running" }>["writers"][number]["evidence"];

/** What the ladder needs to know about one backend, and where that backend asserts more. */
export interface LadderBackend {
  /** The evidence the inventory has for a child the handoff started and that still runs. */
  launchedEvidence: WriterEvidence;
  /** The workspace fact for an open window whose child runs (Herdr adds its agent view). */
  openWorkspace(manifest: Manifest): HandoffReport["workspace"];
  window(manifest: Manifest): LadderWindow;
  /** How messages and history name the window, e.g. `tmux window @1 (pane %1)`. */
  describeWindow(manifest: Manifest): string;
  /** Closes the handoff's window the way a person would, and waits until its child is gone. */
  closeWindow(manifest: Manifest): Promise<void>;
  /** The terminal gives a closed window's id to the next one (zellij's tabs): its pane tells them apart. */
  reusesWindowIds?: boolean;
  /** The ids of every window open on the backend now. */
  openWindowIds(): Promise<string[]>;
  /** Whether the window has the focus (undefined: the backend does not list it). */
  isFocused(window: LadderWindow): Promise<boolean | undefined>;
  /** A handoff the backend fails before any worktree exists. */
  failBeforeWorktree(branch: string): Promise<HandoffOutcome>;
  /** Makes another window the active one (so a relaunch's focus is observable); returns its cleanup. */
  focusElsewhere(): Promise<() => Promise<void>>;
  /** More assertions on a fresh handoff, before the ladder judges it. */
  checkLaunched?(manifest: Manifest): Promise<void>;
  /** Right before the relaunch of a handoff whose child died in its open window. */
  beforeRelaunch?(manifest: Manifest): Promise<void>;
  /** More assertions on that relaunch. */
  checkRelaunched?(before: Manifest, after: Manifest): Promise<void>;
  /** Right before the relaunch of a handoff whose window was closed. */
  beforeReopen?(manifest: Manifest): Promise<void>;
  /** More assertions on the relaunch into a reopened window. */
  checkReopened?(before: Manifest, after: Manifest): Promise<void>;
}

/** One handoff through every state a person can leave it in, judged at each step. */
export async function walkStateLadder(rig: RecoveryRigBase, backend: LadderBackend): Promise<void> {
  const manifest = runningManifest(await rig.handoff("feat/states"));
  const worktree = manifest.worktree.path;
  const pid = manifest.child.pid ?? 0;
  await backend.checkLaunched?.(manifest);

  let report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.status).toEqual({ code: "child_running", writers: [{ pid, evidence: backend.launchedEvidence }] });
  expect(report.actions).toEqual(["focus"]);
  expect(report.workspace).toEqual(backend.openWorkspace(manifest));
  expect(report.worktree).toEqual({ code: "present" });
  expect(report.problems).toEqual([]);

  // The child exits: its shell is back in the window.
  await killAndWait(pid);
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.status).toEqual({ code: "no_child" });
  expect(report.actions).toEqual(["relaunch", "focus", "remove"]);
  expect(report.flags).toEqual([]);

  // The window is closed; the checkout stays.
  await backend.closeWindow(manifest);
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.status).toEqual({ code: "workspace_closed" });
  expect(report.workspace).toEqual({ code: "closed" });
  expect(report.actions).toEqual(["relaunch", "remove"]);
  expect(existsSync(worktree)).toBe(true);

  // Uncommitted work.
  writeFileSync(join(worktree, "README.md"), "# changed in the worktree\n");
  writeFileSync(join(worktree, "notes.txt"), "new file\n");
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.flags).toEqual(["dirty", "untracked"]);
  expect(report.changes).toEqual({ dirtyFiles: ["README.md"], untrackedFiles: ["notes.txt"] });

  // Committed, not merged; the repository has no remote, so there is nowhere to push: not unpushed.
  rig.repo.run(["add", "-A"], { cwd: worktree });
  rig.repo.run(["commit", "-q", "-m", "work in the worktree"], { cwd: worktree });
  const tip = rig.repo.run(["rev-parse", "HEAD"], { cwd: worktree });
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.flags).toEqual(["unmerged"]);
  expect(report.branchState).toEqual({
    code: "present",
    tip,
    mergeTarget: { ref: "HEAD", sha: manifest.base.sha },
    aheadOfBase: 1,
    unmerged: { total: 1, commits: [{ sha: tip, subject: "work in the worktree" }] },
    unpushed: { total: 0, commits: [] },
    behind: 0,
  });
  // With a remote the branch never reached, the commit is unpushed.
  rig.repo.run(["remote", "add", "origin", join(rig.repo.dir, "nowhere.git")]);
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.flags).toEqual(["unpushed", "unmerged"]);
  expect(report.branchState).toMatchObject({
    unpushed: { total: 1, commits: [{ sha: tip, subject: "work in the worktree" }] },
  });
  rig.repo.run(["remote", "remove", "origin"]);

  // Merged into the base (the main checkout's HEAD).
  rig.repo.run(["merge", "-q", "--ff-only", "feat/states"]);
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.flags).toEqual(["merged"]);
  expect(report.branchState).toMatchObject({
    mergeTarget: { ref: "HEAD", sha: tip },
    unmerged: { total: 0 },
    merged: { rule: "ancestry" },
  });

  // The worktree directory is deleted: git still lists it, then no longer after a prune.
  rmSync(worktree, { recursive: true, force: true });
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.status).toEqual({ code: "prunable" });
  expect(report.actions).toEqual(["remove", "prune"]);
  rig.repo.run(["worktree", "prune"]);
  report = await judge(rig.recoveryDeps(), manifest.id);
  expect(report.status).toEqual({ code: "worktree_missing" });
  expect(report.actions).toEqual(["remove", "prune"]);
  expect(report.changes).toBeUndefined();
}

/** The report of a handoff that failed at `step` after its worktree was made (an injected fault). */
async function expectInjectedFailure(
  rig: RecoveryRigBase,
  outcome: HandoffOutcome,
  step: "fork" | "launch",
): Promise<HandoffReport> {
  if (outcome.code !== "failed") throw new Error(`expected a failure, got ${outcome.code}`);
  const report = await judge(rig.recoveryDeps(), outcome.manifest.id);
  expect(report.status).toEqual({
    code: "failed",
    step,
    message: `Injected fault at the ${step} step (PI_HANDOFF_FAULT).`,
    worktreeCreated: true,
  });
  return report;
}

/** The step a handoff failed at or was never confirmed at, and what can still be done with it. */
export async function nameFailedSteps(rig: RecoveryRigBase, backend: LadderBackend): Promise<void> {
  // The backend fails before anything is created: nothing but the manifest exists.
  const early = await backend.failBeforeWorktree("feat/early");
  if (early.code !== "failed") throw new Error(`expected a failure, got ${early.code}`);
  let report = await judge(rig.recoveryDeps(), early.manifest.id);
  expect(report.status).toMatchObject({ code: "failed", step: "worktree", worktreeCreated: false });
  expect(report.worktree).toEqual({ code: "missing" });
  expect(report.workspace).toEqual({ code: "none" });
  expect(report.actions).toEqual(["remove", "prune"]);

  report = await expectInjectedFailure(rig, await rig.handoff("feat/at-fork", { faultAt: "fork" }), "fork");
  expect(report.workspace).toEqual({ code: "open" });
  // The session was written before the fault: the child can be started on it.
  expect(report.actions).toEqual(["relaunch", "focus", "remove"]);

  report = await expectInjectedFailure(rig, await rig.handoff("feat/at-launch", { faultAt: "launch" }), "launch");
  expect(report.actions).toEqual(["relaunch", "focus", "remove"]);

  const unconfirmed = await rig.handoff("feat/unconfirmed", { faultAt: "confirm", confirmMs: 300 });
  expect(unconfirmed.code).toBe("launch_unconfirmed");
  if (unconfirmed.code !== "launch_unconfirmed") return;
  report = await judge(rig.recoveryDeps(), unconfirmed.manifest.id);
  expect(report.status).toEqual({
    code: "unconfirmed",
    step: "confirm",
    // The launcher ran and started nothing (the fault): said at once, not after the timeout.
    message: "The launcher started, but its Pi exited (or never started) before confirming; the new pane shows why.",
  });
  expect(report.actions).toEqual(["relaunch", "focus", "remove"]);
}

/** Relaunch refuses while the child lives (by pid), and relaunches in the same window after it died. */
export async function relaunchAfterTheChildDied(rig: RecoveryRigBase, backend: LadderBackend): Promise<void> {
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

  await killAndWait(firstPid);
  // Another window is active now, so the relaunch's focus is observable.
  const unfocus = await backend.focusElsewhere();
  await backend.beforeRelaunch?.(manifest);
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
  expect(after.mux).toEqual(manifest.mux);
  expect(after.focus).toEqual({ at: expect.any(String) });
  expect(await backend.isFocused(backend.window(after))).toBe(true);
  expect(relaunched.message).toBe(
    `Relaunched handoff ${manifest.id}: Pi pid ${secondPid} runs on ${after.child.sessionFile} in ${backend.describeWindow(after)}.`,
  );
  await backend.checkRelaunched?.(manifest, after);
  await killAndWait(secondPid);
  await unfocus();
}

/** Relaunch into a closed window: a new one is opened, and the child launched and confirmed there. */
export async function relaunchIntoAReopenedWindow(rig: RecoveryRigBase, backend: LadderBackend): Promise<void> {
  const manifest = runningManifest(await rig.handoff("feat/reopen", { focus: false }));
  const old = backend.window(manifest);
  // Closing the window hangs up the child with it.
  await backend.closeWindow(manifest);
  await backend.beforeReopen?.(manifest);

  const relaunched = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
  expect(relaunched.code).toBe("running");
  if (relaunched.code !== "running") return;
  const reopened = backend.window(relaunched.manifest);
  expect(reopened.paneId).not.toBe(old.paneId);
  expect(await backend.openWindowIds()).toContain(reopened.id);
  if (backend.reusesWindowIds !== true) {
    expect(reopened.id).not.toBe(old.id);
    expect(await backend.openWindowIds()).not.toContain(old.id);
  }
  expect(relaunched.manifest.history.at(-2)).toMatchObject({
    state: "launching",
    note: `relaunched in a reopened window (${backend.describeWindow(relaunched.manifest)})`,
  });
  // The new child runs in the reopened window, in the worktree, which did not take the focus.
  const pid = relaunched.manifest.child.pid ?? 0;
  expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(manifest.worktree.path);
  expect(relaunched.manifest.focus).toBeUndefined();
  expect(await backend.isFocused(reopened)).toBe(false);
  await backend.checkReopened?.(manifest, relaunched.manifest);
  await killAndWait(pid);
}

/** Waits until a pid is gone (a child hung up with its window). */
export async function waitForExit(pid: number | undefined, what: string): Promise<void> {
  if (pid === undefined) return;
  await waitFor(() => !isProcessAlive(pid), { timeoutMs: 10_000, description: what });
}

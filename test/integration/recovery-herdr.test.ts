/**
 * Recovery against real states on Herdr, the real 0.8.2 (herdr-real project) and the test double,
 * from the same test code: handoffs made by the real transaction with the Herdr backend (real git,
 * real fork, real panes, the stand-in child started by the real launch command), then changed for
 * real (child killed, `herdr workspace close`, files dirtied, commits made and merged, worktree
 * deleted, the Herdr server stopped and started again with a live and with an exited child, a Pi
 * re-run by hand in a restored workspace), judged by the shared inventory, relaunched and removed
 * through Herdr's own commands (`worktree open`, `worktree remove --workspace`). The double's call
 * log shows the exact commands besides; its faults and legacy ids are the double's alone.
 *
 * The recovery side runs as a shell outside Herdr would: no HERDR_* variables, `herdr` on PATH,
 * the server found through the socket each manifest recorded. The ladder every backend shares is
 * test/support/recovery-ladder.ts (its Herdr hooks are below); what is Herdr's own is here.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { shellQuote } from "../../src/child/launch-command.ts";
import { LIVE_AGENT_STATUSES } from "../../src/mux/herdr/protocol.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { formatReport } from "../../src/inventory/format.ts";
import { relaunchHandoff } from "../../src/relaunch/relaunch.ts";
import type { RemovalPlan } from "../../src/remove/plan.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import { describeRemovalPlan } from "../../src/remove/words.ts";
import {
  asDouble,
  forDoubleOnly,
  HERDR_TARGET,
  onTheRealHerdrWhenBuilt,
  type HerdrCall,
  type HerdrServer,
} from "../support/herdr.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";
import * as ladder from "../support/recovery-ladder.ts";
import {
  createHerdrRecoveryRig,
  createRunHerdrRecoveryRig,
  isProcessAlive,
  killAndWait,
  runningManifest,
  STAND_IN_PI,
  type HerdrRecoveryRig,
} from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";
import { focusHandoff } from "../../src/relaunch/focus.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

let rig: HerdrRecoveryRig<HerdrServer>;

beforeAll(async () => {
  rig = await createRunHerdrRecoveryRig();
});
beforeEach(() => {
  if (rig.herdr.kind === "double") rig.herdr.clearFaults();
});
afterAll(async () => {
  // Whatever happened above, recovery never passed --json to a pane or workspace command (the
  // double's log; the real Herdr refuses it with a usage error, which would have failed a test).
  const withJson =
    rig?.herdr.kind === "double"
      ? rig.herdr
          .calls()
          .filter((call) => ["pane", "workspace"].includes(call.argv[0] ?? "") && call.argv.includes("--json"))
      : [];
  await rig?.cleanup();
  expect(withJson).toEqual([]);
});

function herdrLocation(manifest: Manifest): { workspaceId: string; paneId: string; socketPath: string } {
  const mux = manifest.mux;
  if (
    mux.kind !== "herdr" ||
    mux.workspaceId === undefined ||
    mux.paneId === undefined ||
    mux.socketPath === undefined
  ) {
    throw new Error(`expected a Herdr workspace in ${JSON.stringify(mux)}`);
  }
  return { workspaceId: mux.workspaceId, paneId: mux.paneId, socketPath: mux.socketPath };
}

interface WorkspaceView {
  workspace_id: string;
  label: string;
  focused: boolean;
  worktree?: { checkout_path: string };
}

async function workspaces(): Promise<WorkspaceView[]> {
  return (await rig.herdr.result(["workspace", "list"])).workspaces as WorkspaceView[];
}

/**
 * What a person sees of the open workspaces: id, label, focus and checkout (not Herdr's agent
 * summary, which follows the panes' agents on its own).
 */
async function workspaceLayout(): Promise<{ id: string; label: string; focused: boolean; checkout?: string }[]> {
  return (await workspaces()).map((ws) => ({
    id: ws.workspace_id,
    label: ws.label,
    focused: ws.focused,
    ...(ws.worktree === undefined ? {} : { checkout: ws.worktree.checkout_path }),
  }));
}

/** The ids of the open workspaces whose checkout is `path`. */
async function workspacesOf(path: string): Promise<string[]> {
  return (await workspaces()).filter((ws) => ws.worktree?.checkout_path === path).map((ws) => ws.workspace_id);
}

/** `herdr workspace close`, then wait until the child it hung up is gone. */
async function closeWorkspace(workspaceId: string, childPid: number | undefined): Promise<void> {
  await rig.herdr.result(["workspace", "close", workspaceId]);
  await ladder.waitForExit(childPid, `pid ${childPid} to die with workspace ${workspaceId}`);
}

/**
 * The worktree-level Herdr calls since the log was cleared (not the `--help` probe), as `group
 * command` plus arguments: the double's log (the real Herdr keeps none; its state shows the rest).
 */
function worktreeCalls(): string[][] {
  return asDouble(rig.herdr)
    .calls()
    .filter((call: HerdrCall) => call.argv[0] === "worktree" && call.argv[2] !== "--help")
    .map((call) => call.argv);
}

/** Empties the double's call log (the real Herdr keeps none). */
function clearCallLog(): void {
  if (rig.herdr.kind === "double") rig.herdr.clearCalls();
}

function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
}

function cli(args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const run = spawnSync(NODE_BIN, [BIN, ...args], {
    cwd: rig.repo.root,
    env: rig.env,
    encoding: "utf8",
    timeout: 120_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

async function remove(id: string, options: { force?: boolean; deleteBranch?: boolean } = {}) {
  const plans: RemovalPlan[] = [];
  const outcome = await removeHandoff(
    rig.recoveryDeps(),
    id,
    { force: options.force ?? false, deleteBranch: options.deleteBranch ?? false },
    (plan) => {
      plans.push(plan);
    },
  );
  return { outcome, shown: plans.flatMap((plan) => describeRemovalPlan(plan)) };
}

/** A handoff's Herdr workspace as the shared ladder names windows. */
function herdrWindow(manifest: Manifest): ladder.LadderWindow {
  const { workspaceId, paneId } = herdrLocation(manifest);
  return { id: workspaceId, paneId };
}

/** Waits until Herdr itself sees the handoff's child as a live agent on the child session. */
async function herdrSeesChild(manifest: Manifest, server: HerdrServer = rig.herdr): Promise<void> {
  const { paneId } = herdrLocation(manifest);
  // The real Herdr says `unknown` for 3 s after it finds an agent (src/pane/agent_detection.rs
  // AGENT_STARTUP_GRACE_WINDOW); the double sees it at once.
  await waitFor(
    async () => {
      const pane = (await server.result(["pane", "get", paneId])).pane as {
        agent_status: string;
        agent_session?: { value: string };
      };
      return LIVE_AGENT_STATUSES.has(pane.agent_status) && pane.agent_session?.value === manifest.child.sessionFile;
    },
    { timeoutMs: 15_000, description: `Herdr to see the child in ${paneId}` },
  );
}

/** A failure of `git worktree add` under Herdr: a stale lock on the branch's ref, as a crashed git leaves. */
async function withStaleRefLock<T>(branch: string, body: () => Promise<T>): Promise<T> {
  const lock = join(rig.repo.root, ".git", "refs", "heads", `${branch}.lock`);
  mkdirSync(dirname(lock), { recursive: true });
  writeFileSync(lock, "");
  try {
    return await body();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** The open workspaces' ids before a relaunch into an open window (no workspace may come or go). */
let workspacesBeforeRelaunch: string[] = [];

const herdr: ladder.LadderBackend = {
  launchedEvidence: ["recorded_pid", "marker", "cwd", "herdr_agent"],
  // Herdr sees Pi in the pane, on the session the launch reported to it.
  openWorkspace: (manifest) => ({
    code: "open",
    agent: { status: "idle", label: "pi", sessionFile: manifest.child.sessionFile, pids: [manifest.child.pid ?? 0] },
  }),
  window: herdrWindow,
  describeWindow: (manifest) => `Herdr workspace ${herdrWindow(manifest).id} (pane ${herdrWindow(manifest).paneId})`,
  closeWindow: (manifest) => closeWorkspace(herdrWindow(manifest).id, manifest.child.pid),
  openWindowIds: async () => (await workspaces()).map((ws) => ws.workspace_id),
  isFocused: async (window) => (await workspaces()).find((ws) => ws.workspace_id === window.id)?.focused,
  // Herdr refuses the worktree: git cannot create the branch.
  failBeforeWorktree: (branch) => withStaleRefLock(branch, () => rig.handoff(branch)),
  focusElsewhere: async () => {
    const other = await rig.herdr.openWorkspace(rig.repo.dir, "elsewhere");
    return async () => {
      await rig.herdr.result(["workspace", "close", other.workspaceId]);
    };
  },
  checkLaunched: async (manifest) => {
    const { workspaceId, paneId, socketPath } = herdrLocation(manifest);
    expect(socketPath).toBe(rig.herdr.socketPath);
    expect(paneId).toBe(`${workspaceId}:p1`);
    // The child runs in the Herdr pane, marked with the handoff id.
    expect(environOf(manifest.child.pid ?? 0)).toEqual(
      expect.arrayContaining([`HERDR_PANE_ID=${paneId}`, `PI_HANDOFF_ID=${manifest.id}`]),
    );
    await herdrSeesChild(manifest);
  },
  beforeRelaunch: async () => {
    workspacesBeforeRelaunch = (await workspaces()).map((ws) => ws.workspace_id);
    if (rig.herdr.kind === "double") rig.herdr.clearCalls();
  },
  checkRelaunched: async (manifest, after) => {
    const { paneId } = herdrLocation(manifest);
    expect(environOf(after.child.pid ?? 0)).toEqual(
      expect.arrayContaining([`HERDR_PANE_ID=${paneId}`, `PI_HANDOFF_ID=${manifest.id}`]),
    );
    // The workspace was open: no workspace was opened or closed, and the command went to its pane.
    expect((await workspaces()).map((ws) => ws.workspace_id)).toEqual(workspacesBeforeRelaunch);
    if (rig.herdr.kind === "double") {
      expect(worktreeCalls()).toEqual([]);
      const typed = rig.herdr.calls().filter((call) => call.argv[0] === "pane" && call.argv[1] === "run");
      expect(typed.map((call) => call.argv.slice(2))).toEqual([[paneId, after.child.command]]);
    }
  },
  beforeReopen: async (manifest) => {
    expect(await workspacesOf(manifest.worktree.path)).toEqual([]);
    if (rig.herdr.kind === "double") rig.herdr.clearCalls();
  },
  checkReopened: async (manifest, after) => {
    const reopened = herdrLocation(after);
    expect(reopened.socketPath).toBe(rig.herdr.socketPath);
    expect(await workspacesOf(manifest.worktree.path)).toEqual([reopened.workspaceId]);
    // Opened for the worktree under the handoff's label.
    expect((await workspaces()).find((ws) => ws.workspace_id === reopened.workspaceId)?.label).toBe("feat/reopen");
    // The exact call, from the double's log (0.9.2 there: the trust flag goes with it).
    if (rig.herdr.kind === "double")
      expect(worktreeCalls()).toEqual([
        [
          "worktree",
          "open",
          "--cwd",
          rig.repo.root,
          "--path",
          manifest.worktree.path,
          "--label",
          "feat/reopen",
          "--no-focus",
          "--trust-repository",
        ],
      ]);
    expect(environOf(after.child.pid ?? 0)).toEqual(
      expect.arrayContaining([`HERDR_PANE_ID=${reopened.paneId}`, `HERDR_WORKSPACE_ID=${reopened.workspaceId}`]),
    );
  },
};

// An injected fault: the double's.
forDoubleOnly(() => {
  describe("a launch whose `pane run` answers garbage and types nothing", () => {
    it("says within its short start waits that no launcher started, not after the confirm wait", async () => {
      // A broken client: exit 0 and a page of HTML on stdout, and nothing typed into the pane.
      asDouble(rig.herdr).setFaults({ "pane run": { garbage: "<html>502 Bad Gateway</html>\n", instead: true } });
      const outcome = await rig.handoff("feat/garbage-run", {
        focus: false,
        startMs: 500,
        attempts: 2,
        confirmMs: 60_000,
      });
      expect(outcome.code).toBe("launch_unconfirmed");
      if (outcome.code !== "launch_unconfirmed") return;
      const files = rig.store.pathFor(outcome.manifest.id).replace(/\.json$/, "");
      expect(outcome.manifest.error?.message).toBe(
        `No launcher started in the new pane: the launch line (sh ${files}.launch.sh) was typed 2 times, 0.5 s apart, and no start was announced in ${files}.launch.started; the shell there may still be starting or may have lost the input.`,
      );
      expect(outcome.manifest.error?.step).toBe("launch");
      expect(outcome.manifest.launch).toMatchObject({ typed: 2 });
      expect(outcome.manifest.child.pid).toBeUndefined();
      const paneId = outcome.manifest.mux.kind === "herdr" ? outcome.manifest.mux.paneId : undefined;
      expect(
        asDouble(rig.herdr)
          .calls()
          .filter((call) => call.argv[0] === "pane" && call.argv[1] === "run" && call.argv[2] === paneId),
      ).toHaveLength(2);
    });
  });
});

describe(`the inventory on real states (Herdr, ${HERDR_TARGET})`, () => {
  onTheRealHerdrWhenBuilt(() => {
    it("follows one handoff through every state a person can leave it in", () => ladder.walkStateLadder(rig, herdr));
  });

  onTheRealHerdrWhenBuilt(() => {
    it("names the step of a handoff that failed or was never confirmed", () => ladder.nameFailedSteps(rig, herdr));
  });

  // An injected fault (a pty Herdr could not spawn): the double's.
  forDoubleOnly(() => {
    it("names the worktree step when Herdr made the checkout but no workspace, and git alone removes that checkout", async () => {
      // Herdr made the checkout but no workspace (worktree_open_failed): the checkout is recorded.
      asDouble(rig.herdr).setFaults({
        "worktree create": { error: "worktree_open_failed", message: "pty spawn failed" },
      });
      const noWorkspace = await rig.handoff("feat/no-workspace");
      asDouble(rig.herdr).clearFaults();
      if (noWorkspace.code !== "failed") throw new Error(`expected a failure, got ${noWorkspace.code}`);
      const report = await ladder.judge(rig.recoveryDeps(), noWorkspace.manifest.id);
      expect(report.status).toMatchObject({ code: "failed", step: "worktree", worktreeCreated: true });
      expect(report.worktree).toEqual({ code: "present" });
      expect(report.workspace).toEqual({ code: "none" });
      // No child session was forked, so there is nothing to relaunch.
      expect(report.actions).toEqual(["remove"]);

      // There is no workspace to remove it through: git alone removes it.
      const removed = await remove(noWorkspace.manifest.id);
      expect(removed.outcome.code).toBe("removed");
      expect(existsSync(noWorkspace.manifest.worktree.path)).toBe(false);
      expect(rig.repo.run(["branch", "--list", "feat/no-workspace", "--format=%(refname:short)"])).toBe(
        "feat/no-workspace",
      );
    });
  });
});

onTheRealHerdrWhenBuilt(() => {
  describe("a Herdr server that does not answer", () => {
    it("is reported as unknown, not as a closed workspace; relaunch and remove change nothing and say why", async () => {
      const manifest = runningManifest(await rig.handoff("feat/server-down", { focus: false }));
      await killAndWait(manifest.child.pid ?? 0);
      // As if the handoff had been made on a Herdr server that is not running now.
      const socket = join(rig.repo.dir, "stopped-herdr", "herdr.sock");
      await rig.store.update(manifest.id, (m) => {
        if (m.mux.kind === "herdr") m.mux.socketPath = socket;
      });
      const before = readFileSync(rig.store.pathFor(manifest.id), "utf8");
      const down = `The Herdr server is not running: no herdr server is running at ${socket}; run \`herdr\` to start or attach it.`;

      const report = await ladder.judge(rig.recoveryDeps(), manifest.id);
      expect(report.workspace).toEqual({ code: "unknown", message: `Could not see the handoff's window: ${down}` });
      expect(report.problems).toEqual([`Could not see the handoff's window: ${down}`]);

      const relaunched = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
      expect(relaunched).toEqual({
        code: "refused",
        reason: "workspace_unknown",
        message: `Handoff ${manifest.id} was not relaunched: Could not see the handoff's window: ${down.replace(/\.$/, "")}; try again once the herdr server answers.`,
      });
      // The removal's plan asks the server what would block it, as the dry run does: refused before anything.
      const removal = await remove(manifest.id);
      expect(removal.outcome).toMatchObject({
        code: "refused",
        message: `${down} Handoff ${manifest.id} was not removed.`,
      });
      expect(readFileSync(rig.store.pathFor(manifest.id), "utf8")).toBe(before);
      expect(existsSync(manifest.worktree.path)).toBe(true);
    });
  });
});

onTheRealHerdrWhenBuilt(() => {
  describe("focus on Herdr", () => {
    it("pi-handoff focus <branch> focuses the handoff's workspace through Herdr", async () => {
      const manifest = runningManifest(await rig.handoff("feat/focus", { focus: false }));
      const { workspaceId, paneId } = herdrLocation(manifest);
      const other = await rig.herdr.openWorkspace(rig.repo.dir, "elsewhere");
      expect((await workspaces()).find((ws) => ws.workspace_id === workspaceId)?.focused).toBe(false);
      // While another command acts on the handoff, focus answers at once and switches nothing.
      const busy = await rig.store.withActionLock(manifest.id, "relaunch", () =>
        focusHandoff({ ...rig.recoveryDeps(), store: rig.store }, manifest.id),
      );
      expect(busy).toMatchObject({ ok: false, code: "busy" });
      expect(busy.message).toMatch(
        new RegExp(`^Handoff ${manifest.id} is busy: process ${process.pid} is relaunching it`),
      );
      expect((await workspaces()).find((ws) => ws.workspace_id === workspaceId)?.focused).toBe(false);
      const run = cli(["focus", "feat/focus"]);
      expect(run).toEqual({
        status: 0,
        stdout: `Switched to handoff ${manifest.id}: Herdr workspace ${workspaceId} (pane ${paneId}).\n`,
        stderr: "",
      });
      expect((await workspaces()).find((ws) => ws.workspace_id === workspaceId)?.focused).toBe(true);
      await killAndWait(manifest.child.pid ?? 0);
      await rig.herdr.result(["workspace", "close", other.workspaceId]);
    });
  });
});

onTheRealHerdrWhenBuilt(() => {
  describe("relaunch on Herdr", () => {
    it("refuses while the child lives (by pid), relaunches in its workspace after it died", () =>
      ladder.relaunchAfterTheChildDied(rig, herdr));

    it("reopens a closed workspace with `worktree open`, then launches and confirms there", () =>
      ladder.relaunchIntoAReopenedWindow(rig, herdr));

    it("treats a Pi that Herdr re-ran on the session after a restart as the writer, with or without the marker", async () => {
      const manifest = runningManifest(await rig.handoff("feat/restarted", { focus: false }));
      const old = herdrLocation(manifest);
      const childFile = manifest.child.sessionFile ?? "";
      const worktree = manifest.worktree.path;
      // The server goes down (the child with it); on restart Herdr restores the workspace (under its
      // name, and a new id here) and re-runs `pi --session <file>` in it: without the handoff's
      // marker, and without the flags that loaded this extension, so nothing acknowledges.
      await closeWorkspace(old.workspaceId, manifest.child.pid);
      const restored = (await rig.herdr.result([
        "worktree",
        "open",
        "--cwd",
        rig.repo.root,
        "--path",
        worktree,
        "--label",
        "feat/restarted",
        "--no-focus",
      ])) as {
        root_pane: { pane_id: string };
        workspace: { workspace_id: string };
      };
      const restoredPane = restored.root_pane.pane_id;
      const rerun = (extra: string): string =>
        `${extra}${shellQuote(NODE_BIN)} ${shellQuote(STAND_IN_PI)} --session ${shellQuote(childFile)}`;
      await rig.herdr.herdr(["pane", "run", restoredPane, rerun("STAND_IN_PI_NO_ACK=1 ")]);
      const rerunPid = await waitFor(() => ladder.piProcessesIn(worktree)[0], {
        timeoutMs: 15_000,
        description: "the re-run Pi",
      });
      expect(environOf(rerunPid).some((line) => line.startsWith("PI_HANDOFF_ID="))).toBe(false);

      const manifestPath = rig.store.pathFor(manifest.id);
      const before = readFileSync(manifestPath, "utf8");
      let report = await ladder.judge(rig.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({ code: "child_running", writers: [{ pid: rerunPid, evidence: ["cwd"] }] });
      // The recorded pane went with the old workspace; the restored one is not the handoff's record.
      expect(report.workspace).toEqual({ code: "closed" });
      expect(report.actions).toEqual([]);

      const refused = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
      expect(refused).toMatchObject({ code: "refused", reason: "child_running" });
      expect(refused.message).toContain(`(pid ${rerunPid})`);
      const removal = await remove(manifest.id, { force: true });
      expect(removal.outcome).toMatchObject({ code: "refused", reason: "child_running" });
      expect(readFileSync(manifestPath, "utf8")).toBe(before);
      expect(ladder.piProcessesIn(worktree)).toEqual([rerunPid]);
      expect(existsSync(worktree)).toBe(true);

      // With this extension installed for every Pi, the re-run Pi acknowledges: its pid is recorded.
      await killAndWait(rerunPid);
      await rig.herdr.herdr(["pane", "run", restoredPane, rerun("")]);
      const ackedPid = await waitFor(
        async () => {
          const current = await rig.read(manifest.id);
          return current.child.pid !== manifest.child.pid && current.child.pid !== rerunPid
            ? current.child.pid
            : undefined;
        },
        { timeoutMs: 15_000, description: "the re-run Pi's acknowledgement" },
      );
      report = await ladder.judge(rig.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({
        code: "child_running",
        writers: [{ pid: ackedPid, evidence: ["recorded_pid", "cwd"] }],
      });
      expect((await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false })).code).toBe("refused");

      // Once it is gone, relaunch reuses the restored workspace (`worktree open` says it is already
      // open) rather than opening a second one.
      await killAndWait(ackedPid);
      const relaunched = await relaunchHandoff(rig.relaunchDeps(), manifest.id, { focus: false });
      expect(relaunched.code).toBe("running");
      if (relaunched.code !== "running") return;
      expect(herdrLocation(relaunched.manifest)).toMatchObject({
        workspaceId: restored.workspace.workspace_id,
        paneId: restoredPane,
      });
      expect(await workspacesOf(worktree)).toEqual([restored.workspace.workspace_id]);
      await killAndWait(relaunched.manifest.child.pid ?? 0);
    });
  });
});

describe("remove on Herdr never loses a file or a commit without --force", () => {
  it("refuses while the child lives and while files are uncommitted; with --force removes through `worktree remove --workspace`", async () => {
    const manifest = runningManifest(await rig.handoff("rm/dirty", { focus: false }));
    const { workspaceId } = herdrLocation(manifest);
    const worktree = manifest.worktree.path;

    const whileRunning = await remove(manifest.id, { force: true });
    expect(whileRunning.outcome).toMatchObject({
      code: "refused",
      reason: "child_running",
      message: `Handoff ${manifest.id} still has a live Pi (pid ${manifest.child.pid}); quit it first, then remove the handoff.`,
    });
    // What the removal would do is listed with the refusal, so it is known before the Pi is quit.
    expect(whileRunning.shown).toEqual([
      `The worktree ${worktree} would be deleted and its window closed.`,
      "Branch rm/dirty would be kept.",
    ]);
    await killAndWait(manifest.child.pid ?? 0);

    writeFileSync(join(worktree, "README.md"), "# changed\n");
    writeFileSync(join(worktree, "draft.txt"), "draft\n");
    const before = await workspaceLayout();
    clearCallLog();
    const refused = await remove(manifest.id);
    expect(refused.outcome).toMatchObject({ code: "refused", reason: "needs_force" });
    expect(refused.shown).toEqual([
      `The worktree ${worktree} would be deleted and its window closed.`,
      "Would be lost for good (2 files with uncommitted work):",
      "  modified   README.md",
      "  untracked  draft.txt",
      "Branch rm/dirty would be kept.",
    ]);
    // Nothing was touched: no worktree command ran, the files and the workspaces are as they were.
    if (rig.herdr.kind === "double") expect(worktreeCalls()).toEqual([]);
    expect(await workspaceLayout()).toEqual(before);
    expect(readFileSync(join(worktree, "draft.txt"), "utf8")).toBe("draft\n");
    expect(await workspacesOf(worktree)).toEqual([workspaceId]);
    expect((await rig.read(manifest.id)).state).toBe("running");

    const forced = await remove(manifest.id, { force: true });
    expect(forced.outcome).toMatchObject({
      code: "removed",
      message: `Removed handoff ${manifest.id}: deleted worktree ${worktree}, kept branch rm/dirty.`,
    });
    if (rig.herdr.kind === "double")
      expect(worktreeCalls()).toEqual([
        ["worktree", "remove", "--workspace", workspaceId, "--force", "--trust-repository"],
      ]);
    expect(existsSync(worktree)).toBe(false);
    expect(await workspacesOf(worktree)).toEqual([]);
    expect(rig.repo.run(["branch", "--list", "rm/dirty", "--format=%(refname:short)"])).toBe("rm/dirty");
    const removed = await rig.read(manifest.id);
    expect(removed.state).toBe("removed");
    expect(removed.gitState).toEqual({
      capturedAt: expect.any(String),
      head: manifest.base.sha,
      dirtyFiles: ["README.md"],
      untrackedFiles: ["draft.txt"],
      aheadOfBase: 0,
    });
    expect(removed.history.at(-1)?.note).toBe(
      `removed with pi-handoff: deleted worktree ${worktree}, kept branch rm/dirty`,
    );
  });

  onTheRealHerdrWhenBuilt(() => {
    it("refuses unmerged commits; with --force --delete-branch the commit stays on the kept branch", async () => {
      const manifest = runningManifest(await rig.handoff("rm/unmerged", { focus: false }));
      await killAndWait(manifest.child.pid ?? 0);
      const tip = rig.repo.commitFile("feature.txt", "feature\n", "add the feature", { cwd: manifest.worktree.path });

      const refused = await remove(manifest.id, { deleteBranch: true });
      expect(refused.outcome).toMatchObject({ code: "refused", reason: "needs_force" });
      expect(refused.outcome.message).toContain("has 1 commit not merged into HEAD; nothing was removed");
      expect(existsSync(manifest.worktree.path)).toBe(true);

      const forced = await remove(manifest.id, { force: true, deleteBranch: true });
      expect(forced.outcome.code).toBe("removed");
      expect(forced.shown).toContain(
        "Branch rm/unmerged would be kept: it has 1 unmerged commit, and an unmerged branch is never deleted, even with --force.",
      );
      expect(existsSync(manifest.worktree.path)).toBe(false);
      expect(rig.repo.run(["rev-parse", "refs/heads/rm/unmerged"])).toBe(tip);
      expect((await rig.read(manifest.id)).gitState).toMatchObject({
        head: tip,
        dirtyFiles: [],
        untrackedFiles: [],
        aheadOfBase: 1,
      });
    });
  });

  it("pi-handoff remove reopens a closed workspace to remove the worktree through Herdr (#4317)", async () => {
    const manifest = runningManifest(await rig.handoff("rm/closed", { focus: false }));
    const { workspaceId } = herdrLocation(manifest);
    await closeWorkspace(workspaceId, manifest.child.pid);
    const before = await workspaceLayout();
    clearCallLog();

    const run = cli(["remove", manifest.id, "--delete-branch"]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(
      [
        `The worktree ${manifest.worktree.path} will be deleted.`,
        `Branch rm/closed will be deleted: everything on it is in HEAD.`,
        `Removed handoff ${manifest.id}: deleted worktree ${manifest.worktree.path}, deleted branch rm/closed.`,
        "",
      ].join("\n"),
    );
    expect(run.status).toBe(0);
    if (rig.herdr.kind === "double") {
      const calls = worktreeCalls();
      // The plan's look (changing nothing), then the removal's own.
      expect(calls.map((argv) => argv.slice(0, 2).join(" "))).toEqual([
        "worktree list",
        "worktree list",
        "worktree open",
        "worktree remove",
      ]);
      const reopenedId = calls[3]?.[3] ?? "";
      expect(reopenedId).not.toBe(workspaceId);
      expect(calls[3]).toEqual(["worktree", "remove", "--workspace", reopenedId, "--trust-repository"]);
    }
    expect(existsSync(manifest.worktree.path)).toBe(false);
    // The workspace opened for the removal went with it; the others are as they were (and 0.8.2's
    // move of the focus to the repository's workspace was put back).
    expect(await workspaceLayout()).toEqual(before);
    expect(await workspacesOf(manifest.worktree.path)).toEqual([]);
    expect(rig.repo.run(["branch", "--list", "rm/closed"])).toBe("");
    expect((await rig.read(manifest.id)).state).toBe("removed");
  });

  it("a person's workspace running cat in the closed child's worktree: the dry run refuses as the real run does, naming cat, and inspect offers neither", async () => {
    const manifest = runningManifest(await rig.handoff("rm/occupied", { focus: false }));
    await closeWorkspace(herdrLocation(manifest).workspaceId, manifest.child.pid);
    const worktree = manifest.worktree.path;
    writeFileSync(join(worktree, "draft.txt"), "draft\n");
    // The person's own workspace, its shell in the worktree, running cat.
    const users = await rig.herdr.openWorkspace(worktree, "users-cat");
    await rig.herdr.herdr(["pane", "run", users.paneId, "cat"]);
    await waitFor(
      async () => {
        const info = (await rig.herdr.result(["pane", "process-info", "--pane", users.paneId])).process_info as {
          foreground_processes: { name: string }[];
        };
        return info.foreground_processes.some((process) => process.name === "cat");
      },
      { timeoutMs: 10_000, description: `cat in ${users.paneId}` },
    );
    const before = await workspaceLayout();
    const blocker = `Herdr workspace ${users.workspaceId}, workspace "users-cat", has cat running in the worktree ${realpathSync(worktree)}, and Herdr would take that workspace over for the worktree if asked to open it, so nothing was opened; quit it, close it or cd its panes out of the worktree, then try again.`;
    const reason = `${blocker} Handoff ${manifest.id} was not removed.`;
    const plan = [
      `The worktree ${worktree} would be deleted.`,
      "Would be lost for good (1 file with uncommitted work):",
      "  untracked  draft.txt",
      "Branch rm/occupied would be kept.",
      "",
    ].join("\n");
    try {
      for (const force of [[], ["--force"]]) {
        const dry = cli(["remove", manifest.id, "--dry-run", ...force]);
        expect({ status: dry.status, stdout: dry.stdout, stderr: dry.stderr }).toEqual({
          status: 1,
          stdout: plan,
          stderr: `pi-handoff remove: Dry run: ${reason}\n`,
        });
      }
      // The real run: the same reason, and nothing announced as about to happen before it.
      const real = cli(["remove", manifest.id, "--force"]);
      expect({ status: real.status, stdout: real.stdout, stderr: real.stderr }).toEqual({
        status: 1,
        stdout: plan,
        stderr: `pi-handoff remove: ${reason}\n`,
      });
      expect(readFileSync(join(worktree, "draft.txt"), "utf8")).toBe("draft\n");
      expect(await workspaceLayout()).toEqual(before);
      expect((await rig.read(manifest.id)).state).not.toBe("removed");
      // inspect suggests neither relaunch (its reopening meets the same workspace) nor remove.
      const inspected = cli(["inspect", manifest.id]);
      expect(inspected.status).toBe(0);
      expect(inspected.stdout).toContain(`\n  blocked:       ${blocker}\n`);
      expect(inspected.stdout).toContain("\n  next:          nothing until that is done\n");
    } finally {
      await rig.herdr.result(["workspace", "close", users.workspaceId]);
    }
  });

  it("drops git's entry for a worktree whose directory vanished, with its workspace open or closed", async () => {
    // Open: Herdr removes it through the workspace whose shell still sits in the deleted directory.
    const open = runningManifest(await rig.handoff("rm/vanished-open", { focus: false }));
    const openLocation = herdrLocation(open);
    await killAndWait(open.child.pid ?? 0);
    rmSync(open.worktree.path, { recursive: true, force: true });
    clearCallLog();
    let removal = await remove(open.id);
    expect(removal.outcome).toMatchObject({
      code: "removed",
      message: `Removed handoff ${open.id}: dropped git's entry for ${open.worktree.path}, kept branch rm/vanished-open.`,
    });
    if (rig.herdr.kind === "double")
      expect(worktreeCalls()).toEqual([
        ["worktree", "remove", "--workspace", openLocation.workspaceId, "--trust-repository"],
      ]);
    expect((await workspaces()).map((ws) => ws.workspace_id)).not.toContain(openLocation.workspaceId);
    expect(await workspacesOf(open.worktree.path)).toEqual([]);
    expect(rig.repo.run(["worktree", "list", "--porcelain"])).not.toContain(open.worktree.path);

    // Closed: Herdr cannot open a checkout that is gone, so git alone drops the entry.
    const closed = runningManifest(await rig.handoff("rm/vanished-closed", { focus: false }));
    await closeWorkspace(herdrLocation(closed).workspaceId, closed.child.pid);
    rmSync(closed.worktree.path, { recursive: true, force: true });
    const before = await workspaceLayout();
    clearCallLog();
    removal = await remove(closed.id);
    expect(removal.outcome).toMatchObject({
      code: "removed",
      message: `Removed handoff ${closed.id}: dropped git's entry for ${closed.worktree.path}, kept branch rm/vanished-closed.`,
    });
    // The plan's look, then the removal's own: no workspace is opened for a checkout that is gone.
    if (rig.herdr.kind === "double")
      expect(worktreeCalls().map((argv) => argv.slice(0, 2).join(" "))).toEqual(["worktree list", "worktree list"]);
    expect(await workspaceLayout()).toEqual(before);
    expect(await workspacesOf(closed.worktree.path)).toEqual([]);
    expect(rig.repo.run(["worktree", "list", "--porcelain"])).not.toContain(closed.worktree.path);
    expect((await rig.read(closed.id)).state).toBe("removed");
  });
});

// Ids as Herdr up to 0.6.10 minted them: the double's alone (the real one here is 0.8.2).
forDoubleOnly(() => {
  describe("recovery on Herdr with legacy ids", () => {
    let legacy: HerdrRecoveryRig;
    beforeAll(async () => {
      legacy = await createHerdrRecoveryRig({ legacyIds: true, piOnPath: true });
    });
    afterAll(async () => {
      await legacy?.cleanup();
    });

    it("with legacy hex ids the whole handoff, recovery and removal work, and the child's session is reported to Herdr", async () => {
      const manifest = runningManifest(await legacy.handoff("legacy/ids", { focus: false }));
      const { workspaceId, paneId } = herdrLocation(manifest);
      expect(workspaceId).toMatch(/^w[0-9a-f]{14,}$/);
      expect(paneId).toBe(`${workspaceId}-1`);
      // After the acknowledgement Herdr was told which session the pane's Pi writes (for its restore).
      const pane = (await legacy.herdr.result(["pane", "get", paneId])).pane as { agent_session?: unknown };
      expect(pane.agent_session).toEqual({
        source: "herdr:pi",
        agent: "pi",
        kind: "path",
        value: manifest.child.sessionFile,
      });
      const pid = manifest.child.pid ?? 0;
      expect(environOf(pid)).toContain("HERDR_AGENT=pi");

      let report = await ladder.judge(legacy.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({
        code: "child_running",
        writers: [{ pid, evidence: ["recorded_pid", "marker", "cwd", "herdr_agent"] }],
      });
      expect(formatReport(report)).toContain(
        `  window:        Herdr workspace ${workspaceId} (pane ${paneId}) (open (Herdr: agent idle on the child session))`,
      );
      await killAndWait(pid);
      report = await ladder.judge(legacy.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({ code: "no_child" });
      const relaunched = await relaunchHandoff(legacy.relaunchDeps(), manifest.id, { focus: false });
      if (relaunched.code !== "running") throw new Error(relaunched.message);
      expect(herdrLocation(relaunched.manifest)).toMatchObject({ workspaceId, paneId });
      await killAndWait(relaunched.manifest.child.pid ?? 0);

      const removed = await removeHandoff(
        legacy.recoveryDeps(),
        manifest.id,
        { force: false, deleteBranch: false },
        () => {},
      );
      expect(removed.code).toBe("removed");
      expect(existsSync(manifest.worktree.path)).toBe(false);
      expect((await legacy.read(manifest.id)).state).toBe("removed");
      const gone = await legacy.herdr.herdr(["workspace", "get", workspaceId]);
      expect(gone.stderr).toContain('"code":"workspace_not_found"');
    });
  });
});

onTheRealHerdrWhenBuilt(() => {
  describe(`recovery on Herdr as its source behaves: moved panes, server restarts (${HERDR_TARGET})`, () => {
    // The panes find the stand-in as `pi`: Herdr's own resume after a restart types a bare `pi --session <file>`.
    let source: HerdrRecoveryRig<HerdrServer>;
    beforeAll(async () => {
      source = await createRunHerdrRecoveryRig({ piOnPath: true });
    });
    afterAll(async () => {
      await source?.cleanup();
    });

    it("a moved pane: recovery records its new ids, sees the child there, and relaunches there, never a second Pi", async () => {
      const manifest = runningManifest(await source.handoff("moved/pane", { focus: false }));
      await herdrSeesChild(manifest, source.herdr);
      const old = herdrLocation(manifest);
      const worktree = manifest.worktree.path;
      const pid = manifest.child.pid ?? 0;
      const moved = (
        (await source.herdr.result(["pane", "move", old.paneId, "--new-workspace"])).move_result as {
          pane: { pane_id: string; tab_id: string; workspace_id: string };
        }
      ).pane;
      const now = {
        kind: "herdr",
        socketPath: old.socketPath,
        workspaceId: moved.workspace_id,
        tabId: moved.tab_id,
        paneId: moved.pane_id,
      };

      const report = await ladder.judge(source.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({
        code: "child_running",
        writers: [{ pid, evidence: ["recorded_pid", "marker", "cwd", "herdr_agent"] }],
      });
      expect(report.mux).toEqual(now);
      expect((await source.read(manifest.id)).mux).toEqual(now);
      expect((await relaunchHandoff(source.relaunchDeps(), manifest.id, { focus: false })).code).toBe("refused");

      await killAndWait(pid);
      const relaunched = await relaunchHandoff(source.relaunchDeps(), manifest.id, { focus: false });
      if (relaunched.code !== "running") throw new Error(relaunched.message);
      expect(relaunched.manifest.mux).toEqual(now);
      expect(ladder.piProcessesIn(worktree)).toEqual([relaunched.manifest.child.pid]);
      await killAndWait(relaunched.manifest.child.pid ?? 0);
    });

    it("after a server restart Herdr resumes the child itself: it is the writer by Herdr's own view, even where processes cannot be read", async () => {
      const manifest = runningManifest(await source.handoff("restart/resume", { focus: false }));
      const worktree = manifest.worktree.path;
      const pid = manifest.child.pid ?? 0;
      // Herdr keeps the session once it has seen the Pi that reported it.
      await herdrSeesChild(manifest, source.herdr);
      await source.herdr.restart({ blindMs: 750 });
      await waitFor(() => !isProcessAlive(pid), {
        timeoutMs: 10_000,
        description: "the old child to end with the restart",
      });
      // Herdr typed a bare `pi --session <file>`: no handoff marker, no flags of the handoff.
      const resumed = await waitFor(() => ladder.piProcessesIn(worktree)[0], {
        timeoutMs: 15_000,
        description: "the Pi Herdr resumed",
      });
      expect(environOf(resumed).some((line) => line.startsWith("PI_HANDOFF_ID="))).toBe(false);

      // Recovery where process details cannot be read (no /proc): Herdr's agent view names the writer.
      const blind = {
        ...source.relaunchDeps(),
        scanProcesses: async () => ({
          piProcesses: [],
          problem: "This system has no /proc, so running Pi processes could not be looked for.",
        }),
        describeProcess: async () => undefined,
      };
      const report = await waitFor(
        async () => {
          const judged = await ladder.judge(blind, manifest.id);
          return judged.status.code === "child_running" ? judged : undefined;
        },
        { timeoutMs: 10_000, description: "Herdr to see the resumed Pi" },
      );
      expect(report.status).toEqual({ code: "child_running", writers: [{ pid: resumed, evidence: ["herdr_agent"] }] });
      const refused = await relaunchHandoff(blind, manifest.id, { focus: false });
      expect(refused).toMatchObject({ code: "refused", reason: "child_running" });
      expect(ladder.piProcessesIn(worktree)).toEqual([resumed]);
      await killAndWait(resumed);
    });

    it("a restart with the child running, and a relaunch asked at once: Herdr's resume is the one Pi, recognised as the handoff's child", async () => {
      const manifest = runningManifest(await source.handoff("restart/live", { focus: false }));
      const worktree = manifest.worktree.path;
      await herdrSeesChild(manifest, source.herdr);
      await source.herdr.restart({ blindMs: 750 });
      // Whether Herdr's resume has started Pi yet is a matter of moments: either way no second one.
      const relaunched = await relaunchHandoff(source.relaunchDeps(), manifest.id, { focus: false });
      const resumed = await waitFor(() => ladder.piProcessesIn(worktree)[0], {
        timeoutMs: 15_000,
        description: "the Pi Herdr resumed",
      });
      if (relaunched.code === "refused") {
        expect(relaunched).toEqual({
          code: "refused",
          reason: "child_running",
          message: `Handoff ${manifest.id} already has a live Pi on its session (pid ${resumed}), so no second one was started.`,
        });
      } else {
        expect(relaunched).toMatchObject({
          code: "failed",
          reason: "shell_not_ready",
          message: `The shell in Herdr pane ${herdrLocation(manifest).paneId} did not become ready within 10 s. Nothing was typed; handoff ${manifest.id} is unchanged.`,
        });
      }
      // The resumed Pi (Herdr's bare `pi --session`, no marker) acknowledges on the session; once
      // Herdr sees it, the inventory names it the one writer, in the workspace under its old ids.
      expect(environOf(resumed).some((line) => line.startsWith("PI_HANDOFF_ID="))).toBe(false);
      const report = await waitFor(
        async () => {
          const judged = await ladder.judge(source.recoveryDeps(), manifest.id);
          const writers = judged.status.code === "child_running" ? judged.status.writers : [];
          return writers.some(
            (writer) => writer.evidence.includes("herdr_agent") && writer.evidence.includes("recorded_pid"),
          )
            ? judged
            : undefined;
        },
        { timeoutMs: 15_000, description: "the inventory to see the resumed Pi" },
      );
      expect(report.status).toEqual({
        code: "child_running",
        writers: [{ pid: resumed, evidence: ["recorded_pid", "cwd", "herdr_agent"] }],
      });
      expect(report.mux).toEqual(manifest.mux);
      expect(report.actions).toEqual(["focus"]);
      const after = await source.read(manifest.id);
      expect(after.child.pid).toBe(resumed);
      // Nothing was launched by this package after the restart: the last launch is the handoff's own.
      expect(after.history.map((entry) => entry.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "running",
        "running",
      ]);
      expect(after.history.at(-1)?.note).toBe(`acknowledged by pid ${resumed}`);
      expect(after.launch).toEqual(manifest.launch);
      expect(ladder.piProcessesIn(worktree)).toEqual([resumed]);
      await killAndWait(resumed);
    });

    it("a restart after the child exited: the workspace comes back under its ids, Herdr resumes nothing, and a relaunch starts the one Pi there", async () => {
      const manifest = runningManifest(await source.handoff("restart/exited", { focus: false }));
      const worktree = manifest.worktree.path;
      const { paneId } = herdrLocation(manifest);
      await herdrSeesChild(manifest, source.herdr);
      await killAndWait(manifest.child.pid ?? 0);
      // Herdr lets the exited Pi's session go (a tick or two later): nothing is kept to resume.
      await waitFor(
        async () =>
          ((await source.herdr.result(["pane", "get", paneId])).pane as { agent_session?: unknown }).agent_session ===
          undefined,
        { timeoutMs: 10_000, description: "Herdr to let the exited child's session go" },
      );
      const manifestPath = source.store.pathFor(manifest.id);
      const before = readFileSync(manifestPath, "utf8");
      await source.herdr.restart({
        blindMs: 750,
        // While the server is down (the double has no such moment): unknown, and nothing is done.
        whileStopped: async () => {
          if (source.herdr.kind !== "real") return;
          const down = `Could not see the handoff's window: The Herdr server is not running: no herdr server is running at ${source.herdr.socketPath}; run \`herdr\` to start or attach it.`;
          const judged = await ladder.judge(source.recoveryDeps(), manifest.id);
          expect(judged.workspace).toEqual({ code: "unknown", message: down });
          const refused = await relaunchHandoff(source.relaunchDeps(), manifest.id, { focus: false });
          expect(refused).toMatchObject({ code: "refused", reason: "workspace_unknown" });
          expect(readFileSync(manifestPath, "utf8")).toBe(before);
        },
      });
      let report = await ladder.judge(source.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({ code: "no_child" });
      expect(report.workspace).toEqual({ code: "open" });
      expect(report.mux).toEqual(manifest.mux);
      expect(report.actions).toEqual(["relaunch", "focus", "remove"]);
      expect(readFileSync(manifestPath, "utf8")).toBe(before);

      const relaunched = await relaunchHandoff(source.relaunchDeps(), manifest.id, { focus: false });
      if (relaunched.code !== "running") throw new Error(relaunched.message);
      const pid = relaunched.manifest.child.pid ?? 0;
      expect(relaunched.manifest.mux).toEqual(manifest.mux);
      expect(relaunched.message).toBe(
        `Relaunched handoff ${manifest.id}: Pi pid ${pid} runs on ${manifest.child.sessionFile} in Herdr workspace ${herdrLocation(manifest).workspaceId} (pane ${paneId}).`,
      );
      expect(environOf(pid)).toContain(`PI_HANDOFF_ID=${manifest.id}`);
      expect(ladder.piProcessesIn(worktree)).toEqual([pid]);
      // Herdr typed no resume of its own into the pane, and holds the relaunched child's session now.
      expect(await source.herdr.read(paneId)).not.toContain("pi --session");
      await herdrSeesChild(relaunched.manifest, source.herdr);
      report = await ladder.judge(source.recoveryDeps(), manifest.id);
      expect(report.status).toEqual({
        code: "child_running",
        writers: [{ pid, evidence: ["recorded_pid", "marker", "cwd", "herdr_agent"] }],
      });
      expect(ladder.piProcessesIn(worktree)).toEqual([pid]);
      await killAndWait(pid);
    });
  });
});

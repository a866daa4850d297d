/**
 * Crash consistency: a handoff killed with SIGKILL at every step boundary
 * (`PI_HANDOFF_FAULT=kill-after:<point>`, src/faults.ts). The fork and launch points are
 * killed inside the real Pi (print mode); the others inside a separate process running the real
 * transaction with the stand-in child (fixtures/handoff-driver.ts). After each kill, with the
 * recovery CLI as a real process:
 * - the manifest parses and names where it stopped (state and history);
 * - the parent session is byte-identical;
 * - everything that exists (manifest, worktree, branch, window, child session) is accounted for by
 *   the handoff `pi-handoff list` shows, a window or session made but not yet recorded (the
 *   `window` and `session` points inside steps) included, found through the manifest's intent;
 * - the store holds only the dead process's action lock, which `pi-handoff prune --dry-run`
 *   explains and the next actor takes over (no temp file, no lock left behind);
 * - the verdict is the right one at once: the dead owner ends the "being set up" grace;
 * - relaunch or remove then succeeds.
 * And at random points inside steps (`kill-random:<seed>`, a few seeds): whatever exists is named
 * by `pi-handoff list`, whatever is in the store is explained by `prune --dry-run`, and after
 * remove and prune nothing is left that no manifest names.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KillPoint } from "../../src/faults.ts";
import type { HandoffState, Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { HandoffReport } from "../../src/inventory/report-schema.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { isProcessAlive, killAndWait } from "../support/recovery-rig.ts";
import {
  collectArtifacts,
  listInventory,
  newArtifacts,
  parentOf,
  runCli,
  runDriver,
  runProcess,
  STAND_IN,
  standInPiOnPath,
  unaccounted,
  type Artifacts,
} from "../support/reliability.ts";
import { startPrivateTmux, waitFor, type PrivateTmux, paneEnv } from "../support/tmux.ts";

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

interface Point {
  point: KillPoint;
  /** Who runs the handoff that is killed. */
  runner: "pi" | "driver";
  /** The state the manifest shows once things settled (for launch: after the child's acknowledgement). */
  state: HandoffState;
  history: HandoffState[];
  /** What the inventory says right after the kill. */
  status: (report: HandoffReport, manifest: Manifest) => void;
  /** What recovery does next; it must succeed. */
  then: "remove" | "relaunch";
}

const BEFORE_LAUNCH = ["provisioning", "provisioned", "forked"] as const;

function unfinished(step: string) {
  return (report: HandoffReport, manifest: Manifest) => {
    expect(report.status).toEqual({
      code: "unfinished",
      step,
      inProgress: false,
      owner: { pid: manifest.owner?.pid, alive: false },
    });
  };
}

/** A real Pi child holds the session lease (child/lease.ts); the driver's stand-in child does not. */
function childRunning(leased: boolean) {
  return (report: HandoffReport, manifest: Manifest) => {
    const processEvidence = ["recorded_pid", "marker", "cwd"] as const;
    const evidence = leased ? ["lease", ...processEvidence] : [...processEvidence];
    expect(report.status).toEqual({ code: "child_running", writers: [{ pid: manifest.child.pid, evidence }] });
  };
}

const POINTS: Point[] = [
  {
    point: "manifest",
    runner: "driver",
    state: "provisioning",
    history: ["provisioning"],
    status: unfinished("worktree"),
    then: "remove",
  },
  // Inside the worktree step: the window exists, the manifest has only its name (intent).
  {
    point: "window",
    runner: "driver",
    state: "provisioning",
    history: ["provisioning"],
    status: unfinished("worktree"),
    then: "remove",
  },
  {
    point: "worktree",
    runner: "driver",
    state: "provisioned",
    history: ["provisioning", "provisioned"],
    status: unfinished("fork"),
    then: "remove",
  },
  // Inside the fork step: the child session exists, the manifest has only its directory (intent).
  {
    point: "session",
    runner: "driver",
    state: "provisioned",
    history: ["provisioning", "provisioned"],
    status: unfinished("fork"),
    then: "remove",
  },
  {
    point: "fork",
    runner: "pi",
    state: "forked",
    history: [...BEFORE_LAUNCH],
    status: unfinished("launch"),
    then: "relaunch",
  },
  {
    point: "launching",
    runner: "driver",
    state: "launching",
    history: [...BEFORE_LAUNCH, "launching"],
    status: unfinished("confirm"),
    then: "relaunch",
  },
  {
    point: "launch",
    runner: "pi",
    state: "running",
    history: [...BEFORE_LAUNCH, "launching", "running"],
    status: childRunning(true),
    then: "remove",
  },
  {
    point: "confirm",
    runner: "driver",
    state: "running",
    history: [...BEFORE_LAUNCH, "launching", "running"],
    status: childRunning(false),
    then: "relaunch",
  },
  {
    point: "focus",
    runner: "driver",
    state: "running",
    history: [...BEFORE_LAUNCH, "launching", "running"],
    status: childRunning(false),
    then: "remove",
  },
];

describe("a handoff killed (SIGKILL) at every step boundary", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let store: ManifestStore;
  let parentFile: string;
  let tmuxEnv: Record<string, string>;
  /** A shell outside tmux, for the recovery CLI. */
  let cliEnv: Record<string, string>;
  /** The same, with the stand-in as `pi` (for relaunches of driver-made handoffs). */
  let standInCliEnv: Record<string, string>;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-crash-");
    repo = createTempRepo({ prefix: "phw-crash-git-", extraCommits: 1 });
    tmux = await startPrivateTmux({ env: sandbox.env });
    tmuxEnv = {
      ...sandbox.env,
      ...(await paneEnv(tmux)),
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000",
    };
    cliEnv = { ...sandbox.env, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000" };
    standInCliEnv = { ...cliEnv, PATH: `${standInPiOnPath(sandbox.dir)}:${cliEnv.PATH ?? ""}` };
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    parentFile = onlySessionFile(sandbox, repo.root);
    store = ManifestStore.forAgentDir(sandbox.agentDir);
  });

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  /** The handoff, killed at `point`: by the real Pi in print mode, or by the driver process. */
  async function killedHandoff(point: Point, branch: string) {
    const env = { ...tmuxEnv, PI_HANDOFF_FAULT: `kill-after:${point.point}` };
    if (point.runner === "pi") {
      return runProcess(
        NODE_BIN,
        [
          PI_CLI,
          "-p",
          "--session",
          parentFile,
          "--model",
          FAUX_MODEL,
          "--extension",
          EXTENSION_ENTRY,
          `/handoff-worktree ${branch}`,
        ],
        {
          env,
          cwd: repo.root,
          timeoutMs: 90_000,
        },
      );
    }
    return runDriver(
      {
        agentDir: sandbox.agentDir,
        parent: parentOf(parentFile, repo.root),
        tmux: { socketPath: tmux.socketPath, sessionId: tmux.sessionId },
        branch,
        piCommand: [NODE_BIN, STAND_IN],
        // As the real Pi mirrors its own flags: a real Pi relaunched on this session loads this package.
        extraPiArgs: ["--extension", EXTENSION_ENTRY],
      },
      env,
    );
  }

  async function manifestOf(id: string): Promise<Manifest> {
    const result = await store.read(id);
    if (!result.ok) throw new Error(result.message);
    return result.manifest;
  }

  async function artifacts(): Promise<Artifacts> {
    return collectArtifacts({ repo, agentDir: sandbox.agentDir, tmux, excludeSessions: [parentFile] });
  }

  it.each(POINTS.map((point) => [point.point, point.runner, point] as const))(
    "kill-after:%s (%s)",
    async (_name, _runner, point) => {
      const branch = `crash/${point.point}`;
      const parentBefore = sha256(parentFile);
      const before = await artifacts();

      const run = await killedHandoff(point, branch);
      expect({ status: run.status, signal: run.signal }, run.stderr).toEqual({ status: null, signal: "SIGKILL" });

      // The manifest parses and says where it stopped.
      const added = newArtifacts(before, await artifacts());
      expect(added.manifests).toHaveLength(1);
      const id = added.manifests[0] ?? "";
      const read = () => manifestOf(id);
      if (point.point === "launch") {
        // The parent died right after typing: the child Pi starts on its own and acknowledges.
        await waitFor(async () => (await read()).state === "running", {
          timeoutMs: 30_000,
          description: "the orphaned child's acknowledgement",
        });
      }
      const manifest = await read();
      expect(manifest.state).toBe(point.state);
      expect(manifest.history.map((entry) => entry.state)).toEqual(point.history);
      expect(manifest.branch).toBe(branch);
      expect(manifest.owner?.pid).toBeGreaterThan(0);
      expect(isProcessAlive(manifest.owner?.pid ?? 0)).toBe(false);
      if (point.point === "confirm") expect(manifest.focus).toBeUndefined();
      if (point.point === "focus") expect(manifest.focus).toEqual({ at: expect.any(String) });
      // Nothing half-written or still locked in the store (wait for the orphaned child's lock to be
      // released); the dead process's action lock stays until the next actor takes it over.
      await waitFor(() => readdirSync(store.dir).filter((name) => name.endsWith(".lock")).length === 0, {
        timeoutMs: 10_000,
        description: "no lock in the store",
      });
      expect(newArtifacts(before, await artifacts()).storeLeftovers).toEqual([`.${id}.action`]);
      await expectExplainedByPrune(
        [`.${id}.action`],
        `the action lock of handoff ${id}: handoff by pid ${manifest.owner?.pid} since `,
      );

      expect(sha256(parentFile)).toBe(parentBefore);

      // The inventory, as a real process: one new handoff, judged at once, and it accounts for everything.
      const inventory = await listInventory(cliEnv);
      const report = inventory.handoffs.find((handoff) => handoff.id === id);
      if (report === undefined) throw new Error(`pi-handoff list does not show ${id}`);
      expect(inventory.unreadable).toEqual([]);
      point.status(report, manifest);
      const now = newArtifacts(before, await artifacts());
      // (The store's entries are explained by prune, above.)
      expect(unaccounted({ ...now, storeLeftovers: [] }, [report])).toEqual([]);
      // And what exists is what the state promises (docs/launch-contract.md).
      const hasWorktree = point.point !== "manifest";
      const hasSession = !["manifest", "window", "worktree"].includes(point.point);
      expect(now.gitWorktrees).toEqual(hasWorktree ? [manifest.worktree.path] : []);
      expect(now.worktreeDirs).toEqual(hasWorktree ? [manifest.worktree.path] : []);
      expect(now.branches).toEqual(hasWorktree ? [branch] : []);
      // Named by the manifest, or (killed inside the step) found through its intent.
      expect(now.panes).toEqual(hasWorktree ? [report.mux.kind === "tmux" ? report.mux.paneId : "?"] : []);
      expect(now.sessions).toEqual(hasSession ? [report.childSessionFile] : []);
      const unrecorded = point.point === "window" ? ["window"] : point.point === "session" ? ["session"] : undefined;
      expect(report.unrecorded).toEqual(unrecorded);
      if (unrecorded === undefined && hasWorktree) expect(report.mux).toEqual(manifest.mux);
      if (unrecorded === undefined && hasSession) expect(report.childSessionFile).toBe(manifest.child.sessionFile);

      // A running child is someone's work: a person quits it before recovery acts.
      let actions = report.actions;
      if (report.status.code === "child_running") {
        expect(actions).toEqual(["focus"]);
        await killAndWait(manifest.child.pid ?? 0);
        actions = (await listInventory(cliEnv)).handoffs.find((handoff) => handoff.id === id)?.actions ?? [];
      }
      expect(actions).toContain(point.then);

      if (point.then === "relaunch") {
        // The real Pi for handoffs the real Pi made, the stand-in for the driver's.
        const relaunched = await runCli(["relaunch", id, "--no-focus"], point.runner === "pi" ? cliEnv : standInCliEnv);
        expect(relaunched.status, relaunched.stderr).toBe(0);
        const running = await read();
        expect(running.state).toBe("running");
        expect(running.child.confirmedBy).toBe("ack");
        expect(isProcessAlive(running.child.pid ?? 0)).toBe(true);
        expect(running.owner?.pid).not.toBe(manifest.owner?.pid);
        await waitFor(() => !existsSync(`${store.pathFor(id)}.lock`), { description: "the child's lock" });
        // The relaunch took the dead process's action lock over and released it.
        expect(newArtifacts(before, await artifacts()).storeLeftovers).toEqual([]);
        await killAndWait(running.child.pid ?? 0);
      } else {
        const removed = await runCli(["remove", id], cliEnv);
        expect(removed.status, removed.stderr).toBe(0);
        expect((await read()).state).toBe("removed");
        // Gone: the worktree and its window; kept: the branch (a removal never deletes one unasked).
        const left = newArtifacts(before, await artifacts());
        expect({ ...left, manifests: [] }).toEqual({
          manifests: [],
          storeLeftovers: [],
          gitWorktrees: [],
          worktreeDirs: [],
          branches: hasWorktree ? [branch] : [],
          panes: [],
          sessions: hasSession ? [report.childSessionFile] : [],
        });
        expect(existsSync(manifest.worktree.path)).toBe(false);
        // The record names what was unrecorded: the window it closed, the session it kept.
        const record = await read();
        if (hasWorktree) expect(record.mux).toEqual(report.mux);
        if (hasSession) expect(record.child.sessionFile).toBe(report.childSessionFile);
      }
      expect(sha256(parentFile)).toBe(parentBefore);
    },
  );

  /** `pi-handoff prune --dry-run` names each of `names` with a reason (containing `reason`, when given). */
  async function expectExplainedByPrune(names: readonly string[], reason?: string): Promise<void> {
    const dry = await runCli(["prune", "--dry-run"], cliEnv);
    expect(dry.status, dry.stderr).toBe(0);
    // An entry gone by now (a lock its holder released) is no longer in the store.
    for (const name of names.filter((entry) => existsSync(join(store.dir, entry)))) {
      const line = dry.stdout.split("\n").find((text) => text.includes(`${name}: `));
      expect(line, dry.stdout).toBeDefined();
      if (reason !== undefined) expect(line).toContain(reason);
    }
  }

  // Seeds whose delays (faults.ts, 0 to 2500 ms after the transaction starts) spread over the steps.
  it.each([8, 9, 12, 10])(
    "kill-random:%i:2500 (driver): everything named, the store explained, and cleaned up after",
    async (seed) => {
      const branch = `crash/random-${seed}`;
      const parentBefore = sha256(parentFile);
      const before = await artifacts();
      const run = await runDriver(
        {
          agentDir: sandbox.agentDir,
          parent: parentOf(parentFile, repo.root),
          tmux: { socketPath: tmux.socketPath, sessionId: tmux.sessionId },
          branch,
          piCommand: [NODE_BIN, STAND_IN],
        },
        { ...tmuxEnv, PI_HANDOFF_FAULT: `kill-random:${seed}:2500` },
      );
      // Killed, or it finished first (the delay came after the end): both must leave a consistent world.
      expect(run.signal === "SIGKILL" || run.result?.code === "running", run.stderr).toBe(true);

      const inventory = await listInventory(cliEnv, { all: true });
      expect(inventory.unreadable).toEqual([]);
      const now = newArtifacts(before, await artifacts());
      expect(now.manifests.length).toBeLessThanOrEqual(1);
      const reports = inventory.handoffs.filter((handoff) => now.manifests.includes(handoff.id));
      // Every worktree, branch, window and session is named by the handoff; every store entry by prune.
      expect(unaccounted({ ...now, storeLeftovers: [] }, reports)).toEqual([]);
      await expectExplainedByPrune(now.storeLeftovers);
      expect(sha256(parentFile)).toBe(parentBefore);

      // Clean up as a person would: quit a running child, remove, prune. The pane's launcher outlives
      // the killed driver, so a child can start after the listing above: re-list and quit it each time.
      const report = reports[0];
      // What the clean-up said, for the message of a window it left (seen once, under a loaded run).
      const said: string[] = [];
      if (report !== undefined) {
        let refusal = "";
        await waitFor(
          async () => {
            const current = (await listInventory(cliEnv, { all: true })).handoffs.find(
              (handoff) => handoff.id === report.id,
            );
            if (current?.status.code === "child_running")
              for (const writer of current.status.writers) await killAndWait(writer.pid);
            const removed = await runCli(["remove", report.id, "--force"], cliEnv);
            said.push(`remove: ${removed.stdout}${removed.stderr}`);
            if (removed.status === 0) return true;
            refusal = removed.stderr;
            expect(refusal).toContain("still has a live Pi");
            return false;
          },
          { timeoutMs: 20_000, intervalMs: 200, description: "remove to succeed once the child is quit" },
        );
      }
      // A lock the kill left inside the store's lock is swept once stale (proper-lockfile's rule, 10 s).
      await waitFor(
        async () => {
          const pruned = await runCli(["prune"], cliEnv);
          expect(pruned.status, pruned.stderr).toBe(0);
          return newArtifacts(before, await artifacts()).storeLeftovers.length === 0;
        },
        { timeoutMs: 30_000, intervalMs: 1_000, description: "prune to sweep the store" },
      );
      const after = newArtifacts(before, await artifacts());
      const leftPanes =
        after.panes.length === 0
          ? ""
          : await tmux.tmux([
              "list-panes",
              "-a",
              "-F",
              "#{pane_id} #{window_name} #{pane_current_path} #{pane_current_command}",
            ]);
      expect(after.panes, [leftPanes, JSON.stringify(reports), ...said].join("\n")).toEqual([]);
      expect(after.gitWorktrees).toEqual([]);
      expect(unaccounted(after, (await listInventory(cliEnv, { all: true })).handoffs)).toEqual([]);
    },
  );

  it("a handoff killed before its worktree claims the branch until prune retires it, then the name is free", async () => {
    const config = {
      agentDir: sandbox.agentDir,
      parent: parentOf(parentFile, repo.root),
      tmux: { socketPath: tmux.socketPath, sessionId: tmux.sessionId },
      branch: "crash/claimed",
      piCommand: [NODE_BIN, STAND_IN],
    };
    const killed = await runDriver(config, { ...tmuxEnv, PI_HANDOFF_FAULT: "kill-after:manifest" });
    expect(killed.signal).toBe("SIGKILL");
    const [claim] = (await listInventory(cliEnv)).handoffs.filter((handoff) => handoff.branch === "crash/claimed");
    if (claim === undefined) throw new Error("the killed handoff is not listed");
    expect(claim.actions).toEqual(["remove", "prune"]);

    const refused = await runDriver(config, tmuxEnv);
    expect(refused.result).toMatchObject({
      code: "refused",
      message: `Branch crash/claimed is already claimed by handoff ${claim.id} (provisioning); pick a new branch name.`,
    });

    const pruned = await runCli(["prune"], cliEnv);
    expect(pruned.status, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain(claim.id);
    expect((await manifestOf(claim.id)).state).toBe("removed");

    const retried = await runDriver(config, tmuxEnv);
    expect(retried.result?.code, retried.stderr).toBe("running");
    const running = await manifestOf(retried.result?.id ?? "");
    expect(running.branch).toBe("crash/claimed");
    await waitFor(() => !existsSync(`${store.pathFor(running.id)}.lock`), { description: "the child's lock" });
    await killAndWait(running.child.pid ?? 0);
  });
});

/**
 * End to end with the real Pi on Herdr after a restart (issue 26): three handoffs run real child Pi
 * in Herdr workspaces; one workspace is closed (its Pi ends with it), then Herdr restarts, restores
 * the other two workspaces and resumes a Pi in each by itself (a bare `pi --session <file>`). Only
 * the closed one is offered back; `pi-handoff relaunch --all` (a real process, outside Herdr)
 * recognises the two Pi Herdr resumed as the children (already running, never started twice) and
 * restores the third in a reopened workspace; a second run changes nothing. Runs on the double and,
 * in the herdr-real project, on the real Herdr.
 */
import { spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { InventoryReportSchema, type InventoryReport } from "../../src/inventory/report-schema.ts";
import { restoreOffer } from "../../src/relaunch/restore-offer.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, startHerdr, type HerdrServer } from "../support/herdr.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  PROJECT_ROOT,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { piProcessesIn } from "../support/recovery-ladder.ts";
import { isProcessAlive } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");
const BRANCHES = ["feat/herdr-a", "feat/herdr-b", "feat/herdr-c"];
const LIVE = new Set(["idle", "working", "blocked", "done"]);

describe(`after a Herdr restart (${HERDR_TARGET}): Herdr's own resumes count, the rest comes back once`, () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let herdr: HerdrServer;
  let parentPane: string;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-reboot-herdr-");
    repo = createTempRepo({ prefix: "phw-reboot-herdr-git-" });
    herdr = await startHerdr({ env: sandbox.env });
    parentPane = (await herdr.openWorkspace(repo.root, "parent")).paneId;
  });
  afterAll(async () => {
    // Herdr's resumed Pi and the relaunched ones end with the server.
    await herdr?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  function cli(args: readonly string[]) {
    // A shell outside Herdr: the socket and binary named, as after a reboot in another terminal.
    const run = spawnSync(NODE_BIN, [BIN, ...args], {
      cwd: repo.root,
      env: { ...sandbox.env, ...herdr.clientEnv, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000" },
      encoding: "utf8",
      timeout: 180_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
  }

  const inventory = (): InventoryReport => InventoryReportSchema.parse(JSON.parse(cli(["list", "--json"]).stdout));

  async function manifests(): Promise<Manifest[]> {
    return (await ManifestStore.forAgentDir(sandbox.agentDir).list()).flatMap((entry) =>
      entry.ok ? [entry.manifest] : [],
    );
  }

  function herdrIds(manifest: Manifest): { workspaceId: string; paneId: string } {
    if (manifest.mux.kind !== "herdr") throw new Error("expected a Herdr location");
    return { workspaceId: manifest.mux.workspaceId ?? "", paneId: manifest.mux.paneId ?? "" };
  }

  it("recognises Herdr's resumed children and restores only the one Herdr did not", { timeout: 300_000 }, async () => {
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    const parentFile = onlySessionFile(sandbox, repo.root);
    const paneEnv = await herdr.paneEnv(parentPane);
    for (const branch of BRANCHES) {
      const handoff = spawnSync(
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
          `/handoff-worktree ${branch} --no-focus`,
        ],
        {
          cwd: repo.root,
          env: { ...paneEnv, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000" },
          encoding: "utf8",
          timeout: 120_000,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      expect(handoff.stderr).toContain(`Handed off to branch ${branch}`);
      expect(handoff.status).toBe(0);
    }
    const first = await manifests();
    expect(first.map((m) => [m.branch, m.state])).toEqual(BRANCHES.map((branch) => [branch, "running"]));
    // Herdr keeps a pane's Pi session once it has seen the Pi that reported it (for its restore).
    for (const manifest of first) {
      await waitFor(
        async () => {
          const pane = (await herdr.result(["pane", "get", herdrIds(manifest).paneId])).pane as {
            agent_status: string;
            agent_session?: { value: string };
          };
          return LIVE.has(pane.agent_status) && pane.agent_session?.value === manifest.child.sessionFile;
        },
        { timeoutMs: 20_000, description: `Herdr to see ${manifest.branch}'s child` },
      );
    }
    const [a, b, c] = first;
    if (a === undefined || b === undefined || c === undefined) throw new Error("three handoffs expected");

    // C's workspace closed (its Pi ends with it); then the restart: Herdr restores A's and B's.
    expect((await herdr.herdr(["workspace", "close", herdrIds(c).workspaceId])).exitCode).toBe(0);
    await waitFor(() => !isProcessAlive(c.child.pid ?? 0), { timeoutMs: 15_000, description: "C's Pi to end" });
    await herdr.restart();
    // Herdr resumes a Pi in each restored pane by itself; the inventory sees each as the child.
    // (Herdr may name the agent's pid a moment before the process calls itself `pi`: wait for both.)
    const writersOf = (listed: InventoryReport["handoffs"], id: string): number[] => {
      const status = listed.find((h) => h.id === id)?.status;
      return status?.code === "child_running" ? status.writers.map((w) => w.pid) : [];
    };
    const resumed = await waitFor(
      () => {
        const listed = inventory().handoffs;
        const seen = [a, b].every((m) => {
          const writers = writersOf(listed, m.id);
          return writers.length === 1 && JSON.stringify(piProcessesIn(m.worktree.path)) === JSON.stringify(writers);
        });
        return seen && writersOf(listed, c.id).length === 0 ? listed : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, description: "the Pi Herdr resumed to be seen as A's and B's children" },
    );
    const [aPid, bPid] = [writersOf(resumed, a.id), writersOf(resumed, b.id)];
    expect(aPid).not.toContain(a.child.pid);
    expect(bPid).not.toContain(b.child.pid);

    // Only C is offered back: A and B run.
    const deps = createRecoveryDeps({ ...sandbox.env, ...herdr.clientEnv });
    const repoInfo = await deps.git.findRepository(repo.root);
    const offer = await restoreOffer(
      deps,
      {
        ...(repoInfo === undefined ? {} : { repoCommonDir: repoInfo.commonDir }),
        session: { sessionId: "parent", sessionFile: parentFile },
      },
      "/handoffs",
    );
    expect(offer).toEqual({
      code: "offer",
      ids: [c.id],
      message: `1 handoff has no Pi running, with its worktree and session intact (${c.branch}). To bring it back, run: /handoffs relaunch --all`,
    });

    const restored = cli(["relaunch", "--all"]);
    const now = await manifests();
    const cNow = now.find((m) => m.id === c.id);
    if (cNow === undefined) throw new Error("C's manifest is gone");
    const cPid = cNow.child.pid ?? 0;
    const { workspaceId, paneId } = herdrIds(cNow);
    const main = realpathSync(repo.root);
    expect(restored).toEqual({
      status: 0,
      stdout: [
        `already running  ${a.branch} (${a.id}): Pi pid ${aPid[0]} has its session.`,
        `already running  ${b.branch} (${b.id}): Pi pid ${bPid[0]} has its session.`,
        `restored         ${c.branch} (${c.id}): Pi pid ${cPid} runs on its session in Herdr workspace ${workspaceId} (pane ${paneId}).`,
        `3 handoffs of ${main}: 1 restored, 2 already running.`,
        "",
      ].join("\n"),
      stderr: "",
    });
    // One writer each, on its own session file; Herdr's resumed Pi untouched, no second one beside them.
    expect(cNow.state).toBe("running");
    expect(cNow.child.sessionFile).toBe(c.child.sessionFile);
    // Herdr has the worktree open in the workspace the relaunch recorded.
    const worktrees = (await herdr.result(["worktree", "list", "--cwd", repo.root])).worktrees as {
      path: string;
      open_workspace_id?: string;
    }[];
    expect(worktrees.find((w) => w.path === c.worktree.path)?.open_workspace_id).toBe(workspaceId);
    expect(piProcessesIn(a.worktree.path)).toEqual(aPid);
    expect(piProcessesIn(b.worktree.path)).toEqual(bPid);
    expect(piProcessesIn(c.worktree.path)).toEqual([cPid]);
    const after = inventory().handoffs.map((h) => [
      h.id,
      h.status.code === "child_running" ? h.status.writers.map((w) => w.pid) : h.status.code,
    ]);
    expect(after).toEqual([
      [a.id, aPid],
      [b.id, bPid],
      [c.id, [cPid]],
    ]);

    // A second run right after: nothing to do, in one line.
    expect(cli(["relaunch", "--all"])).toEqual({
      status: 0,
      stdout: `Nothing to relaunch: all 3 handoffs of ${main} already run a Pi on their sessions.\n`,
      stderr: "",
    });
    expect(piProcessesIn(c.worktree.path)).toEqual([cPid]);
  });
});

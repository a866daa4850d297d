/**
 * End to end with the real Pi after a "reboot" (issue 26): three handoffs run real child Pi in a
 * private tmux server; every Pi is killed and the tmux server too; a tmux server is started again
 * on the same socket (as a user does after a reboot: it numbers its panes from %0 again), and the
 * parent Pi started there offers, once, to bring them back. `pi-handoff relaunch --all` (a real
 * process, in that tmux) restores all three on their own session files, one writer each, in
 * windows of the new server; a second run changes nothing and says so in one line.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionLease } from "../../src/child/lease.ts";
import { launcherFiles } from "../../src/child/launcher-file.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { InventoryReportSchema } from "../../src/inventory/report-schema.ts";
import { offersDir, RestoreOfferSchema, restoreOffer } from "../../src/relaunch/restore-offer.ts";
import { startTmuxServer, type TmuxServer } from "../../scripts/lib/private-tmux.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  PROJECT_ROOT,
  piTuiCommand,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { isProcessAlive, killAndWait } from "../support/recovery-rig.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";
import { PI_READY, waitForScreen, type PaneDriver } from "../support/tui.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");
const BRANCHES = ["feat/reboot-a", "feat/reboot-b", "feat/reboot-c"];

describe("after a reboot: one offer, then relaunch --all brings every handoff back, once", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let again: TmuxServer | undefined;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-reboot-");
    repo = createTempRepo({ prefix: "phw-reboot-git-" });
    tmux = await startPrivateTmux({ env: sandbox.env });
  });
  afterAll(async () => {
    await again?.kill();
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  /** `$TMUX` and `$TMUX_PANE` of a pane of the server now on the socket. */
  async function inTmux(run: (args: string[]) => Promise<string>, pane: string): Promise<Record<string, string>> {
    const serverPid = (await run(["display-message", "-p", "#{pid}"])).trim();
    return { TMUX: `${tmux.socketPath},${serverPid},0`, TMUX_PANE: pane };
  }

  function cli(args: readonly string[], env: Record<string, string>) {
    const run = spawnSync(NODE_BIN, [BIN, ...args], {
      cwd: repo.root,
      env: { ...sandbox.env, ...env, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000" },
      encoding: "utf8",
      timeout: 180_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
  }

  async function manifests(): Promise<Manifest[]> {
    const store = ManifestStore.forAgentDir(sandbox.agentDir);
    return (await store.list()).flatMap((entry) => (entry.ok ? [entry.manifest] : []));
  }

  it("restores three handoffs whose Pi and tmux server were killed", { timeout: 300_000 }, async () => {
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    const parentFile = onlySessionFile(sandbox, repo.root);
    const before = await inTmux(tmux.tmux, tmux.firstPaneId);
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
          env: { ...sandbox.env, ...before, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000" },
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
    const firstPids = first.map((m) => m.child.pid ?? 0);

    // The "reboot": every Pi killed, then the tmux server; tmux starts again on the same socket.
    for (const pid of firstPids) await killAndWait(pid);
    await tmux.tmux(["kill-server"]);
    const oldServer = Number(before.TMUX?.split(",")[1]);
    await waitFor(() => !isProcessAlive(oldServer), { timeoutMs: 10_000, description: "the old tmux server to exit" });
    again = await startTmuxServer({
      socketPath: tmux.socketPath,
      env: tmux.env,
      sessionName: "test",
      width: 200,
      height: 50,
      shell: ["/bin/bash", "--norc", "--noprofile"],
    });
    const parentPane = again.firstPaneId;
    const after = await inTmux(again.run, parentPane);
    // The same pane ids as the old windows are on the new server soon: they must not pass for them.
    expect(parentPane).toBe("%0");

    // The parent Pi, started again in the new tmux, offers once.
    const server = again;
    const pane: PaneDriver = {
      name: parentPane,
      read: () => server.run(["capture-pane", "-p", "-J", "-t", parentPane]),
      type: async (text) => {
        await server.run(["send-keys", "-t", parentPane, "-l", text]);
      },
      enter: async () => {
        await server.run(["send-keys", "-t", parentPane, "Enter"]);
      },
    };
    await pane.type(piTuiCommand(repo.root, ["--session", parentFile], { keepShell: true }));
    await pane.enter();
    await waitForScreen(pane, PI_READY, "the parent Pi", 30_000);
    const offered = await waitForScreen(pane, /3 handoffs have no Pi running/, "the offer", 30_000);
    const flat = offered.replace(/\s+/g, " ");
    expect(flat).toContain(
      `3 handoffs have no Pi running, with their worktree and session intact (${BRANCHES.join(", ")}). To bring them all back, run: /handoffs relaunch --all`,
    );
    expect(flat.split("have no Pi running").length - 1).toBe(1);
    // Exactly one offer recorded, for exactly these three; the same set is not offered again.
    const recorded = readdirSync(offersDir(sandbox.agentDir)).filter((name) => name.endsWith(".json"));
    expect(recorded).toHaveLength(1);
    const record = RestoreOfferSchema.parse(
      JSON.parse(readFileSync(join(offersDir(sandbox.agentDir), recorded[0] ?? ""), "utf8")),
    );
    expect(record.ids).toEqual(first.map((m) => m.id));
    const deps = createRecoveryDeps({ ...sandbox.env });
    const repoInfo = await deps.git.findRepository(repo.root);
    expect(
      await restoreOffer(
        deps,
        {
          ...(repoInfo === undefined ? {} : { repoCommonDir: repoInfo.commonDir }),
          session: { sessionId: "another", sessionFile: "/nowhere.jsonl" },
        },
        "/handoffs",
      ),
    ).toEqual({ code: "none", why: "offered_before" });
    // Offering starts nothing.
    expect((await manifests()).map((m) => m.child.pid)).toEqual(firstPids);

    // One step back, run in the new tmux.
    const restored = cli(["relaunch", "--all"], after);
    const main = realpathSync(repo.root);
    const ids = first.map((m) => m.id);
    const now = await manifests();
    expect(restored.stderr).toBe("");
    expect(restored.stdout).toBe(
      [
        ...now.map(
          (m, index) =>
            `restored  ${BRANCHES[index]} (${ids[index]}): Pi pid ${m.child.pid} runs on its session in tmux window ${m.mux.kind === "tmux" ? m.mux.windowId : "?"} (pane ${m.mux.kind === "tmux" ? m.mux.paneId : "?"}).`,
        ),
        `3 handoffs of ${main}: 3 restored.`,
        "",
      ].join("\n"),
    );
    expect(restored.status).toBe(0);

    // Three children, one writer each, on their own session files, in windows of the new server.
    const newServer = `${(await again.run(["display-message", "-p", "#{pid}:#{start_time}"])).trim()}`;
    const pids = now.map((m) => m.child.pid ?? 0);
    expect(new Set(pids).size).toBe(3);
    for (const [index, m] of now.entries()) {
      const pid = pids[index] ?? 0;
      expect(firstPids).not.toContain(pid);
      expect(isProcessAlive(pid)).toBe(true);
      expect(m.state).toBe("running");
      expect(m.child.sessionFile).toBe(first[index]?.child.sessionFile);
      expect(m.history.at(-1)?.note).toBe(`acknowledged by pid ${pid}`);
      expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("pi");
      expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(m.worktree.path);
      expect(await readSessionLease(sandbox.agentDir, m.child.sessionFile ?? "")).toMatchObject({ state: "live", pid });
      expect(m.mux).toMatchObject({ kind: "tmux", socketPath: tmux.socketPath, server: newServer });
      expect(m.mux.kind === "tmux" ? m.mux.paneId : "").not.toBe(parentPane);
      // Each new window's launcher warmed its Pi up while the relaunch prepared (decision 0019).
      const launcher = launcherFiles(ManifestStore.forAgentDir(sandbox.agentDir).pathFor(m.id));
      const token = readFileSync(launcher.started, "utf8").split(" ")[0];
      expect(readFileSync(launcher.warmed, "utf8")).toBe(`${token} ${pid}\n`);
    }
    const listed = InventoryReportSchema.parse(JSON.parse(cli(["list", "--json"], after).stdout));
    expect(listed.handoffs.map((h) => h.status)).toEqual(
      pids.map((pid) => ({ code: "child_running", writers: [expect.objectContaining({ pid })] })),
    );

    // A second run right after: nothing to do, one line, nothing changed.
    const second = cli(["relaunch", "--all"], after);
    expect(second).toEqual({
      status: 0,
      stdout: `Nothing to relaunch: all 3 handoffs of ${main} already run a Pi on their sessions.\n`,
      stderr: "",
    });
    expect((await manifests()).map((m) => [m.child.pid, m.history.length])).toEqual(
      now.map((m) => [m.child.pid, m.history.length]),
    );
  });
});

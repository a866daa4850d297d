/**
 * End to end on Herdr: the real Pi (faux provider, offline) runs in a Herdr pane (HERDR_ENV=1, its
 * own socket and binary, no $TMUX) and hands a real conversation off to a real child Pi in a new
 * Herdr workspace: the scenario of test/support/handoff-scenario.ts, plus what Herdr records (the
 * location, the worktree's workspace, the pane's agent session, the focused workspace). It runs on
 * the real Herdr (herdr-real project) and on the double, whose call log also shows the order of the
 * Herdr calls the handoff made. Then print-mode runs "inside" a pane: a refusal when Herdr's server
 * is down, and (on the double) an injected Herdr fault that leaves a retained, recorded handoff.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { runHandoffScenario, useHandoffWorld } from "../support/handoff-scenario.ts";
import { asDouble, forDoubleOnly, HERDR_TARGET, onTheRealHerdrWhenBuilt, type HerdrCall } from "../support/herdr.ts";
import { startHerdrRig } from "../support/mux-rig.ts";
import { EXTENSION_ENTRY, FAUX_MODEL, NODE_BIN, PI_CLI, runPiPrint } from "../support/pi.ts";
import { waitFor } from "../support/tmux.ts";
import { sha256OfFile } from "../support/tui.ts";

/** Each new pane's shell start-up job holds the terminal this long: the launch must wait it out. */
const SHELL_DELAY_MS = 800;

function command(call: HerdrCall): string {
  return call.argv.slice(0, 2).join(" ");
}

describe(`/handoff-worktree on Herdr (${HERDR_TARGET}) with the real Pi`, () => {
  const world = useHandoffWorld("phw-pi-herdr-", (sandbox, repo) =>
    startHerdrRig(sandbox, repo, { shellDelayMs: SHELL_DELAY_MS }),
  );

  /** The Herdr calls the handoff made, in order: create, poll the new pane's shell, type, focus after the ack. */
  function expectHandoffCalls(manifest: Manifest, ackAt: number): void {
    const { paneId, workspaceId } = world.rig.locate(manifest);
    const calls = asDouble(world.rig.herdr)
      .calls()
      .filter((call) => call.argv[0] !== "pane" || !["read", "send-text", "send-keys"].includes(call.argv[1] ?? ""));
    const createAt = calls.findIndex((call) => command(call) === "worktree create" && !call.argv.includes("--help"));
    const polls = calls
      .map((call, i) => ({ call, i }))
      .filter(({ call }) => command(call) === "pane process-info" && call.argv.includes(paneId ?? ""));
    const runAt = calls.findIndex((call) => command(call) === "pane run" && call.argv[2] === paneId);
    const focusAt = calls.findIndex((call) => command(call) === "workspace focus" && call.argv[2] === workspaceId);
    expect(createAt).toBeGreaterThanOrEqual(0);
    expect(polls.length).toBeGreaterThanOrEqual(3);
    expect(polls[0]?.i).toBeGreaterThan(createAt);
    expect(polls.filter(({ i }) => i < runAt).length).toBeGreaterThanOrEqual(3);
    expect(runAt).toBeGreaterThan(createAt);
    expect(focusAt).toBeGreaterThan(runAt);
    const focusCall = calls[focusAt];
    expect(Date.parse(focusCall?.at ?? "")).toBeGreaterThanOrEqual(ackAt);
    expect(calls[createAt]?.argv).toEqual(
      expect.arrayContaining([
        "--cwd",
        world.repo.root,
        "--branch",
        "feat/e2e",
        "--base",
        world.baseSha,
        "--path",
        manifest.worktree.path,
        "--no-focus",
      ]),
    );
    expect(calls[runAt]?.argv[3]).toBe(manifest.child.command);
    // Never --json on a pane or workspace command (it is an unknown option there).
    expect(
      calls.filter((call) => ["pane", "workspace"].includes(call.argv[0] ?? "") && call.argv.includes("--json")),
    ).toEqual([]);
  }

  // The double's call log adds the order of the calls; where the real Herdr is built, the scenario runs there.
  onTheRealHerdrWhenBuilt(() => {
    it("forks the active branch into a Herdr worktree, starts the child, confirms, then focuses its workspace", async () => {
      const { herdr, parentWorkspaceId } = world.rig;
      const focused = async (workspaceId: string): Promise<boolean> =>
        ((await herdr.result(["workspace", "get", workspaceId])).workspace as { focused: boolean }).focused;
      await runHandoffScenario(world, {
        windowLine: /Window: Herdr workspace w\w+ \(pane w\w+:p1\), Pi pid \d+/,
        warmStart: false,
        // Herdr's commands, with this handoff's own ids.
        nextStep: (manifest) =>
          `Next: you are in its workspace now; come back with !!herdr workspace focus ${parentWorkspaceId} typed in its Pi, return with /handoffs here.`,
        beforeHandoff: () => {
          if (herdr.kind === "double") herdr.clearCalls();
        },
        // The Herdr location, a new workspace; Herdr made the worktree and has it open there.
        location: async (manifest) => {
          const { workspaceId } = world.rig.locate(manifest);
          expect(manifest.mux).toEqual({
            kind: "herdr",
            socketPath: herdr.socketPath,
            workspaceId,
            tabId: `${workspaceId}:t1`,
            paneId: `${workspaceId}:p1`,
          });
          expect(workspaceId).not.toBe(parentWorkspaceId);
          const herdrList = (await herdr.result(["worktree", "list", "--cwd", world.repo.root])).worktrees as {
            path: string;
            open_workspace_id?: string;
          }[];
          expect(herdrList.find((w) => w.path === manifest.worktree.path)?.open_workspace_id).toBe(workspaceId);
        },
        // Inside Herdr and not tmux; Herdr's agent hint, and the session reported to Herdr after the acknowledgement (for its restore).
        childEnvironment: async (manifest, childEnv) => {
          const { paneId } = world.rig.locate(manifest);
          expect(childEnv).toContain(`HERDR_PANE_ID=${paneId}`);
          expect(childEnv.filter((line) => line.startsWith("TMUX"))).toEqual([]);
          expect(childEnv).toContain("HERDR_AGENT=pi");
          // Herdr calls a newly seen agent unknown for its first 3 s (src/pane/agent_detection.rs).
          const childPaneInfo = await waitFor(
            async () => {
              const pane = (await herdr.result(["pane", "get", paneId ?? ""])).pane as {
                agent_session?: unknown;
                agent_status: string;
              };
              return pane.agent_status !== "unknown" ? pane : undefined;
            },
            { timeoutMs: 15_000, description: "Herdr to see the child Pi" },
          );
          expect(childPaneInfo.agent_session).toEqual({
            source: "herdr:pi",
            agent: "pi",
            kind: "path",
            value: manifest.child.sessionFile,
          });
          expect(childPaneInfo.agent_status).toBe("idle");
        },
        // The child's workspace is the focused one, and the calls came in order.
        focused: async (manifest, ackAt) => {
          expect(await focused(world.rig.locate(manifest).workspaceId ?? "")).toBe(true);
          expect(await focused(parentWorkspaceId)).toBe(false);
          // The order of the calls, from the double's log (the real Herdr keeps none).
          if (herdr.kind === "double") expectHandoffCalls(manifest, ackAt);
        },
      });
    });
  });

  describe("print mode inside a Herdr pane", () => {
    let parentFile: string;
    let store: ManifestStore;

    beforeAll(() => {
      parentFile = join(world.sandbox.dir, "print-sessions", "parent.jsonl");
      runPiPrint(world.sandbox, world.repo.root, ["--model", FAUX_MODEL, "--session", parentFile, "print question"]);
      store = ManifestStore.forAgentDir(world.sandbox.agentDir);
    });

    async function handoff(args: string, env: Record<string, string>): Promise<{ status: number; stderr: string }> {
      const run = spawnSync(
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
          `/handoff-worktree ${args}`,
        ],
        {
          cwd: world.repo.root,
          env: {
            ...(await world.rig.herdr.paneEnv(world.rig.parentPaneId)),
            PI_HANDOFF_CONFIRM_TIMEOUT_MS: "20000",
            ...env,
          },
          encoding: "utf8",
          timeout: 120_000,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      return { status: run.status ?? -1, stderr: run.stderr };
    }

    it("refuses in one sentence, before writing anything, when Herdr's server is not running", async () => {
      const socket = join(world.sandbox.dir, "stopped-herdr", "herdr.sock");
      const before = (await store.list()).map((e) => e.id);
      const branchesBefore = world.repo.run(["branch", "--list", "--format=%(refname)"]);
      const run = await handoff("feat/no-server", { HERDR_SOCKET_PATH: socket });
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        `Herdr's server is not running at ${socket}; start Herdr (or hand off with --mux tmux from a tmux pane), then try again.`,
      );
      expect((await store.list()).map((e) => e.id)).toEqual(before);
      expect(world.repo.run(["branch", "--list", "--format=%(refname)"])).toBe(branchesBefore);
    });

    // An injected fault: the double's.
    forDoubleOnly(() => {
      it("a checkout Herdr made without a workspace is retained and recorded, and the failure is one sentence", async () => {
        asDouble(world.rig.herdr).setFaults({
          "worktree create": { error: "worktree_open_failed", message: "pty spawn failed" },
        });
        try {
          const before = (await store.list()).map((e) => e.id);
          const parentHash = sha256OfFile(parentFile);
          const run = await handoff("fault/herdr-open", {});
          expect(run.status).toBe(1);
          const added = (await store.list()).filter((e) => !before.includes(e.id));
          expect(added).toHaveLength(1);
          const entry = added[0];
          if (entry === undefined || !entry.ok) throw new Error("the new manifest did not decode");
          const manifest = entry.manifest;
          const worktree = join(world.repo.dir, "repo.worktrees", "fault-herdr-open");
          expect(manifest.state).toBe("failed");
          expect(manifest.error?.step).toBe("worktree");
          expect(manifest.history.map((h) => h.state)).toEqual(["provisioning", "failed"]);
          expect(manifest.worktree.path).toBe(worktree);
          expect(manifest.mux).toEqual({ kind: "herdr", socketPath: world.rig.herdr.socketPath });
          expect(world.repo.run(["rev-parse", "--abbrev-ref", "HEAD"], { cwd: worktree })).toBe("fault/herdr-open");
          const sentence = `Herdr created the worktree at ${worktree} but could not open a workspace for it (pty spawn failed).`;
          expect(manifest.error?.message).toBe(sentence);
          expect(run.stderr).toContain(`The handoff failed at the worktree step: ${sentence}`);
          expect(run.stderr).toContain(`Kept (nothing was deleted): worktree ${worktree} on branch fault/herdr-open`);
          expect(run.stderr).toContain(`Manifest: handoff ${manifest.id}.`);
          // No session was forked, so nothing to relaunch: inspect, or remove.
          expect(run.stderr).toContain(
            `Next: see what exists with /handoffs here, or pi-handoff inspect ${manifest.id} in a shell; pi-handoff remove ${manifest.id} cleans up (keeps the branch, refuses uncommitted work).`,
          );
          expect(sha256OfFile(parentFile)).toBe(parentHash);
        } finally {
          asDouble(world.rig.herdr).clearFaults();
        }
      });
    });
  });
});

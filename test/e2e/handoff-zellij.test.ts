/**
 * End to end on the real zellij: the real Pi (faux provider, offline) in a pane of a zellij session
 * hands a real conversation off to a real child Pi in a new tab, the scenario of
 * test/support/handoff-scenario.ts, plus what zellij shows (the child's tab the one the client
 * shows, only after the child acknowledged; the parent's tab kept with --no-focus).
 */
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { handOffUnfocused, runHandoffScenario, useHandoffWorld } from "../support/handoff-scenario.ts";
import { startZellijRig, zellijPane } from "../support/mux-rig.ts";
import { piTuiCommand, runPiPrint, FAUX_MODEL } from "../support/pi.ts";
import { PI_READY, waitForScreen } from "../support/tui.ts";
import { waitFor } from "../support/tmux.ts";

describe("/handoff-worktree on zellij with the real Pi", () => {
  const world = useHandoffWorld("phw-pi-zj-", (sandbox) => startZellijRig(sandbox));

  it("forks the active branch into a worktree, starts the child in a new tab, confirms, then focuses it", async () => {
    const { zellij } = world.rig;
    await runHandoffScenario(world, {
      windowLine: /Window: zellij tab \d+ of session tests \(pane terminal_\d+\), Pi pid \d+/,
      warmStart: true,
      nextStep: (manifest) =>
        `Next: you are in its tab now; come back with your multiplexer's switch key, return with /handoffs here.`,
      location: async (manifest) => {
        const location = world.rig.locate(manifest);
        expect(location).toEqual({
          kind: "zellij",
          socketDir: zellij.socketDir,
          sessionName: "tests",
          tabId: expect.stringMatching(/^\d+$/),
          paneId: expect.stringMatching(/^terminal_\d+$/),
        });
        // The tab is named like the tmux window, and its one terminal pane is in the worktree.
        const panes = (await zellij.panes()).filter((pane) => String(pane.tab_id) === location.tabId);
        expect(panes.map((pane) => [`terminal_${pane.id}`, pane.tab_name, pane.pane_cwd])).toEqual([
          [location.paneId, "feat/e2e", manifest.worktree.path],
        ]);
      },
      focused: async (manifest) => {
        // The client switches a moment after the action returns.
        const tabId = world.rig.locate(manifest).tabId;
        await waitFor(async () => String(await zellij.focusedTabId()) === tabId, {
          timeoutMs: 5_000,
          description: `the client to show tab ${tabId}`,
        });
      },
    });
  });

  it("--no-focus leaves the parent's tab in front", async () => {
    const { sandbox, repo, rig } = world;
    const sessions = `${sandbox.dir}/nofocus-sessions`;
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session-dir", sessions, "a question"]);
    const [file] = readdirSync(sessions).map((name) => `${sessions}/${name}`);
    if (file === undefined) throw new Error("no parent session");
    // A second parent in a tab of its own, in front.
    const made = await rig.zellij.zellij(["action", "new-tab", "--name", "second", "--cwd", repo.root]);
    expect(made.exitCode).toBe(0);
    // Found by its name: on a loaded machine zellij's answer to new-tab can come back empty.
    const pane = await waitFor(async () => (await rig.zellij.panes()).find((entry) => entry.tab_name === "second"), {
      description: "the second parent's tab",
    });
    const tabId = pane.tab_id;
    const parentPane = zellijPane(rig.zellij, `terminal_${pane.id}`);
    await waitFor(async () => (await rig.zellij.focusedTabId()) === tabId, { description: "the second tab in front" });
    await waitForScreen(parentPane, /\$\s*$/m, "the second tab's shell prompt");
    await parentPane.type(piTuiCommand(repo.root, ["--session", file, "--session-dir", sessions]));
    await parentPane.enter();
    await waitForScreen(parentPane, PI_READY, "the second parent TUI");
    const manifest = await handOffUnfocused(parentPane, sandbox.agentDir, "feat/quiet");
    expect(manifest.focus).toBeUndefined();
    expect(await rig.zellij.focusedTabId()).toBe(tabId);
    expect(rig.locate(manifest).tabId).not.toBe(String(tabId));
  });
});

/**
 * End to end: the real Pi (faux provider, offline) in a real tmux server hands a real
 * conversation off to a real child Pi in a new window: the scenario of
 * test/support/handoff-scenario.ts, plus what tmux shows (the child's window active). Then a busy
 * agent: the handoff waits for its turn to finish.
 */
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { handOffUnfocused, runHandoffScenario, useHandoffWorld } from "../support/handoff-scenario.ts";
import { startTmuxRig } from "../support/mux-rig.ts";
import { piTuiCommand, readEntries, runPiPrint, FAUX_MODEL } from "../support/pi.ts";
import { entriesOnly, PI_READY, submitLine, textOf, tmuxPane, waitForScreen } from "../support/tui.ts";

describe("/handoff-worktree on tmux with the real Pi", () => {
  const world = useHandoffWorld("phw-pi-", (sandbox) => startTmuxRig(sandbox));
  /** tmux's `window_active` of the window a handoff's child runs in: "1" or "0". */
  const childWindowActive = async (manifest: Manifest): Promise<string> =>
    (await world.rig.tmux.tmux(["display-message", "-p", "-t", world.rig.locate(manifest).windowId ?? "", "#{window_active}"])).trim();

  it("forks the active branch into a worktree, starts the child, confirms, then focuses", async () => {
    const { parentPaneId } = world.rig;
    await runHandoffScenario(world, {
      windowLine: /Window: tmux window @\d+ \(pane %\d+\), Pi pid \d+/,
      nextStep: (manifest) =>
        `Next: you are in its window now; come back with tmux select-window -t ${parentPaneId}, return with tmux select-window -t ${world.rig.locate(manifest).windowId}.`,
      // The child's window is the active one.
      focused: async (manifest) => {
        expect(await childWindowActive(manifest)).toBe("1");
      },
    });
  });

  it("waits for a busy agent, then hands off from the turn it finished", async () => {
    const { sandbox, repo, rig: { tmux } } = world;
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session-dir", `${sandbox.dir}/busy-sessions`, "opening question"]);
    const [file] = readdirSync(`${sandbox.dir}/busy-sessions`).map((name) => `${sandbox.dir}/busy-sessions/${name}`);
    if (file === undefined) throw new Error("no busy parent session");
    const pane = tmuxPane(tmux, (await tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", `${tmux.sessionId}:`])).trim());
    await pane.type(piTuiCommand(repo.root, ["--session", file, "--session-dir", `${sandbox.dir}/busy-sessions`]));
    await pane.enter();
    await waitForScreen(pane, PI_READY, "the busy parent TUI");
    // The faux model takes 3 s to answer anything that mentions "slow"; hand off while it works.
    await submitLine(pane, "a slow question", /Working/);
    const manifest = await handOffUnfocused(pane, sandbox.agentDir, "feat/busy");
    // The handoff started from the answer to the slow question: the turn finished first.
    const answer = entriesOnly(readEntries(file)).find((e) => e.type === "message" && textOf(e.message) === "faux reply to: a slow question");
    expect(answer).toBeDefined();
    expect(manifest.parent.leafId).toBe(answer?.id);
    expect(Date.parse(manifest.createdAt)).toBeGreaterThanOrEqual(Date.parse(answer?.timestamp ?? ""));
    // The custom session dir is kept for the child.
    expect(manifest.child.sessionFile?.startsWith(`${sandbox.dir}/busy-sessions/`)).toBe(true);
    // --no-focus: the parent's window stays the active one.
    expect(manifest.focus).toBeUndefined();
    expect(await childWindowActive(manifest)).toBe("0");
  });
});

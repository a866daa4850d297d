/**
 * End to end: the real Pi (faux provider, offline) in a real tmux server hands a real
 * conversation off to a real child Pi in a new window: the scenario of
 * test/support/handoff-scenario.ts, plus what tmux shows (the child's window active). Then a busy
 * agent: the handoff waits for its turn to finish.
 */
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { handOffUnfocused, runHandoffScenario, useHandoffWorld } from "../support/handoff-scenario.ts";
import { startTmuxRig } from "../support/mux-rig.ts";
import { piTuiCommand, readEntries, runPiPrint, FAUX_MODEL } from "../support/pi.ts";
import { waitFor } from "../support/tmux.ts";
import {
  entriesOnly,
  HANDOFF_STARTED,
  PI_READY,
  submitLine,
  textOf,
  tmuxPane,
  waitForScreen,
  type PaneDriver,
} from "../support/tui.ts";

/**
 * Waits until Pi's editor takes typed text: Pi draws its footer before its input handlers are set
 * up, and on a loaded machine what is typed in between can be lost. A probe is typed until it
 * shows, then erased.
 */
async function editorTakesInput(pane: PaneDriver & { backspace(): Promise<void> }): Promise<void> {
  const probe = "zqzq";
  let polls = 0;
  await waitFor(
    async () => {
      if ((await pane.read()).includes(probe)) return true;
      // Typed again only after 5 s without it showing (lost, not slow); extra copies are erased below.
      if (polls++ % 5 === 0) await pane.type(probe);
      return undefined;
    },
    { timeoutMs: 30_000, intervalMs: 1_000, description: "the editor to take typed text" },
  );
  const leftover = /zq|^\s*[zq]+\s*$/m;
  await waitFor(
    async () => {
      if (!leftover.test(await pane.read())) return true;
      await pane.backspace();
      return undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, description: "the probe to be erased" },
  );
}

/** Pi's completion menu on the screen: its highlighted row. */
const COMPLETION_MENU = /^\s*→ /m;

/**
 * Types `line` as a person does, up to its last character (the menu offers the last word then),
 * then the last character; waits until the whole line shows and no menu does, and presses Enter once.
 */
async function typeWholeAndEnterOnce(
  pane: PaneDriver & { backspace(): Promise<void> },
  line: string,
  offered: string,
): Promise<void> {
  await editorTakesInput(pane);
  await pane.type(line.slice(0, -1));
  await waitForScreen(
    pane,
    new RegExp(`→ ${offered.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")}`),
    `the menu offering ${offered}`,
  );
  await pane.type(line.slice(-1));
  let last = "";
  await waitFor(
    async () => {
      last = await pane.read();
      return last.includes(line) && !COMPLETION_MENU.test(last);
    },
    { timeoutMs: 10_000, description: `${line} typed out whole with no completion menu` },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\nScreen:\n${last}`);
  });
  await pane.enter();
}

describe("/handoff-worktree on tmux with the real Pi", () => {
  const world = useHandoffWorld("phw-pi-", (sandbox) => startTmuxRig(sandbox));
  /** tmux's `window_active` of the window a handoff's child runs in: "1" or "0". */
  const childWindowActive = async (manifest: Manifest): Promise<string> =>
    (
      await world.rig.tmux.tmux([
        "display-message",
        "-p",
        "-t",
        world.rig.locate(manifest).windowId ?? "",
        "#{window_active}",
      ])
    ).trim();

  it("forks the active branch into a worktree, starts the child, confirms, then focuses", async () => {
    const { parentPaneId } = world.rig;
    /** The server's answer for a target, as the keys are read from it. */
    const shown = (target: string, format: string): string =>
      execFileSync("tmux", ["-S", world.rig.tmux.socketPath, "display-message", "-p", "-t", target, format], {
        encoding: "utf8",
        timeout: 10_000,
      }).trim();
    await runHandoffScenario(world, {
      windowLine: /Window: tmux window @\d+ \(pane %\d+\), Pi pid \d+/,
      warmStart: true,
      // A user's own prefix: the way back and forth is that key and the window's number, typed
      // where the person is (inside a Pi), not a tmux command line.
      beforeHandoff: () => {
        execFileSync("tmux", ["-S", world.rig.tmux.socketPath, "set-option", "-g", "prefix", "C-a"], {
          timeout: 10_000,
        });
      },
      nextStep: (manifest) =>
        `Next: you are in its window now; come back with Ctrl-a ${shown(parentPaneId, "#{window_index}")}, return with Ctrl-a ${shown(world.rig.locate(manifest).windowId ?? "", "#{window_index}")}.`,
      // The child's window is the active one.
      focused: async (manifest) => {
        expect(await childWindowActive(manifest)).toBe("1");
      },
    });
  });

  it("waits for a busy agent, then hands off from the turn it finished", async () => {
    const {
      sandbox,
      repo,
      rig: { tmux },
    } = world;
    runPiPrint(sandbox, repo.root, [
      "--model",
      FAUX_MODEL,
      "--session-dir",
      `${sandbox.dir}/busy-sessions`,
      "opening question",
    ]);
    const [file] = readdirSync(`${sandbox.dir}/busy-sessions`).map((name) => `${sandbox.dir}/busy-sessions/${name}`);
    if (file === undefined) throw new Error("no busy parent session");
    const pane = tmuxPane(
      tmux,
      (await tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", `${tmux.sessionId}:`])).trim(),
    );
    await pane.type(piTuiCommand(repo.root, ["--session", file, "--session-dir", `${sandbox.dir}/busy-sessions`]));
    await pane.enter();
    await waitForScreen(pane, PI_READY, "the busy parent TUI");
    // The faux model takes 3 s to answer anything that mentions "slow"; hand off while it works.
    await submitLine(pane, "a slow question", /Working/);
    const manifest = await handOffUnfocused(pane, sandbox.agentDir, "feat/busy");
    // The handoff started from the answer to the slow question: the turn finished first.
    const answer = entriesOnly(readEntries(file)).find(
      (e) => e.type === "message" && textOf(e.message) === "faux reply to: a slow question",
    );
    expect(answer).toBeDefined();
    expect(manifest.parent.leafId).toBe(answer?.id);
    expect(Date.parse(manifest.createdAt)).toBeGreaterThanOrEqual(Date.parse(answer?.timestamp ?? ""));
    // The custom session dir is kept for the child.
    expect(manifest.child.sessionFile?.startsWith(`${sandbox.dir}/busy-sessions/`)).toBe(true);
    // --no-focus: the parent's window stays the active one.
    expect(manifest.focus).toBeUndefined();
    expect(await childWindowActive(manifest)).toBe("0");
  });

  it("runs a command typed out whole, ending in a flag or a branch, on the first Enter", async () => {
    const {
      sandbox,
      repo,
      rig: { tmux },
    } = world;
    const sessions = `${sandbox.dir}/whole-sessions`;
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session-dir", sessions, "a question"]);
    const [file] = readdirSync(sessions).map((name) => `${sessions}/${name}`);
    if (file === undefined) throw new Error("no parent session");
    const paneId = (await tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", `${tmux.sessionId}:`])).trim();
    const pane = {
      ...tmuxPane(tmux, paneId),
      backspace: async () => {
        await tmux.tmux(["send-keys", "-t", paneId, "BSpace"]);
      },
    };
    await pane.type(piTuiCommand(repo.root, ["--session", file, "--session-dir", sessions]));
    await pane.enter();
    await waitForScreen(pane, PI_READY, "the parent TUI");

    // Ends in a flag: one Enter starts the handoff.
    await typeWholeAndEnterOnce(pane, "/handoff-worktree feat/two --no-focus", "--no-focus");
    await waitForScreen(pane, HANDOFF_STARTED, "the handoff started by one Enter", 30_000);
    await waitForScreen(pane, /Handed off to branch feat\/two|failed|did not confirm/, "the handoff's notice", 90_000);
    expect(await pane.read()).toContain("Handed off to branch feat/two");

    // Ends in a branch: one Enter runs /handoffs on it.
    await typeWholeAndEnterOnce(pane, "/handoffs inspect feat/two", "feat/two");
    await waitForScreen(pane, /Handoff \S+feat-two\S* *\n\s+status: /, "the inspect report after one Enter", 20_000);
  });
});

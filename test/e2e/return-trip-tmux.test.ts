/**
 * The return trip on tmux with the real Pi (test/support/return-trip.ts): watch, hear back, land
 * with --remove, and a report delivered once after the parent was closed.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { createPiSandbox, type PiSandbox } from "../support/pi.ts";
import { runReportWhileParentClosed, runReturnTrip, WATCH_POLL_ENV, type ReturnTripWorld } from "../support/return-trip.ts";
import { startPrivateTmux, type PrivateTmux } from "../support/tmux.ts";
import type { PaneDriver } from "../support/tui.ts";

function tmuxPane(tmux: PrivateTmux, pane: string): PaneDriver {
  return {
    name: pane,
    read: () => tmux.capturePane(pane),
    type: async (text) => {
      await tmux.tmux(["send-keys", "-t", pane, "-l", text]);
    },
    enter: async () => {
      await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
    },
  };
}

describe("the return trip on tmux with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let world: ReturnTripWorld;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-trip-");
    Object.assign(sandbox.env, WATCH_POLL_ENV);
    repo = createTempRepo({ extraCommits: 1 });
    tmux = await startPrivateTmux({ env: sandbox.env });
    const parentPane = tmuxPane(tmux, tmux.firstPaneId);
    world = {
      sandbox,
      repo,
      parentPane,
      runInParentPane: async (line) => {
        await parentPane.type(line);
        await parentPane.enter();
      },
      childPane: (manifest) => {
        if (manifest.mux.kind !== "tmux" || manifest.mux.paneId === undefined) throw new Error("expected a tmux pane");
        return tmuxPane(tmux, manifest.mux.paneId);
      },
    };
  });

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("shows the child idle, delivers its report once, lands its commits with --remove and tells the parent once", async () => {
    await runReturnTrip(world);
  }, 240_000);

  it("delivers a report sent while the parent was closed exactly once when it starts again", async () => {
    await runReportWhileParentClosed(world);
  }, 240_000);
});

/**
 * The return trip on the Herdr test double with the real Pi (test/support/return-trip.ts): the
 * parent runs in a Herdr pane (HERDR_ENV=1, no $TMUX), hands off into a Herdr worktree workspace,
 * watches the child, hears its report once, lands with --remove (Herdr removes the worktree), and
 * a report sent while the parent was closed arrives once.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { startHerdrDouble, type HerdrDouble } from "../support/herdr.ts";
import { createPiSandbox, type PiSandbox } from "../support/pi.ts";
import { runReportWhileParentClosed, runReturnTrip, WATCH_POLL_ENV, type ReturnTripWorld } from "../support/return-trip.ts";
import type { PaneDriver } from "../support/tui.ts";

function herdrPane(herdr: HerdrDouble, pane: string): PaneDriver {
  return {
    name: pane,
    read: () => herdr.read(pane),
    type: async (text) => {
      const typed = await herdr.herdr(["pane", "send-text", pane, text]);
      if (typed.exitCode !== 0) throw new Error(typed.stderr);
    },
    enter: async () => {
      await herdr.herdr(["pane", "send-keys", pane, "Enter"]);
    },
  };
}

describe("the return trip on Herdr (the test double) with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let herdr: HerdrDouble;
  let world: ReturnTripWorld;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-trip-herdr-");
    Object.assign(sandbox.env, WATCH_POLL_ENV);
    repo = createTempRepo({ extraCommits: 1 });
    herdr = await startHerdrDouble({ env: sandbox.env });
    const parent = await herdr.openWorkspace(repo.root, "parent");
    world = {
      sandbox,
      repo,
      parentPane: herdrPane(herdr, parent.paneId),
      runInParentPane: async (line) => {
        const run = await herdr.herdr(["pane", "run", parent.paneId, line]);
        if (run.exitCode !== 0) throw new Error(run.stderr);
      },
      childPane: (manifest) => {
        if (manifest.mux.kind !== "herdr" || manifest.mux.paneId === undefined) throw new Error("expected a Herdr pane");
        return herdrPane(herdr, manifest.mux.paneId);
      },
    };
  });

  afterAll(async () => {
    await herdr?.kill();
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

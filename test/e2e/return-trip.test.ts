/**
 * The return trip with the real Pi (test/support/return-trip.ts), once per backend: on tmux (a
 * private server) and on the Herdr test double (the parent in a Herdr pane, HERDR_ENV=1, no $TMUX;
 * Herdr removes the landed worktree). Watch, hear back, land with --remove, and a report delivered
 * once after the parent was closed.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { startHerdrDouble } from "../support/herdr.ts";
import { createPiSandbox, type PiSandbox } from "../support/pi.ts";
import { runReportWhileParentClosed, runReturnTrip, WATCH_POLL_ENV, type ReturnTripWorld } from "../support/return-trip.ts";
import { startPrivateTmux } from "../support/tmux.ts";
import { herdrPane, tmuxPane } from "../support/tui.ts";

type Backend = { world: Omit<ReturnTripWorld, "sandbox" | "repo">; stop(): Promise<void> };

const BACKENDS: Record<string, (sandbox: PiSandbox, repo: TempRepo) => Promise<Backend>> = {
  tmux: async (sandbox) => {
    const tmux = await startPrivateTmux({ env: sandbox.env });
    const parentPane = tmuxPane(tmux, tmux.firstPaneId);
    return {
      world: {
        parentPane,
        runInParentPane: async (line) => {
          await parentPane.type(line);
          await parentPane.enter();
        },
        childPane: (manifest) => {
          if (manifest.mux.kind !== "tmux" || manifest.mux.paneId === undefined) throw new Error("expected a tmux pane");
          return tmuxPane(tmux, manifest.mux.paneId);
        },
      },
      stop: () => tmux.kill(),
    };
  },
  "the Herdr double": async (sandbox, repo) => {
    const herdr = await startHerdrDouble({ env: sandbox.env });
    const parent = await herdr.openWorkspace(repo.root, "parent");
    return {
      world: {
        parentPane: herdrPane(herdr, parent.paneId),
        runInParentPane: async (line) => {
          const run = await herdr.herdr(["pane", "run", parent.paneId, line]);
          if (run.exitCode !== 0) throw new Error(run.stderr);
        },
        childPane: (manifest) => {
          if (manifest.mux.kind !== "herdr" || manifest.mux.paneId === undefined) throw new Error("expected a Herdr pane");
          return herdrPane(herdr, manifest.mux.paneId);
        },
      },
      stop: () => herdr.kill(),
    };
  },
};

describe.each(Object.keys(BACKENDS))("the return trip on %s with the real Pi", (name) => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let backend: Backend | undefined;
  let world: ReturnTripWorld;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-trip-");
    Object.assign(sandbox.env, WATCH_POLL_ENV);
    repo = createTempRepo({ extraCommits: 1 });
    const start = BACKENDS[name];
    if (start === undefined) throw new Error(`no backend ${name}`);
    backend = await start(sandbox, repo);
    world = { sandbox, repo, ...backend.world };
  });

  afterAll(async () => {
    await backend?.stop();
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

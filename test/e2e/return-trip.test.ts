/**
 * The return trip with the real Pi (test/support/return-trip.ts), once per backend: on tmux (a
 * private server), on the real zellij (a session of its own) and on Herdr (the parent in a Herdr pane, HERDR_ENV=1, no $TMUX; Herdr removes
 * the landed worktree): the double in the default pass, the real Herdr in the herdr-real pass.
 * Watch, hear back, land with --remove, a report delivered once after the parent was closed, and
 * a rebase that follows a moved base.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, SHARED_SCENARIOS_ON_REAL } from "../support/herdr.ts";
import { startHerdrRig, startTmuxRig, startZellijRig, type MuxRig } from "../support/mux-rig.ts";
import { createPiSandbox, type PiSandbox } from "../support/pi.ts";
import {
  runRebaseTrip,
  runReportWhileParentClosed,
  runReturnTrip,
  WATCH_POLL_ENV,
  type ReturnTripWorld,
} from "../support/return-trip.ts";

/**
 * On the herdr-real pass only Herdr runs again (tmux ran in the default pass); the double runs it
 * only where the real Herdr is not built.
 */
const BACKENDS: Record<string, (sandbox: PiSandbox, repo: TempRepo) => Promise<MuxRig>> =
  HERDR_TARGET === "real"
    ? { "the real Herdr": (sandbox, repo) => startHerdrRig(sandbox, repo) }
    : {
        tmux: (sandbox) => startTmuxRig(sandbox),
        ...(SHARED_SCENARIOS_ON_REAL
          ? {}
          : { "the Herdr double": (sandbox: PiSandbox, repo: TempRepo) => startHerdrRig(sandbox, repo) }),
        "the real zellij": (sandbox) => startZellijRig(sandbox),
      };

describe.each(Object.keys(BACKENDS))("the return trip on %s with the real Pi", (name) => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let rig: MuxRig | undefined;
  let world: ReturnTripWorld;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-trip-");
    Object.assign(sandbox.env, WATCH_POLL_ENV);
    repo = createTempRepo({ extraCommits: 1 });
    const start = BACKENDS[name];
    if (start === undefined) throw new Error(`no backend ${name}`);
    rig = await start(sandbox, repo);
    world = { sandbox, repo, ...rig };
  });

  afterAll(async () => {
    await rig?.stop();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("shows the child idle, delivers its report once, lands its commits with --remove and tells the parent once", async () => {
    await runReturnTrip(world);
  }, 240_000);

  it("delivers a report sent while the parent was closed exactly once when it starts again", async () => {
    await runReportWhileParentClosed(world);
  }, 240_000);

  it("follows a moved base: the widget says behind, /handoffs rebase re-makes the commit on main, the child hears it once", async () => {
    await runRebaseTrip(world);
  }, 240_000);
});

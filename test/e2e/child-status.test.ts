/**
 * The child-status truth set with the real Pi (test/support/child-truth-set.ts), once per backend:
 * on tmux (a private server) and on the Herdr rig (the double in the default pass, the real Herdr
 * in the herdr-real pass). Each step's state must show in the parent's
 * widget and stay shown; each run prints every step's delay, the agreement within 1 s and the
 * longest delay (and writes them as JSON to `$PI_HANDOFF_TRUTH_OUT/<backend>.json` when set).
 * On Herdr, the child also tells Herdr's own sidebar: blocked while its dialog is open.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, SHARED_SCENARIOS_ON_REAL } from "../support/herdr.ts";
import { startHerdrRig, startTmuxRig, type MuxRig } from "../support/mux-rig.ts";
import { createPiSandbox, type PiSandbox } from "../support/pi.ts";
import { describeTruthSet, prepareTruthSandbox, runChildTruthSet } from "../support/child-truth-set.ts";

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
      };

describe.each(Object.keys(BACKENDS))("the child's state in the parent's widget on %s with the real Pi", (name) => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let rig: MuxRig | undefined;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-truth-");
    prepareTruthSandbox(sandbox);
    repo = createTempRepo({ extraCommits: 1 });
    const start = BACKENDS[name];
    if (start === undefined) throw new Error(`no backend ${name}`);
    rig = await start(sandbox, repo);
  });

  afterAll(async () => {
    await rig?.stop();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("shows every step's state (turn, tool, dialog, question, /compact, load, /new, kill, relaunch) once it settles", async () => {
    if (rig === undefined) throw new Error("no rig");
    const herdrRig = rig.kind === "herdr" ? rig : undefined;
    const results = await runChildTruthSet({
      sandbox,
      repo,
      ...rig,
      ...(herdrRig === undefined
        ? {}
        : {
            // Herdr's own view of the child's pane, as its sidebar shows it.
            sidebarStatus: async (manifest) => {
              const shown = await herdrRig.herdr.result(["pane", "get", herdrRig.locate(manifest).paneId ?? ""]);
              return (shown.pane as { agent_status?: string } | undefined)?.agent_status;
            },
          }),
    });
    const report = describeTruthSet(name, results);
    console.log(report);
    const out = process.env.PI_HANDOFF_TRUTH_OUT;
    if (out !== undefined && out !== "") {
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, `${name.replace(/\W+/g, "-")}.json`), `${JSON.stringify(results, null, 2)}\n`);
    }
    expect(results.map((result) => result.step)).toHaveLength(17);
  }, 420_000);
});

/**
 * `pi-handoff land` killed with SIGKILL at each of its steps (`PI_HANDOFF_FAULT=kill-after:...`,
 * the real CLI as a real process): the target branch is at its old or its new commit, the checkout
 * is never half-merged (clean, its index at HEAD), `pi-handoff inspect` says which state it is in,
 * and the next `land` settles the record and tells the parent exactly once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

const CASES = [
  {
    point: "land-intent",
    moved: false,
    inspect:
      /landing: +interrupted before the target moved: main is still at the old commit [0-9a-f]{12} \(nothing landed; run pi-handoff land again\)/,
  },
  {
    point: "land-target",
    moved: true,
    inspect:
      /landing: +interrupted after the target moved: main is at the new commit [0-9a-f]{12} \(landed; pi-handoff land \S+ records it\)/,
  },
  { point: "land-record", moved: true, inspect: /landing: +landed 1 commit into main by ff/ },
] as const;

describe("land killed at each step", () => {
  for (const { point, moved, inspect } of CASES) {
    it(`leaves the old or the new target after kill-after:${point}, and inspect says which`, async () => {
      const r = (rig = await createLandRig());
      const old = r.repo.run(["rev-parse", "main"]);
      const tip = r.commitInWorktree("a.txt", "a\n", "add a");
      const killed = await runCli(["land", r.id], { ...r.env, PI_HANDOFF_FAULT: `kill-after:${point}` }, r.repo.root);
      expect(killed.signal).toBe("SIGKILL");
      expect(r.repo.run(["rev-parse", "main"])).toBe(moved ? tip : old);
      // Never half-merged: the checkout matches its HEAD exactly.
      expect(r.repo.run(["status", "--porcelain", "--untracked-files=all"])).toBe("");
      expect(r.repo.run(["diff", "--cached", "--name-only", "HEAD"])).toBe("");

      const shown = await runCli(["inspect", r.id], r.env, r.repo.root);
      expect(shown.status).toBe(0);
      expect(shown.stdout).toMatch(inspect);

      const again = await runCli(["land", r.id], r.env, r.repo.root);
      if (point === "land-target") {
        expect(again.status).toBe(0);
        expect(again.stdout).toBe(
          `An interrupted landing had already moved main to ${tip}; it is recorded now. Everything on feat/land is already in main; nothing to land.\n`,
        );
      } else if (moved) {
        expect(again.status).toBe(1);
        expect(again.stderr).toBe("pi-handoff land: Everything on feat/land is already in main; nothing to land.\n");
      } else {
        expect(again.status).toBe(0);
        expect(again.stdout).toContain(`main is now at ${tip}`);
      }
      expect(r.repo.run(["rev-parse", "main"])).toBe(tip);
      const landings = (await r.read()).landings ?? [];
      expect(landings.map((landing) => landing.state)).toEqual(moved ? ["landed"] : ["abandoned", "landed"]);
      const { reports } = await ChildReportStore.forAgentDir(r.agentDir).list(r.id);
      expect(reports.map((report) => [report.kind, report.landing?.result])).toEqual([["landed", tip]]);
    });
  }
});

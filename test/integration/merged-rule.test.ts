/**
 * The one "merged" rule (src/inventory/merged.ts) on real git: what `list`/`inspect` say of the
 * branch, whether `land` has anything to land, the forecast's standing and whether `prune --merged`
 * retires the handoff agree, for a branch landed by fast-forward, squashed by `land` or by hand,
 * rebased then landed by hand, with no commits of its own, behind a target that moved ahead, and
 * deleted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { forecastHandoffs } from "../../src/forecast/forecast.ts";
import { GitCli } from "../../src/git/git.ts";
import { LandGit } from "../../src/git/land.ts";
import { inspectHandoff } from "../../src/inventory/inventory.ts";
import { landHandoff, type LandRequest } from "../../src/land/land.ts";
import { planPrune } from "../../src/remove/prune.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";

const plain: LandRequest = { dryRun: false, remove: false, deleteBranch: false };
let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

async function setup(): Promise<LandRig> {
  rig = await createLandRig();
  return rig;
}

interface Verdicts {
  /** `list`/`inspect`: the branch's fact (`gone`, `unmerged`, `no commits`, or the merged rule). */
  list: string;
  /** `land --dry-run`'s code. */
  land: string;
  /** The forecast's standing (`-` when the handoff is not forecast). */
  forecast: string;
  /** Whether `prune --merged` retires it. */
  prune: boolean;
}

async function verdictsOf(r: LandRig): Promise<Verdicts> {
  const inspected = await inspectHandoff(r.deps(), r.id);
  if (inspected.code !== "found") throw new Error(inspected.message);
  const branch = inspected.report.branchState;
  const list =
    branch.code !== "present"
      ? branch.code
      : branch.merged !== undefined
        ? branch.merged.rule
        : branch.aheadOfBase === 0
          ? "no commits"
          : "unmerged";
  const land = await landHandoff(r.deps(), r.id, { ...plain, dryRun: true, strategy: "merge" });
  const forecast = await forecastHandoffs({ git: new GitCli({ env: r.env }), landGit: new LandGit({ env: r.env }) }, [
    await r.read(),
  ]);
  const entry = forecast.entries.find((candidate) => candidate.id === r.id);
  const prune = await planPrune(createRecoveryDeps(r.env), { merged: true });
  return {
    list,
    land: land.code,
    forecast: entry === undefined ? "-" : entry.code === "landed" ? `landed (${entry.rule})` : entry.code,
    prune: prune.actions.some((action) => action.code === "retire_merged" && action.id === r.id),
  };
}

describe("one merged rule for list, land, forecast and prune", () => {
  it("a branch landed by fast-forward is merged by ancestry everywhere", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    expect(await landHandoff(r.deps(), r.id, plain)).toMatchObject({ ok: true, code: "landed" });
    expect(await verdictsOf(r)).toEqual({
      list: "ancestry",
      land: "nothing_to_land",
      forecast: "landed (ancestry)",
      prune: true,
    });
  });

  it("a branch `land` squashed is merged by its landing: land has nothing more to land", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.commitInWorktree("b.txt", "b\n", "add b");
    expect(await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" })).toMatchObject({ ok: true });
    const main = r.repo.run(["rev-parse", "main"]);
    expect(await verdictsOf(r)).toEqual({
      list: "landing",
      land: "nothing_to_land",
      forecast: "landed (landing)",
      prune: true,
    });
    const again = await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" });
    expect(again).toEqual({
      ok: false,
      code: "nothing_to_land",
      message: `Everything on ${r.branch} is already in main; nothing to land.`,
    });
    expect(r.repo.run(["rev-parse", "main"])).toBe(main);
  });

  it("a branch squashed by hand is merged by its tree; one rebased and landed by hand by its patches", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    const b = r.commitInWorktree("b.txt", "b\n", "add b");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    r.repo.run(["merge", "--squash", r.branch]);
    r.repo.run(["commit", "-q", "-m", "squashed by hand"]);
    expect(await verdictsOf(r)).toEqual({
      list: "tree",
      land: "nothing_to_land",
      forecast: "landed (tree)",
      prune: true,
    });

    r.repo.run(["reset", "-q", "--hard", "main~1"]);
    r.repo.run(["cherry-pick", `${b}~1`, b]);
    expect(await verdictsOf(r)).toEqual({
      list: "patch",
      land: "nothing_to_land",
      forecast: "landed (patch)",
      prune: true,
    });
  });

  it("a branch with no commits of its own is not merged: nothing to land, and prune leaves it", async () => {
    const r = await setup();
    expect(await verdictsOf(r)).toEqual({
      list: "no commits",
      land: "nothing_to_land",
      forecast: "nothing-to-land",
      prune: false,
    });
    r.repo.commitFile("m.txt", "m\n", "main moves");
    expect(await verdictsOf(r)).toEqual({
      list: "no commits",
      land: "nothing_to_land",
      forecast: "nothing-to-land",
      prune: false,
    });
  });

  it("a branch behind a target that moved ahead, with commits of its own, is unmerged everywhere", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    expect(await verdictsOf(r)).toEqual({ list: "unmerged", land: "dry_run", forecast: "to-land", prune: false });
  });

  it("a deleted branch is gone: nothing to land, not forecast, and prune --merged leaves it to prune's own rule", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.run(["worktree", "remove", "--force", r.worktree]);
    r.repo.run(["branch", "-D", r.branch]);
    expect(await verdictsOf(r)).toEqual({ list: "gone", land: "branch_gone", forecast: "-", prune: false });
  });
});

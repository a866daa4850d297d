/**
 * Landed is merged (issue 24), on real git: a branch whose changes are in its target (fast-forward,
 * merge, rebase or squash; by `pi-handoff land` or by hand) counts as merged in the report (with
 * the rule that said so), is removed without --force and its branch deleted on ask; a branch with
 * a change the target lacks is not, and keeps its branch.
 */
import { afterEach, describe, expect, it } from "vitest";
import { inspectHandoff } from "../../src/inventory/inventory.ts";
import { landHandoff, type LandRequest } from "../../src/land/land.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

const plain: LandRequest = { dryRun: false, remove: false, deleteBranch: false };
let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

/** A handoff with two commits on its branch and main moved on meanwhile (a fast-forward is not possible). */
async function diverged(): Promise<LandRig & { tip: string }> {
  const r = (rig = await createLandRig());
  r.commitInWorktree("a.txt", "a\n", "add a");
  const tip = r.commitInWorktree("b.txt", "b\n", "add b");
  r.repo.commitFile("m.txt", "m\n", "main moves");
  return { ...r, tip };
}

async function branchState(r: LandRig) {
  const found = await inspectHandoff(r.deps(), r.id);
  if (found.code !== "found") throw new Error(found.message);
  return { flags: found.report.flags, state: found.report.branchState };
}

function branchExists(r: LandRig): boolean {
  return r.repo.run(["branch", "--list", r.branch]) !== "";
}

describe("landed is merged", () => {
  for (const strategy of ["squash", "rebase"] as const) {
    it(`counts a ${strategy} landing as merged: removed without --force, the branch deleted on ask`, async () => {
      const r = await diverged();
      const landed = await landHandoff(r.deps(), r.id, { ...plain, strategy });
      expect(landed).toMatchObject({ ok: true, code: "landed" });
      const to = r.repo.run(["rev-parse", "main"]);
      const { flags, state } = await branchState(r);
      expect(flags).toEqual(["merged"]);
      expect(state).toMatchObject({ code: "present", merged: { rule: "landing", landed: to }, unmerged: { total: 0 } });
      const removed = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: true });
      expect(removed).toMatchObject({ code: "removed" });
      expect(removed.message).toContain(`deleted branch ${r.branch}`);
      expect(branchExists(r)).toBe(false);
      expect(r.repo.run(["rev-parse", "main"])).toBe(to);
    });
  }

  it("--remove --delete-branch after a squash landing removes the worktree and deletes the branch (one path with remove)", async () => {
    const r = await diverged();
    const landed = await landHandoff(r.deps(), r.id, {
      ...plain,
      strategy: "squash",
      remove: true,
      deleteBranch: true,
    });
    expect(landed).toMatchObject({ ok: true, code: "landed", removal: { code: "removed" } });
    expect(branchExists(r)).toBe(false);
  });

  it("keeps the landing rule when the target moves on over the same files", async () => {
    const r = await diverged();
    await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" });
    r.repo.commitFile("a.txt", "a, changed on main later\n", "main edits a");
    expect((await branchState(r)).state).toMatchObject({ merged: { rule: "landing" }, behind: 3 });
  });

  it("finds a rebase by hand by its patches, and a squash by hand by its tree", async () => {
    const r = await diverged();
    // By hand: the branch's commits cherry-picked onto main (a rebase), then the branch deleted on ask.
    const base = r.repo.run(["merge-base", "main", r.branch]);
    r.repo.run(["cherry-pick", "--allow-empty", `${base}..${r.branch}`]);
    const picked = await branchState(r);
    expect(picked).toMatchObject({
      flags: ["merged"],
      state: { merged: { rule: "patch" }, unmerged: { total: 0 } },
    });
    expect(picked.state.code === "present" && picked.state.merged).toEqual({ rule: "patch" });
    // Undone, and squashed by hand instead.
    r.repo.run(["reset", "--quiet", "--hard", "HEAD~2"]);
    r.repo.run(["merge", "--quiet", "--squash", r.branch]);
    r.repo.run(["commit", "--quiet", "-m", "squashed by hand"]);
    const squashed = await branchState(r);
    expect(squashed.state.code === "present" && squashed.state.merged).toEqual({ rule: "tree" });
    const removed = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: true });
    expect(removed).toMatchObject({ code: "removed" });
    expect(branchExists(r)).toBe(false);
  });

  it("does not count a branch with a change the target lacks, and says by how much the target moved", async () => {
    const r = await diverged();
    // Only one of the two commits reached main.
    r.repo.run(["cherry-pick", `${r.tip}~1`]);
    const state = await branchState(r);
    expect(state.flags).toEqual(["unmerged"]);
    expect(state.state).toMatchObject({ unmerged: { total: 2 }, behind: 2 });
    expect(state.state.code === "present" && state.state.merged).toBeUndefined();
    const refused = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: true });
    expect(refused).toMatchObject({ code: "refused", reason: "needs_force" });
    const inspect = await runCli(["inspect", r.id], r.env, r.repo.root);
    // The repository has no remote: nothing is counted unpushed.
    expect(inspect.stdout).toContain(
      `branch:        ${r.branch} (2 commits since the base; 2 not merged into main; main has moved 2 commits past it)`,
    );
    expect(branchExists(r)).toBe(true);
  });

  it("prune --merged lists, then retires merged handoffs and deletes only the branches it created", async () => {
    const r = await diverged();
    await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" });
    // A handoff into a branch that existed before it (--existing), landed too: retired, its branch kept.
    const existing = await r.addHandoff("feat/existing");
    await r.store.update(existing.id, (m) => {
      m.setup = { existingBranch: true };
      m.base = { ...m.base, ref: "feat/existing" };
    });
    r.repo.commitFile("e.txt", "e\n", "existing work", { cwd: existing.worktree });
    expect(await landHandoff(r.deps(), existing.id, plain)).toMatchObject({ ok: true, code: "landed" });
    // One with work main lacks: left alone.
    const open = await r.addHandoff("feat/open");
    r.repo.commitFile("o.txt", "o\n", "open work", { cwd: open.worktree });
    const before = r.snapshot();
    const dry = await runCli(["prune", "--merged", "--dry-run"], r.env, r.repo.root);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain(`  retire handoff ${r.id}: branch feat/land is merged (landing)\n`);
    expect(dry.stdout).toContain(`  retire handoff ${existing.id}: branch feat/existing is merged (landing)\n`);
    expect(dry.stdout).toContain(
      "    Branch feat/existing would be kept: it existed before this handoff (--existing), so it is not this handoff's to delete.\n",
    );
    expect(dry.stdout).not.toContain(open.id);
    expect(r.snapshot()).toEqual(before);
    const real = await runCli(["prune", "--merged"], r.env, r.repo.root);
    expect(real.status, real.stderr).toBe(0);
    expect(branchExists(r)).toBe(false);
    expect(r.repo.run(["branch", "--list", "feat/existing"])).toBe("  feat/existing");
    expect(r.repo.run(["branch", "--list", "feat/open"])).toBe("+ feat/open");
    expect((await r.store.read(r.id)).ok && (await r.read()).state).toBe("removed");
    const openRead = await r.store.read(open.id);
    expect(openRead.ok && openRead.manifest.state).toBe("running");
  });
});

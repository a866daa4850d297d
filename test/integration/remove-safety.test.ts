/**
 * Nothing lost by `pi-handoff remove` and `prune`, on real git (issue 22): files git ignores are
 * work too (listed, and deleted only with --force), commits only a worktree's HEAD history holds
 * stay reachable, prune touches only the entries of this package's own worktrees (never a
 * person's worktree moved by hand), and a handoff's worktree moved by hand is never cut off from
 * git. Each case states exactly what is preserved.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { childStatePath, readChildState } from "../../src/child/child-state.ts";
import { afterEach, describe, expect, it } from "vitest";
import type { RemovalPlan } from "../../src/remove/plan.ts";
import { executePrune, planPrune } from "../../src/remove/prune.ts";
import { removeHandoff } from "../../src/remove/remove.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

async function setup(): Promise<LandRig> {
  rig = await createLandRig();
  return rig;
}

const sha256 = (file: string): string => createHash("sha256").update(readFileSync(file)).digest("hex");

describe("remove", () => {
  it("counts files git ignores as work: refused without --force (listed, bytes kept), deleted with it", async () => {
    const r = await setup();
    writeFileSync(join(r.repo.root, ".git", "info", "exclude"), "*.local\nnode_modules/\n");
    writeFileSync(join(r.worktree, "notes.local"), "my notes\n");
    writeFileSync(join(r.worktree, ".env.local"), "TOKEN=mine\n");
    let shown: RemovalPlan | undefined;
    const refused = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false }, (plan) => {
      shown = plan;
    });
    expect(refused).toMatchObject({ code: "refused", reason: "needs_force" });
    expect(refused.message).toMatch(/has 2 uncommitted, untracked or ignored files; nothing was removed/);
    expect(shown?.lostFiles).toEqual({ dirty: [], untracked: [], ignored: [".env.local", "notes.local"] });
    expect(readFileSync(join(r.worktree, "notes.local"), "utf8")).toBe("my notes\n");
    expect(readFileSync(join(r.worktree, ".env.local"), "utf8")).toBe("TOKEN=mine\n");
    expect((await r.read()).state).toBe("running");
    const forced = await removeHandoff(r.deps(), r.id, { force: true, deleteBranch: false });
    expect(forced).toMatchObject({ code: "removed" });
    expect(existsSync(r.worktree)).toBe(false);
  });

  it("deletes the state its child last published (exited), but not one a Pi of another handoff wrote on the session", async () => {
    const r = await setup();
    const stateOf = (handoffId: string) => ({
      version: 1,
      sessionFile: r.childSessionFile,
      pid: 4_000_000,
      host: hostname(),
      handoffId,
      state: "exited",
      since: new Date().toISOString(),
      seq: 3,
      writtenAt: new Date().toISOString(),
      exitCode: 0,
    });
    const path = childStatePath(r.agentDir, r.childSessionFile);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify(stateOf(r.id)));
    expect(await readChildState(r.agentDir, r.childSessionFile)).toMatchObject({ code: "ok" });
    const sibling = await r.addHandoff("feat/sibling");
    const siblingSession = (await r.store.read(sibling.id)) as {
      ok: true;
      manifest: { child: { sessionFile: string } };
    };
    const siblingPath = childStatePath(r.agentDir, siblingSession.manifest.child.sessionFile);
    writeFileSync(
      siblingPath,
      JSON.stringify({ ...stateOf("someone-else"), sessionFile: siblingSession.manifest.child.sessionFile }),
    );
    expect(await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false })).toMatchObject({
      code: "removed",
    });
    expect(existsSync(path)).toBe(false);
    expect(await removeHandoff(r.deps(), sibling.id, { force: false, deleteBranch: false })).toMatchObject({
      code: "removed",
    });
    expect(existsSync(siblingPath)).toBe(true);
  });

  it("needs no --force for what the handoff's own setup put there unchanged (its symlink, an equal copy)", async () => {
    const r = await setup();
    writeFileSync(join(r.repo.root, ".git", "info", "exclude"), "*.local\nnode_modules\n");
    mkdirSync(join(r.repo.root, "node_modules"));
    writeFileSync(join(r.repo.root, "node_modules", "dep.js"), "dep\n");
    writeFileSync(join(r.repo.root, "settings.local"), "shared\n");
    symlinkSync(join(r.repo.root, "node_modules"), join(r.worktree, "node_modules"));
    writeFileSync(join(r.worktree, "settings.local"), "shared\n");
    await r.store.update(r.id, (m) => {
      m.setup = { copied: ["settings.local"], symlinked: ["node_modules"] };
    });
    const removed = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false });
    expect(removed).toMatchObject({ code: "removed" });
    // The main checkout's own entries are untouched.
    expect(readFileSync(join(r.repo.root, "node_modules", "dep.js"), "utf8")).toBe("dep\n");
    expect(readFileSync(join(r.repo.root, "settings.local"), "utf8")).toBe("shared\n");
  });

  it("keeps commits only the worktree's HEAD history holds (a detached experiment) reachable under refs/pi-handoff/", async () => {
    const r = await setup();
    r.repo.run(["checkout", "--quiet", "--detach"], { cwd: r.worktree });
    const experiment = r.repo.commitFile("x.txt", "x\n", "detached experiment", { cwd: r.worktree });
    r.repo.run(["checkout", "--quiet", r.branch], { cwd: r.worktree });
    const removed = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false });
    expect(removed).toMatchObject({ code: "removed" });
    expect(removed.message).toContain(`kept 1 commit of its HEAD history under refs/pi-handoff/${r.id}/kept/`);
    expect(r.repo.run(["rev-parse", `refs/pi-handoff/${r.id}/kept/${experiment}`])).toBe(experiment);
    // Reachable from a ref: git gc keeps it.
    expect(r.repo.run(["rev-list", "--all"]).split("\n")).toContain(experiment);
    expect(r.repo.run(["show", `${experiment}:x.txt`])).toBe("x");
  });

  it("keeps what a worktree left detached holds when its folder is gone: prune keeps it under refs/pi-handoff/ before dropping the entry", async () => {
    const r = await setup();
    r.repo.run(["checkout", "--quiet", "--detach"], { cwd: r.worktree });
    const experiment = r.repo.commitFile("x.txt", "x\n", "detached experiment", { cwd: r.worktree });
    rmSync(r.worktree, { recursive: true, force: true });
    const deps = r.deps();
    const planned = await planPrune(deps);
    expect(planned.actions.find((action) => action.code === "drop_entry")).toMatchObject({
      kept: [{ ref: `refs/pi-handoff/${r.id}/kept/${experiment}`, sha: experiment }],
    });
    const results = await executePrune(deps, planned.actions);
    expect(results.every((result) => result.ok)).toBe(true);
    expect(r.repo.run(["worktree", "list", "--porcelain"])).not.toContain(r.worktree);
    // Reachable from a ref: git gc keeps it.
    expect(r.repo.run(["rev-list", "--all"]).split("\n")).toContain(experiment);
    expect(r.repo.run(["show", `${experiment}:x.txt`])).toBe("x");
  });

  it("never cuts a worktree moved by hand off from git, even with --force: its entry and staged index stay", async () => {
    const r = await setup();
    writeFileSync(join(r.worktree, "staged.txt"), "staged\n");
    r.repo.run(["add", "staged.txt"], { cwd: r.worktree });
    const moved = join(r.repo.dir, "worktree-moved");
    renameSync(r.worktree, moved);
    const entry = join(r.repo.root, ".git", "worktrees", "worktree");
    const index = sha256(join(entry, "index"));
    const refused = await removeHandoff(r.deps(), r.id, { force: true, deleteBranch: false });
    expect(refused).toMatchObject({
      code: "refused",
      reason: "moved",
      message: `The worktree of handoff ${r.id} was moved by hand to ${moved}, which still uses git's entry for it (${entry}); nothing was removed. Tell git where it is (git worktree repair ${moved}); then pi-handoff remove ${r.id} records the handoff removed and leaves that checkout alone.`,
    });
    expect(sha256(join(entry, "index"))).toBe(index);
    expect(r.repo.run(["status", "--porcelain"], { cwd: moved })).toBe("A  staged.txt");
    // As the refusal says: once git knows where it is, the removal leaves that checkout alone.
    r.repo.run(["worktree", "repair", moved]);
    const removed = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false });
    expect(removed).toMatchObject({ code: "removed" });
    expect(r.repo.run(["status", "--porcelain"], { cwd: moved })).toBe("A  staged.txt");
  });

  it("refuses without --force to drop git's entry of a vanished worktree that holds staged changes, listing them", async () => {
    const r = await setup();
    writeFileSync(join(r.worktree, "staged.txt"), "staged\n");
    r.repo.run(["add", "staged.txt"], { cwd: r.worktree });
    rmSync(r.worktree, { recursive: true, force: true });
    let shown: RemovalPlan | undefined;
    const refused = await removeHandoff(r.deps(), r.id, { force: false, deleteBranch: false }, (plan) => {
      shown = plan;
    });
    expect(refused).toMatchObject({ code: "refused", reason: "needs_force" });
    expect(refused.message).toContain("1 change staged in git's entry for its vanished checkout");
    expect(shown?.entry?.staged).toEqual(["staged.txt"]);
    expect(existsSync(join(r.repo.root, ".git", "worktrees", "worktree", "index"))).toBe(true);
    expect(await removeHandoff(r.deps(), r.id, { force: true, deleteBranch: false })).toMatchObject({
      code: "removed",
    });
    expect(existsSync(join(r.repo.root, ".git", "worktrees", "worktree"))).toBe(false);
  });
});

describe("prune", () => {
  it("drops only its own handoffs' vanished entries: a person's worktree moved by hand keeps its entry and staged index", async () => {
    const r = await setup();
    // The person's own worktree (no handoff's), with staged work, moved by hand elsewhere.
    const own = join(r.repo.dir, "own");
    r.repo.run(["worktree", "add", "--quiet", "-b", "own", own]);
    writeFileSync(join(own, "mine.txt"), "mine\n");
    r.repo.run(["add", "mine.txt"], { cwd: own });
    const elsewhere = join(r.repo.home, "elsewhere");
    renameSync(own, elsewhere);
    const ownEntry = join(r.repo.root, ".git", "worktrees", "own");
    const ownIndex = sha256(join(ownEntry, "index"));
    // The handoff's worktree is gone.
    r.repo.run(["checkout", "--quiet", "--detach"], { cwd: r.worktree });
    const experiment = r.repo.commitFile("x.txt", "x\n", "detached experiment", { cwd: r.worktree });
    r.repo.run(["checkout", "--quiet", r.branch], { cwd: r.worktree });
    rmSync(r.worktree, { recursive: true, force: true });
    const deps = r.deps();
    const planned = await planPrune(deps);
    expect(planned.actions.filter((action) => action.code !== "sweep_leftovers")).toEqual([
      {
        code: "drop_entry",
        id: r.id,
        repo: r.repo.root,
        path: r.worktree,
        entry: join(r.repo.root, ".git", "worktrees", "worktree"),
        kept: [{ ref: `refs/pi-handoff/${r.id}/kept/${experiment}`, sha: experiment }],
      },
      { code: "retire", id: r.id, branch: r.branch, reason: "worktree_gone_branch_merged", closesWindow: false },
    ]);
    const results = await executePrune(deps, planned.actions);
    expect(results.every((result) => result.ok)).toBe(true);
    expect(r.repo.run(["worktree", "list", "--porcelain"])).not.toContain(r.worktree);
    expect(r.repo.run(["rev-parse", `refs/pi-handoff/${r.id}/kept/${experiment}`])).toBe(experiment);
    // The person's worktree: entry, index bytes and staged work exactly as they were.
    expect(existsSync(ownEntry)).toBe(true);
    expect(sha256(join(ownEntry, "index"))).toBe(ownIndex);
    expect(r.repo.run(["status", "--porcelain"], { cwd: elsewhere })).toBe("A  mine.txt");
  });
});

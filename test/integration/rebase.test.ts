/**
 * `pi-handoff rebase` on real git (issue 24): follows a target that moved on (the branch's commits
 * re-made on its tip, authors, dates and messages kept, the worktree's files along), records it,
 * and leaves one note for the child; every refusal changes nothing; a SIGKILL at each step leaves
 * the old or the new tip, `inspect` says which, and the next rebase settles it (finishing a
 * worktree left behind) and tells the child once.
 */
import { existsSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HandoffNoteStore } from "../../src/manifest/handoff-notes.ts";
import { createRebaseDeps } from "../../src/cli/deps.ts";
import { rebaseHandoff } from "../../src/rebase/rebase.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

/** Two commits in the child's worktree, and main moved on by one. */
async function moved(): Promise<LandRig & { childA: string; childB: string; main: string }> {
  const r = (rig = await createLandRig());
  const childA = r.commitInWorktree("a.txt", "a\n", "add a\n\nwith a body");
  const childB = r.commitInWorktree("b.txt", "b\n", "add b");
  const main = r.repo.commitFile("m.txt", "m\n", "main moves");
  return { ...r, childA, childB, main };
}

const notesOf = async (r: LandRig) => (await HandoffNoteStore.forAgentDir(r.agentDir).list(r.id)).notes;
const tipOf = (r: LandRig): string => r.repo.run(["rev-parse", `refs/heads/${r.branch}`]);
const parentOf = (r: LandRig, sha: string): string => r.repo.run(["rev-parse", `${sha}^`]);

describe("pi-handoff rebase", () => {
  it("re-makes the branch's commits on main's new tip, brings the worktree along, records it and tells the child once", async () => {
    const r = await moved();
    const outcome = await rebaseHandoff(createRebaseDeps(r.env), r.id, { dryRun: false });
    expect(outcome).toMatchObject({ ok: true, code: "rebased" });
    const tip = tipOf(r);
    const first = parentOf(r, tip);
    expect(parentOf(r, first)).toBe(r.main);
    for (const [original, rebased] of [
      [r.childA, first],
      [r.childB, tip],
    ] as const) {
      expect(r.repo.run(["log", "-1", "--format=%an <%ae> %ad%n%B", "--date=raw", rebased])).toBe(
        r.repo.run(["log", "-1", "--format=%an <%ae> %ad%n%B", "--date=raw", original]),
      );
    }
    // The worktree follows: main's file is there, nothing is uncommitted.
    expect(readFileSync(join(r.worktree, "m.txt"), "utf8")).toBe("m\n");
    expect(r.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: r.worktree })).toBe("");
    expect((await r.read()).rebases?.map((rebase) => [rebase.state, rebase.from, rebase.to, rebase.onto])).toEqual([
      ["rebased", r.childB, tip, { ref: "main", sha: r.main }],
    ]);
    const notes = await notesOf(r);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      kind: "rebased",
      branch: r.branch,
      rebase: { onto: { ref: "main", sha: r.main }, from: r.childB, to: tip, commits: 2 },
    });
    expect(notes[0]?.text.split("\n")[0]).toBe(
      `The base of this handoff moved: main went on to ${r.main.slice(0, 12)}, and pi-handoff rebase re-made this branch's 2 commits on it.`,
    );
    // Nothing more to follow, and inspect says what happened.
    expect(await rebaseHandoff(createRebaseDeps(r.env), r.id, { dryRun: false })).toMatchObject({
      ok: false,
      code: "up_to_date",
    });
    const inspect = await runCli(["inspect", r.id], r.env, r.repo.root);
    expect(inspect.stdout).toContain(
      `  rebase:        rebased 2 commits onto main at ${r.main.slice(0, 12)}, ${r.childB.slice(0, 12)} -> ${tip.slice(0, 12)}\n`,
    );
    expect(await notesOf(r)).toHaveLength(1);
  });

  it("follows a target that changed a file the worktree holds, whose index stat data git wrote long before (an ordinary moving base)", async () => {
    const r = (rig = await createLandRig());
    // An existing file, checked out in the worktree and then left alone for a while, as a user's are:
    // its index entry is not "racy" (older than the index file), so git trusts its stat data alone.
    r.repo.commitFile("shared.txt", "one\n", "add shared");
    r.repo.run(["merge", "--quiet", "--ff-only", "main"], { cwd: r.worktree });
    const childA = r.commitInWorktree("a.txt", "a\n", "add a");
    const main = r.repo.commitFile("shared.txt", "two\n", "main changes shared");
    const past = new Date(Date.now() - 3_600_000);
    for (const file of ["README.md", "shared.txt", "a.txt"]) utimesSync(join(r.worktree, file), past, past);
    r.repo.run(["update-index", "-q", "--refresh"], { cwd: r.worktree });
    const outcome = await rebaseHandoff(createRebaseDeps(r.env), r.id, { dryRun: false });
    expect(outcome, outcome.message).toMatchObject({ ok: true, code: "rebased" });
    const tip = tipOf(r);
    expect(parentOf(r, tip)).toBe(main);
    expect(r.repo.run(["log", "-1", "--format=%B", tip]).trim()).toBe(
      r.repo.run(["log", "-1", "--format=%B", childA]).trim(),
    );
    expect(readFileSync(join(r.worktree, "shared.txt"), "utf8")).toBe("two\n");
    expect(readFileSync(join(r.worktree, "a.txt"), "utf8")).toBe("a\n");
    expect(r.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: r.worktree })).toBe("");
  });

  it("rebases only what was shown: a branch or target that moved after the dry run is refused, changing nothing", async () => {
    const r = await moved();
    const deps = createRebaseDeps(r.env);
    const shown = await rebaseHandoff(deps, r.id, { dryRun: true });
    if (!shown.ok || shown.code !== "dry_run") throw new Error(shown.message);
    // The child commits again between the confirmation's dialog and the rebase.
    const later = r.commitInWorktree("c.txt", "c\n", "add c");
    const refused = await rebaseHandoff(deps, r.id, { dryRun: false, confirmed: shown.plan });
    expect(refused).toMatchObject({
      ok: false,
      code: "moved",
      message: `main or ${r.branch} changed since the rebase was shown; nothing was rebased. Look at it again.`,
    });
    expect(tipOf(r)).toBe(later);
    expect((await r.read()).rebases).toBeUndefined();
    // Shown again, it runs.
    const again = await rebaseHandoff(deps, r.id, { dryRun: true });
    if (!again.ok || again.code !== "dry_run") throw new Error(again.message);
    expect(await rebaseHandoff(deps, r.id, { dryRun: false, confirmed: again.plan })).toMatchObject({
      ok: true,
      code: "rebased",
    });
  });

  it("refuses, changing nothing: a dirty worktree, a conflict, a target that has not moved", async () => {
    const r = await moved();
    const expectRefused = async (code: string, pattern: RegExp): Promise<void> => {
      const before = r.snapshot();
      const manifest = readFileSync(r.store.pathFor(r.id), "utf8");
      const notes = await notesOf(r);
      const outcome = await rebaseHandoff(createRebaseDeps(r.env), r.id, { dryRun: false });
      expect(outcome).toMatchObject({ ok: false, code });
      expect(outcome.message).toMatch(pattern);
      expect(r.snapshot()).toEqual(before);
      expect(readFileSync(r.store.pathFor(r.id), "utf8")).toBe(manifest);
      expect(await notesOf(r)).toEqual(notes);
    };
    // The child's Pi is in a turn: its session ends with the user's prompt.
    const header = { type: "session", version: 3, id: "child", timestamp: new Date().toISOString(), cwd: r.worktree };
    const prompt = {
      type: "message",
      id: "aaaa0001",
      parentId: null,
      timestamp: new Date().toISOString(),
      message: { role: "user", content: "go", timestamp: Date.now() },
    };
    writeFileSync(r.childSessionFile, `${JSON.stringify(header)}\n${JSON.stringify(prompt)}\n`);
    const pi = await r.startLivePi();
    await expectRefused("child_working", /is in a turn \(working: a prompt is being answered\); nothing was rebased/);
    pi.kill("SIGKILL");
    await new Promise((resolve) => pi.once("exit", resolve));
    writeFileSync(join(r.worktree, "draft.txt"), "draft\n");
    await expectRefused("worktree_dirty", /uncommitted changes \(draft\.txt\); nothing was rebased/);
    r.repo.run(["clean", "-fq"], { cwd: r.worktree });
    r.repo.commitFile("a.txt", "main's a\n", "main adds a too");
    await expectRefused("conflict", /would conflict in a\.txt; nothing was rebased\. Merge main into feat\/land/);
    const dry = await runCli(["rebase", r.id, "--dry-run"], r.env, r.repo.root);
    expect(dry.status).toBe(1);
    r.repo.run(["reset", "--quiet", "--hard", "HEAD~1"]);
    const ok = await runCli(["rebase", r.id, "--dry-run"], r.env, r.repo.root);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("Would:\nRebase 2 commits of feat/land onto main");
    await rebaseHandoff(createRebaseDeps(r.env), r.id, { dryRun: false });
    await expectRefused("up_to_date", /already has main's tip/);
  });

  const CASES = [
    {
      point: "rebase-intent",
      moved: false,
      inspect: /rebase: +interrupted before the branch moved: feat\/land is still at the old tip/,
    },
    {
      point: "rebase-move",
      moved: true,
      inspect:
        /rebase: +interrupted after the branch moved: feat\/land is at the new tip [0-9a-f]{12} \(rebased; pi-handoff rebase \S+ records it\)/,
    },
    { point: "rebase-record", moved: true, inspect: /rebase: +rebased 2 commits onto main/ },
  ] as const;
  for (const { point, moved: after, inspect } of CASES) {
    it(`leaves the old or the new tip after kill-after:${point}, inspect says which, the next rebase settles it`, async () => {
      const r = await moved();
      const killed = await runCli(["rebase", r.id], { ...r.env, PI_HANDOFF_FAULT: `kill-after:${point}` }, r.repo.root);
      expect(killed.signal).toBe("SIGKILL");
      const intended = (await r.read()).rebases?.at(-1);
      expect(tipOf(r)).toBe(after ? intended?.to : r.childB);
      const shown = await runCli(["inspect", r.id], r.env, r.repo.root);
      expect(shown.stdout).toMatch(inspect);
      const again = await runCli(["rebase", r.id], r.env, r.repo.root);
      expect(again.status, again.stderr).toBe(point === "rebase-record" ? 1 : 0);
      expect(r.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: r.worktree })).toBe("");
      expect(existsSync(join(r.worktree, "m.txt"))).toBe(true);
      const states = (await r.read()).rebases?.map((rebase) => rebase.state);
      expect(states).toEqual(after ? ["rebased"] : ["abandoned", "rebased"]);
      expect(await notesOf(r)).toHaveLength(1);
    });
  }

  it("finishes a worktree a kill left behind after the branch moved", async () => {
    const r = await moved();
    await runCli(["rebase", r.id], { ...r.env, PI_HANDOFF_FAULT: "kill-after:rebase-intent" }, r.repo.root);
    const intended = (await r.read()).rebases?.at(-1);
    if (intended === undefined) throw new Error("no intent");
    // As if killed between the branch's move and its worktree's: the branch at the new tip, the files still old.
    r.repo.run(["update-ref", `refs/heads/${r.branch}`, intended.to, intended.from]);
    expect(existsSync(join(r.worktree, "m.txt"))).toBe(false);
    const settled = await runCli(["rebase", r.id], r.env, r.repo.root);
    expect(settled.stdout).toBe(
      `An interrupted rebase had already moved feat/land to ${intended.to}; it is recorded now. feat/land already has main's tip ${r.main.slice(0, 12)}; nothing to rebase.\n`,
    );
    expect(readFileSync(join(r.worktree, "m.txt"), "utf8")).toBe("m\n");
    expect(r.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: r.worktree })).toBe("");
    expect(await notesOf(r)).toHaveLength(1);
  });
});

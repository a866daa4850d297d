/**
 * The conflict forecast (issue 24), on real git: `pi-handoff forecast --json` names the true
 * conflicting paths for a scripted set of sibling handoffs (with their target, and pairwise) and
 * no false ones, says how far the target moved past each, and changes nothing (refs, index, files).
 */
import { afterEach, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import { LandGit } from "../../src/git/land.ts";
import { mergeTrees, type GitRunner, type MergePair } from "../../src/git/merge-tree.ts";
import { GitTimeoutError, type GitRun } from "../../src/git/runner.ts";
import { forecastHandoffs } from "../../src/forecast/forecast.ts";
import { ForecastReportSchema } from "../../src/inventory/report-schema.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

/**
 * Three siblings into main: A and B both change file-1.txt (A-B conflict); B deletes z.txt, which C
 * changes (B-C conflict); C and main both change README.md (C-main conflict); A and C touch
 * nothing in common, and A and B conflict with nothing on main.
 */
async function siblings(): Promise<{ r: LandRig; a: string; b: string; c: string }> {
  const r = (rig = await createLandRig());
  r.repo.commitFile("z.txt", "z\n", "main adds z");
  const b = await r.addHandoff("feat/b");
  const c = await r.addHandoff("feat/c");
  r.commitInWorktree("file-1.txt", "A\n", "A edits file-1");
  r.repo.commitFile("file-1.txt", "B\n", "B edits file-1", { cwd: b.worktree });
  r.repo.run(["rm", "--quiet", "z.txt"], { cwd: b.worktree });
  r.repo.run(["commit", "--quiet", "-m", "B deletes z"], { cwd: b.worktree });
  r.repo.commitFile("z.txt", "C\n", "C edits z", { cwd: c.worktree });
  r.repo.commitFile("README.md", "C readme\n", "C edits README", { cwd: c.worktree });
  r.repo.commitFile("README.md", "main readme\n", "main edits README");
  return { r, a: r.id, b: b.id, c: c.id };
}

describe("pi-handoff forecast", () => {
  it("names exactly the conflicting paths with the target and between siblings, and how far main moved", async () => {
    const { r, a, b, c } = await siblings();
    const before = r.snapshot();
    const run = await runCli(["forecast", "--json"], r.env, r.repo.root);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const entries = ForecastReportSchema.parse(JSON.parse(run.stdout));
    expect([...entries].sort((x, y) => x.id.localeCompare(y.id))).toEqual([
      {
        code: "to-land",
        id: a,
        branch: "feat/land",
        target: "main",
        behind: 2,
        conflicts: [],
        siblings: [
          { id: b, branch: "feat/b", conflicts: ["file-1.txt"] },
          { id: c, branch: "feat/c", conflicts: [] },
        ],
      },
      {
        code: "to-land",
        id: b,
        branch: "feat/b",
        target: "main",
        behind: 1,
        conflicts: [],
        siblings: [
          { id: a, branch: "feat/land", conflicts: ["file-1.txt"] },
          { id: c, branch: "feat/c", conflicts: ["z.txt"] },
        ],
      },
      {
        code: "to-land",
        id: c,
        branch: "feat/c",
        target: "main",
        behind: 1,
        conflicts: ["README.md"],
        siblings: [
          { id: a, branch: "feat/land", conflicts: [] },
          { id: b, branch: "feat/b", conflicts: ["z.txt"] },
        ],
      },
    ]);
    // Objects only: refs, HEADs, index files and every file of the checkouts as they were.
    expect(r.snapshot()).toEqual(before);
    // The forecast is what landing would meet: C's conflict with main is the one land refuses.
    const land = await runCli(["land", c, "--strategy", "merge", "--dry-run"], r.env, r.repo.root);
    expect(land.stderr).toContain("would conflict in README.md");
  });

  it("says it in words, and list shows a short column", async () => {
    const { r, c } = await siblings();
    const run = await runCli(["forecast"], r.env, r.repo.root);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `feat/c (${c}) into main: main has moved 1 commit past it\n  would conflict with main in README.md\n`,
    );
    const list = await runCli(["list"], r.env, r.repo.root);
    expect(list.stdout.split("\n")[0]).toMatch(/^ID +STATUS +CHILD +BRANCH +FLAGS +FORECAST +ACTIONS$/);
    expect(list.stdout).toMatch(new RegExp(`${c} .* behind 1, conflicts 1, clashes with feat/b `));
  });

  it("asks git only the merges it cannot know: none for handoffs still at one commit, each pair once", async () => {
    const r = (rig = await createLandRig());
    // Three handoffs at main's tip, then main moves on: each is behind 1 and has nothing to land.
    const b = await r.addHandoff("feat/b");
    const c = await r.addHandoff("feat/c");
    r.repo.commitFile("main.txt", "main\n", "main moves");
    const git = new GitCli({ env: r.env });
    const land = new LandGit({ env: r.env });
    const asked: MergePair[][] = [];
    const landGit = {
      mergeTrees: (repo: string, pairs: readonly MergePair[]) => {
        asked.push([...pairs]);
        return land.mergeTrees(repo, pairs);
      },
    };
    const manifests = async () => {
      const entries = await r.store.list();
      return entries.flatMap((entry) => (entry.ok ? [entry.manifest] : []));
    };
    const atOneCommit = await forecastHandoffs({ git, landGit }, await manifests());
    expect(atOneCommit.problems).toEqual([]);
    expect(atOneCommit.entries.map((entry) => [entry.id, entry.code, entry.behind]).sort()).toEqual(
      [
        [r.id, "nothing-to-land", 1],
        [b.id, "nothing-to-land", 1],
        [c.id, "nothing-to-land", 1],
      ].sort(),
    );
    expect(asked).toEqual([]);

    // The first edits main.txt too; feat/b commits a file of its own and feat/c is moved to the same
    // commit: two merges into main (one per distinct tip) and main's tree, then one between siblings (feat/b and
    // feat/c land as one tree, so their pair is clean without asking, and the first meets both as one).
    const own = r.commitInWorktree("main.txt", "mine\n", "the handoff edits main.txt");
    const shared = r.repo.commitFile("b.txt", "b\n", "feat/b adds b.txt", { cwd: b.worktree });
    r.repo.run(["update-ref", "refs/heads/feat/c", shared]);
    const mainTip = r.repo.run(["rev-parse", "refs/heads/main"]);
    const diverged = await forecastHandoffs({ git, landGit }, await manifests());
    expect(asked).toHaveLength(2);
    expect(asked[0]).toEqual(
      expect.arrayContaining([
        { ours: mainTip, theirs: own },
        { ours: mainTip, theirs: shared },
        // main's own tree (its merge with itself): what "a merge that changes nothing" compares with.
        { ours: mainTip, theirs: mainTip },
      ]),
    );
    expect(asked[0]).toHaveLength(3);
    expect(asked[1]).toEqual([{ base: mainTip, ours: expect.any(String), theirs: expect.any(String) }]);
    const byId = new Map(diverged.entries.map((entry) => [entry.id, entry]));
    expect(byId.get(r.id)).toMatchObject({ code: "to-land", conflicts: ["main.txt"] });
    expect(byId.get(b.id)).toMatchObject({ code: "to-land", conflicts: [] });
    for (const entry of diverged.entries)
      expect(entry.code === "to-land" ? entry.siblings.map((sibling) => sibling.conflicts) : undefined).toEqual([
        [],
        [],
      ]);
  });
});

/**
 * Issue 41 point 6: the target conflicts with sibling A (feat/land) in x.txt; B (feat/empty) has no
 * commits of its own, started after main changed x.txt; C (feat/done) was landed by squash. Only
 * A's own commits meet a conflict; B has nothing to land and C is landed: neither is a party to a clash.
 */
async function emptyAndLanded(): Promise<{ r: LandRig; a: string; b: string; c: string }> {
  const r = (rig = await createLandRig());
  r.commitInWorktree("x.txt", "A\n", "A edits x");
  r.repo.commitFile("x.txt", "main\n", "main edits x");
  const b = await r.addHandoff("feat/empty");
  const c = await r.addHandoff("feat/done");
  r.repo.commitFile("done.txt", "done\n", "C adds done.txt", { cwd: c.worktree });
  const landed = await runCli(["land", c.id, "--strategy", "squash", "-m", "Done"], r.env, r.repo.root);
  expect(landed.status).toBe(0);
  return { r, a: r.id, b: b.id, c: c.id };
}

describe("pi-handoff forecast of a child with no commits of its own", () => {
  it("lists an empty child as nothing to land and a landed one as landed, and neither clashes (--json)", async () => {
    const { r, a, b, c } = await emptyAndLanded();
    const run = await runCli(["forecast", "--json"], r.env, r.repo.root);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const entries = ForecastReportSchema.parse(JSON.parse(run.stdout));
    expect(entries).toEqual([
      { code: "to-land", id: a, branch: "feat/land", target: "main", behind: 2, conflicts: ["x.txt"], siblings: [] },
      { code: "nothing-to-land", id: b, branch: "feat/empty", target: "main", behind: 1 },
      { code: "landed", id: c, branch: "feat/done", target: "main", behind: 1, rule: "landing" },
    ]);
  });

  it("says so in words, and list's column", async () => {
    const { r, a, b, c } = await emptyAndLanded();
    const run = await runCli(["forecast"], r.env, r.repo.root);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      [
        `feat/land (${a}) into main: main has moved 2 commits past it`,
        "  would conflict with main in x.txt",
        `feat/empty (${b}) into main: main has moved 1 commit past it`,
        "  nothing to land: it has no commits of its own",
        `feat/done (${c}) into main: main has moved 1 commit past it`,
        "  already landed: its commits are in main (by pi-handoff land)",
        "",
      ].join("\n"),
    );
    const list = await runCli(["list"], r.env, r.repo.root);
    expect(list.stdout).toMatch(new RegExp(`${b} .* behind 1, nothing to land `));
    expect(list.stdout).toMatch(new RegExp(`${c} .* landed `));
  });

  it("counts only each sibling's own changes: a sibling started after main moved does not meet main's changes again", async () => {
    const r = (rig = await createLandRig());
    // A started before main changed x.txt and edits x.txt; B started after, and edits only y.txt.
    r.commitInWorktree("x.txt", "A\n", "A edits x");
    r.repo.commitFile("x.txt", "main\n", "main edits x");
    const b = await r.addHandoff("feat/later");
    r.repo.commitFile("y.txt", "B\n", "B adds y", { cwd: b.worktree });
    const run = await runCli(["forecast", "--json"], r.env, r.repo.root);
    expect(run.stderr).toBe("");
    const entries = ForecastReportSchema.parse(JSON.parse(run.stdout));
    expect(entries).toEqual([
      {
        code: "to-land",
        id: r.id,
        branch: "feat/land",
        target: "main",
        behind: 1,
        conflicts: ["x.txt"],
        siblings: [{ id: b.id, branch: "feat/later", conflicts: [] }],
      },
      {
        code: "to-land",
        id: b.id,
        branch: "feat/later",
        target: "main",
        behind: 0,
        conflicts: [],
        siblings: [{ id: r.id, branch: "feat/land", conflicts: [] }],
      },
    ]);
  });
});

describe("pi-handoff forecast when git cannot merge the siblings", () => {
  /** The merges between siblings (with a base) answered by a git that fails as `git` does; the rest by the real git. */
  const failingSiblingMerges = async (git: GitRunner) => {
    const { r, c } = await siblings();
    const land = new LandGit({ env: r.env });
    const landGit = {
      mergeTrees: (repo: string, pairs: readonly MergePair[]) =>
        pairs.some((pair) => pair.base !== undefined) ? mergeTrees(git, pairs) : land.mergeTrees(repo, pairs),
    };
    const entries = await r.store.list();
    const manifests = entries.flatMap((entry) => (entry.ok ? [entry.manifest] : []));
    const forecast = await forecastHandoffs({ git: new GitCli({ env: r.env }), landGit }, manifests);
    // Each handoff's own forecast still stands.
    expect(forecast.entries.find((entry) => entry.id === c)).toMatchObject({ conflicts: ["README.md"] });
    return { repo: r.repo.root, problems: forecast.problems };
  };
  const answer = (exitCode: number, stderr: string): GitRun => ({ exitCode, stdout: Buffer.alloc(0), stderr });

  it("names the git version only where git says it does not know the option", async () => {
    // git 2.38: neither --stdin nor --merge-base is known.
    const old = await failingSiblingMerges(async (args) => {
      const option = args.find((arg) => arg === "--stdin" || arg.startsWith("--merge-base=")) ?? "";
      return answer(
        129,
        `error: unknown option \`${option.slice(2)}'\nusage: git merge-tree [--write-tree] [<options>] <branch1> <branch2>\n`,
      );
    });
    expect(old.problems).toEqual([
      `Sibling clashes in ${old.repo} are not forecast: this git cannot merge from a given base (git merge-tree --merge-base with trees needs git 2.45 or newer).`,
    ]);
  });

  it("says a timeout, or another failure, as it is", async () => {
    const timedOut = await failingSiblingMerges(async () => {
      throw new GitTimeoutError("git merge-tree timed out after 1m in /repo.");
    });
    expect(timedOut.problems).toEqual([
      `Sibling clashes in ${timedOut.repo} are not forecast: git merge-tree timed out after 1m in /repo.`,
    ]);
    const refused = await failingSiblingMerges(async () => answer(128, "fatal: unable to read tree 0123abcd\n"));
    expect(refused.problems).toEqual([
      `Sibling clashes in ${refused.repo} are not forecast: git merge-tree --stdin failed: unable to read tree 0123abcd.`,
    ]);
  });
});

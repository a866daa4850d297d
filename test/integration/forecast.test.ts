/**
 * The conflict forecast (issue 24), on real git: `pi-handoff forecast --json` names the true
 * conflicting paths for a scripted set of sibling handoffs (with their target, and pairwise) and
 * no false ones, says how far the target moved past each, and changes nothing (refs, index, files).
 */
import { afterEach, describe, expect, it } from "vitest";
import { SimpleGitPort } from "../../src/git/git.ts";
import { LandGit } from "../../src/git/land.ts";
import { forecastHandoffs } from "../../src/recovery/forecast.ts";
import { ForecastReportSchema } from "../../src/recovery/report-schema.ts";
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

  it("asks git only the merges it cannot know: none for handoffs still at one commit, each pair of commits once", async () => {
    const r = (rig = await createLandRig());
    // Three handoffs at main's tip, then main moves on: each is behind 1 and holds nothing main lacks.
    const b = await r.addHandoff("feat/b");
    const c = await r.addHandoff("feat/c");
    r.repo.commitFile("main.txt", "main\n", "main moves");
    const git = new SimpleGitPort({ env: r.env });
    const land = new LandGit({ env: r.env });
    const asked: { ours: string; theirs: string }[][] = [];
    const landGit = {
      mergeTrees: (repo: string, pairs: readonly { ours: string; theirs: string }[]) => {
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
    expect(atOneCommit.entries.map((entry) => [entry.id, entry.behind, entry.conflicts, entry.siblings])).toEqual(
      [
        [
          r.id,
          1,
          [],
          [
            { id: b.id, branch: "feat/b", conflicts: [] },
            { id: c.id, branch: "feat/c", conflicts: [] },
          ],
        ],
        [
          b.id,
          1,
          [],
          [
            { id: r.id, branch: "feat/land", conflicts: [] },
            { id: c.id, branch: "feat/c", conflicts: [] },
          ],
        ],
        [
          c.id,
          1,
          [],
          [
            { id: r.id, branch: "feat/land", conflicts: [] },
            { id: b.id, branch: "feat/b", conflicts: [] },
          ],
        ],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    expect(asked).toEqual([]);

    // One of them commits main.txt too: its merge into main, and with the tip the two others share, once.
    const own = r.commitInWorktree("main.txt", "mine\n", "the handoff edits main.txt");
    const shared = r.repo.run(["rev-parse", "refs/heads/feat/b"]);
    const mainTip = r.repo.run(["rev-parse", "refs/heads/main"]);
    const diverged = await forecastHandoffs({ git, landGit }, await manifests());
    expect(asked).toEqual([
      expect.arrayContaining([
        { ours: mainTip, theirs: own },
        ...(r.id < b.id ? [{ ours: own, theirs: shared }] : [{ ours: shared, theirs: own }]),
      ]),
    ]);
    expect(asked[0]).toHaveLength(2);
    const ownEntry = diverged.entries.find((entry) => entry.id === r.id);
    expect(ownEntry?.conflicts).toEqual(["main.txt"]);
    expect(ownEntry?.siblings.map((sibling) => sibling.conflicts)).toEqual([[], []]);
  });
});

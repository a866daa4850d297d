/**
 * Plans tell the truth (issue 24), on real git: a dry run names no commit id that will not exist, a
 * confirmed plan lands with the very commit it showed (even when the clock moved on, which changes
 * a new commit's id), and a squash says what it squashed: the child's own message for one commit,
 * the first subject and a count for more, `--message` for its subject.
 */
import { afterEach, describe, expect, it } from "vitest";
import { landHandoff, type LandRequest } from "../../src/land/land.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";
import { waitFor } from "../support/tmux.ts";

const plain: LandRequest = { dryRun: false, remove: false, deleteBranch: false };
let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

async function setup(commits: number): Promise<LandRig> {
  const r = (rig = await createLandRig());
  for (let index = 1; index <= commits; index += 1)
    r.commitInWorktree(
      `c${index}.txt`,
      `${index}\n`,
      index === 1 ? "add the login form\n\nwith its body" : `step ${index}`,
    );
  r.repo.commitFile("m.txt", "m\n", "main moves");
  return r;
}

const message = (r: LandRig): string => r.repo.run(["log", "-1", "--format=%B", "main"]).trimEnd();

describe("a squash says what it squashed", () => {
  it("keeps the child's own message for one commit", async () => {
    const r = await setup(1);
    expect(await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" })).toMatchObject({ ok: true });
    expect(message(r)).toBe(`add the login form\n\nwith its body\n\nLanded from handoff ${r.id} (branch feat/land).`);
  });

  it("names the first subject and how many more, or the subject --message gives", async () => {
    const r = await setup(3);
    const landed = await runCli(["land", r.id, "--strategy", "squash", "-m", "Login form"], r.env, r.repo.root);
    expect(landed.status).toBe(0);
    expect(message(r)).toBe(
      `Login form\n\n3 commits squashed:\n* add the login form\n* step 2\n* step 3\n\nLanded from handoff ${r.id} (branch feat/land).`,
    );
    r.repo.run(["reset", "--quiet", "--hard", "HEAD~1"]);
    await r.store.update(r.id, (m) => {
      m.landings = [];
    });
    expect(await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" })).toMatchObject({ ok: true });
    expect(message(r).split("\n")[0]).toBe("add the login form (and 2 more commits)");
  });

  it("refuses --message where no commit of its own is made, changing nothing", async () => {
    const r = (rig = await createLandRig());
    r.commitInWorktree("a.txt", "a\n", "add a");
    const before = r.snapshot();
    const refused = await runCli(["land", r.id, "-m", "unused"], r.env, r.repo.root);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      "pi-handoff land: --message names the commit a merge or a squash makes; landing feat/land by fast-forward makes none of its own. Add --strategy merge or squash, or leave --message out.\n",
    );
    expect(r.snapshot()).toEqual(before);
  });
});

describe("a plan names only what will exist", () => {
  it("a dry run of a squash shows no id for the commit it has not made", async () => {
    const r = await setup(2);
    const from = r.repo.run(["rev-parse", "--short=12", "main"]);
    const dry = await runCli(["land", r.id, "--strategy", "squash", "--dry-run"], r.env, r.repo.root);
    expect(dry.status).toBe(0);
    const lines = dry.stdout.split("\n");
    expect(lines[1]).toBe(
      `Land 2 commits of feat/land into main (${from} -> a new commit): create one squashed commit on main.`,
    );
    expect(lines[2]).toBe("  (a new commit's id is known once it is made: it holds the time it is made at)");
    // Every id the plan names is a commit that exists now.
    for (const id of dry.stdout.match(/\b[0-9a-f]{12}\b/g) ?? [])
      expect(r.repo.run(["cat-file", "-t", id])).toBe("commit");
  });

  it("a confirmed plan lands the very commit it showed, also a second later", async () => {
    const r = await setup(2);
    const shown = await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash", dryRun: true });
    if (!shown.ok || shown.code !== "dry_run") throw new Error(shown.message);
    // A commit made now would carry another time, so another id.
    const second = Math.floor(Date.now() / 1000);
    await waitFor(() => Math.floor(Date.now() / 1000) > second, { timeoutMs: 5_000, description: "the next second" });
    const landed = await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash", confirmed: shown.plan });
    expect(landed).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["rev-parse", "main"])).toBe(shown.plan.to);
  });
});

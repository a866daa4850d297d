/**
 * `pi-handoff land` on real git: every strategy (exact SHAs, parents, trees, authors), the target
 * checked out (files updated) or not (the ref alone), every refusal changing nothing (refs, HEADs,
 * index files and files byte-identical), --dry-run, --remove, the record in the manifest and the
 * notice for the parent.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { landHandoff, type LandRequest } from "../../src/land/land.ts";
import { reportMessage } from "../../src/adoption/reports.ts";
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

function parentsOf(r: LandRig, sha: string): string[] {
  return r.repo.run(["rev-list", "--parents", "-n", "1", sha]).split(" ").slice(1);
}

describe("land strategies", () => {
  it("fast-forwards the checked-out target: exact SHAs, files updated, landing recorded, parent told", async () => {
    const r = await setup();
    const before = r.repo.run(["rev-parse", "main"]);
    const first = r.commitInWorktree("a.txt", "a\n", "add a");
    const second = r.commitInWorktree("b.txt", "b\n", "add b");
    const outcome = await landHandoff(r.deps(), r.id, plain);
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["rev-parse", "main"])).toBe(second);
    expect(readFileSync(join(r.repo.root, "b.txt"), "utf8")).toBe("b\n");
    expect(r.repo.run(["status", "--porcelain"])).toBe("");
    const landing = (await r.read()).landings?.at(-1);
    expect(landing).toMatchObject({
      state: "landed",
      into: "main",
      strategy: "ff",
      from: before,
      to: second,
      branchTip: second,
      checkout: r.repo.root,
    });
    expect(landing?.commits).toEqual([
      { sha: first, subject: "add a" },
      { sha: second, subject: "add b" },
    ]);
    const { reports } = await ChildReportStore.forAgentDir(r.agentDir).list(r.id);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      kind: "landed",
      landing: { into: "main", strategy: "ff", result: second },
      parentSessionFile: r.parentSessionFile,
    });
    expect(reports[0]?.commits.map((c) => c.sha)).toEqual([first, second]);
  });

  it("the notice of a landing this process said is for the model alone from the moment its file exists", async () => {
    // The parent's own watch may deliver the notice as soon as the file appears, before the write
    // returns to the landing: by then it must already be marked as said here (drawn once).
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    const deps = r.deps();
    const store = deps.reports;
    const displayedWhenWritten: boolean[] = [];
    const reports = Object.create(store) as typeof store;
    reports.write = async (...args: Parameters<typeof store.write>) => {
      const written = await store.write(...args);
      const found = (await store.list(r.id)).reports.find((report) => report.id === written.id);
      if (found !== undefined) displayedWhenWritten.push(reportMessage(found).display !== false);
      return written;
    };
    expect(await landHandoff({ ...deps, reports }, r.id, plain)).toMatchObject({ ok: true, code: "landed" });
    expect(displayedWhenWritten).toEqual([false]);
  });

  it("answers at once while another command acts on the handoff, and changes nothing", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    const before = r.snapshot();
    const deps = r.deps();
    const answer = await deps.store.withActionLock(r.id, "relaunch", () =>
      landHandoff(deps, r.id, { ...plain, remove: true }),
    );
    expect(answer).toMatchObject({ ok: false, code: "busy" });
    expect(answer.message).toMatch(new RegExp(`^Handoff ${r.id} is busy: process ${process.pid} is relaunching it`));
    expect(r.snapshot()).toEqual(before);
    expect((await r.read()).landings).toBeUndefined();
  });

  it("moves a target checked out nowhere with update-ref, leaving the main checkout byte-identical", async () => {
    const r = await setup();
    r.repo.run(["branch", "release"]);
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    const mainBefore = r.snapshot();
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, into: "release" });
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["rev-parse", "release"])).toBe(tip);
    const after = r.snapshot();
    expect(after.refs).not.toBe(mainBefore.refs);
    expect({ ...after, refs: "" }).toEqual({ ...mainBefore, refs: "" });
    expect(r.repo.run(["reflog", "-1", "--format=%gs", "release"])).toMatch(/pi-handoff land/);
  });

  it("rebases onto a target that moved: same authors, messages and trees, a linear history", async () => {
    const r = await setup();
    const childA = r.commitInWorktree("a.txt", "a\n", "add a\n\nwith a body");
    const childB = r.commitInWorktree("b.txt", "b\n", "add b");
    const mainMoved = r.repo.commitFile("m.txt", "m\n", "main moves");
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "rebase" });
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    const tip = r.repo.run(["rev-parse", "main"]);
    const [rebasedB] = [tip];
    const rebasedA = parentsOf(r, rebasedB)[0] ?? "";
    expect(parentsOf(r, rebasedA)).toEqual([mainMoved]);
    expect(r.repo.run(["cat-file", "commit", rebasedA]).split("\n\n").slice(1).join("\n\n")).toBe(
      "add a\n\nwith a body",
    );
    expect(r.repo.run(["log", "-1", "--format=%B", rebasedA])).toBe(r.repo.run(["log", "-1", "--format=%B", childA]));
    for (const [original, rebased] of [
      [childA, rebasedA],
      [childB, rebasedB],
    ] as const) {
      expect(r.repo.run(["log", "-1", "--format=%an <%ae> %ad", "--date=raw", rebased])).toBe(
        r.repo.run(["log", "-1", "--format=%an <%ae> %ad", "--date=raw", original]),
      );
    }
    expect(r.repo.run(["ls-tree", "--name-only", "main"]).split("\n").sort()).toEqual([
      "README.md",
      "a.txt",
      "b.txt",
      "file-1.txt",
      "m.txt",
    ]);
    expect(r.repo.run(["rev-parse", r.branch])).toBe(childB);
    expect(readFileSync(join(r.repo.root, "a.txt"), "utf8")).toBe("a\n");
  });

  it("merges with a merge commit whose parents are the old target and the branch tip", async () => {
    const r = await setup();
    const child = r.commitInWorktree("a.txt", "a\n", "add a");
    const mainMoved = r.repo.commitFile("m.txt", "m\n", "main moves");
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "merge" });
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(parentsOf(r, "main")).toEqual([mainMoved, child]);
    expect(r.repo.run(["log", "-1", "--format=%s", "main"])).toBe(`Merge branch '${r.branch}' into main`);
    expect(r.repo.run(["merge-base", "--is-ancestor", child, "main"])).toBe("");
  });

  it("squashes into one commit on the old target with the merged tree", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.commitInWorktree("b.txt", "b\n", "add b");
    const before = r.repo.run(["rev-parse", "main"]);
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash" });
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(parentsOf(r, "main")).toEqual([before]);
    expect(r.repo.run(["rev-parse", "main^{tree}"])).toBe(r.repo.run(["rev-parse", `${r.branch}^{tree}`]));
    expect(r.repo.run(["log", "-1", "--format=%B", "main"])).toBe(
      `add a (and 1 more commit)\n\n2 commits squashed:\n* add a\n* add b\n\nLanded from handoff ${r.id} (branch ${r.branch}).\n`,
    );
  });

  it("--remove lands, retires the worktree through the safe removal and keeps the branch", async () => {
    const r = await setup();
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, remove: true });
    expect(outcome).toMatchObject({ ok: true, code: "landed", removal: { code: "removed" } });
    expect(r.repo.run(["rev-parse", "main"])).toBe(tip);
    expect(r.repo.run(["rev-parse", r.branch])).toBe(tip);
    expect(r.repo.run(["worktree", "list", "--porcelain"])).not.toContain(r.worktree);
    expect((await r.read()).state).toBe("removed");
  });

  it("--remove that cannot check for a running Pi lands, keeps the worktree, and names the command that removes it", async () => {
    const r = await setup();
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    const problem = "Running processes could not be looked for: ps did not answer within 5 s.";
    const outcome = await landHandoff(
      { ...r.deps(), scanProcesses: async () => ({ piProcesses: [], problem }) },
      r.id,
      { ...plain, remove: true },
    );
    expect(outcome).toMatchObject({ ok: true, code: "landed", removal: { code: "refused", reason: "needs_force" } });
    expect(r.repo.run(["rev-parse", "main"])).toBe(tip);
    expect(outcome.ok ? outcome.message : "").toContain(
      `The worktree was not removed: Handoff ${r.id} has a session that could not be checked for a running Pi (${problem.slice(0, -1)}); nothing was removed (run pi-handoff remove ${r.id} --force to remove it anyway:`,
    );
    expect(r.repo.run(["worktree", "list", "--porcelain"])).toContain(r.worktree);
  });

  it("lands only the plan that was confirmed: a commit made after the dry run stops it, and nothing changes", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    const shown = await landHandoff(r.deps(), r.id, { ...plain, dryRun: true });
    if (!shown.ok || shown.code !== "dry_run") throw new Error(shown.message);
    const mainBefore = r.repo.run(["rev-parse", "main"]);
    r.commitInWorktree("b.txt", "b\n", "add b, never shown");
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, confirmed: shown.plan });
    expect(outcome).toMatchObject({
      ok: false,
      code: "moved",
      message: `main or ${r.branch} changed since the landing was shown; nothing was landed. Look at it again.`,
    });
    expect(r.repo.run(["rev-parse", "main"])).toBe(mainBefore);
    expect((await r.read()).landings ?? []).toEqual([]);
  });

  it("--remove after a squash needs no --force: the branch keeps its commits", async () => {
    const r = await setup();
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "squash", remove: true });
    expect(outcome).toMatchObject({ ok: true, code: "landed", removal: { code: "removed" } });
    expect(r.repo.run(["rev-parse", r.branch])).toBe(tip);
  });
});

describe("land refusals change nothing", () => {
  async function expectRefusal(r: LandRig, request: LandRequest, code: string, pattern: RegExp): Promise<void> {
    const before = r.snapshot();
    const manifestBefore = readFileSync(r.store.pathFor(r.id), "utf8");
    const outcome = await landHandoff(r.deps(), r.id, request);
    expect(outcome).toMatchObject({ ok: false, code });
    if (outcome.ok) return;
    expect(outcome.message).toMatch(pattern);
    expect(r.snapshot()).toEqual(before);
    expect(readFileSync(r.store.pathFor(r.id), "utf8")).toBe(manifestBefore);
    expect((await ChildReportStore.forAgentDir(r.agentDir).list(r.id)).reports).toEqual([]);
  }

  it("refuses a target that cannot be fast-forwarded without a strategy, naming the choices", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    await expectRefusal(r, plain, "needs_strategy", /--strategy rebase, merge or squash/);
    await expectRefusal(r, { ...plain, strategy: "ff" }, "not_fast_forward", /Use --strategy rebase, merge or squash/);
  });

  it("refuses conflicts found beforehand, listing the paths, for every strategy", async () => {
    const r = await setup();
    r.commitInWorktree("file-1.txt", "child\n", "child edits");
    r.repo.commitFile("file-1.txt", "main\n", "main edits");
    for (const strategy of ["rebase", "merge", "squash"] as const) {
      await expectRefusal(
        r,
        { ...plain, strategy },
        "conflict",
        /would conflict in file-1\.txt; nothing was landed\. Merge main into feat\/land/,
      );
    }
  });

  it("refuses a rebase of merge commits, and a target that is not a local branch", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("s.txt", "s\n", "main work", { cwd: r.repo.root });
    r.repo.run(["merge", "--quiet", "--no-ff", "--no-edit", "main"], { cwd: r.worktree });
    // main moves on again, so the rebase would have to re-make the merge.
    r.repo.commitFile("t.txt", "t\n", "more main work", { cwd: r.repo.root });
    await expectRefusal(
      r,
      { ...plain, strategy: "rebase" },
      "not_linear",
      /contains merge commits, which a rebase would flatten; nothing was landed\. Use --strategy merge or squash/,
    );
    await expectRefusal(
      r,
      { ...plain, into: "no-such-branch" },
      "no_target",
      /There is no local branch "no-such-branch" in .*; give an existing one with --into/,
    );
    await expectRefusal(r, { ...plain, into: r.branch }, "no_target", /Cannot land feat\/land into itself/);
  });

  it("refuses a dirty worktree (modified or untracked files)", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    writeFileSync(join(r.worktree, "a.txt"), "changed\n");
    await expectRefusal(
      r,
      plain,
      "worktree_dirty",
      /uncommitted changes \(a\.txt\); nothing was landed\. Commit or stash them there/,
    );
    r.repo.run(["checkout", "--", "a.txt"], { cwd: r.worktree });
    writeFileSync(join(r.worktree, "new.txt"), "new\n");
    await expectRefusal(r, plain, "worktree_dirty", /new\.txt/);
  });

  it("refuses a target checkout with uncommitted changes in files the landing touches, and lands when they are elsewhere", async () => {
    const r = await setup();
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    writeFileSync(join(r.repo.root, "a.txt"), "mine\n");
    await expectRefusal(
      r,
      plain,
      "target_dirty",
      new RegExp(
        `${r.repo.root} \\(where main is checked out\\) has uncommitted changes in files the landing changes \\(a\\.txt\\)`,
      ),
    );
    writeFileSync(join(r.repo.root, "a.txt"), "");
    r.repo.run(["clean", "-fq"]);
    writeFileSync(join(r.repo.root, "README.md"), "my edit\n");
    const outcome = await landHandoff(r.deps(), r.id, plain);
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["rev-parse", "main"])).toBe(tip);
    expect(readFileSync(join(r.repo.root, "README.md"), "utf8")).toBe("my edit\n");
  });

  it("refuses while the child Pi is in a turn, and --remove while it runs at all", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    const header = { type: "session", version: 3, id: "child", timestamp: new Date().toISOString(), cwd: r.worktree };
    const user = {
      type: "message",
      id: "aaaa0001",
      parentId: null,
      timestamp: new Date().toISOString(),
      message: { role: "user", content: "go", timestamp: Date.now() },
    };
    writeFileSync(r.childSessionFile, `${JSON.stringify(header)}\n${JSON.stringify(user)}\n`);
    await r.startLivePi();
    await expectRefusal(
      r,
      plain,
      "child_working",
      /is in a turn \(working: a prompt is being answered\); nothing was landed\. Let it finish/,
    );
    const done = {
      type: "message",
      id: "aaaa0002",
      parentId: "aaaa0001",
      timestamp: new Date().toISOString(),
      message: {
        role: "assistant",
        content: [{ type: "text", text: "done" }],
        stopReason: "stop",
        timestamp: Date.now(),
      },
    };
    writeFileSync(r.childSessionFile, `${JSON.stringify(header)}\n${JSON.stringify(user)}\n${JSON.stringify(done)}\n`);
    await expectRefusal(
      r,
      { ...plain, remove: true },
      "child_running",
      /still runs \(pid \d+\), so its worktree cannot be removed; nothing was landed\. Quit that Pi first, or land without --remove/,
    );
  });

  it("refuses when there is nothing to land, and --dry-run says exactly what would happen", async () => {
    const r = await setup();
    await expectRefusal(r, plain, "nothing_to_land", /Everything on feat\/land is already in main/);
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    const before = r.snapshot();
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, dryRun: true, remove: true });
    const from = r.repo.run(["rev-parse", "main"]);
    expect(outcome).toMatchObject({ ok: true, code: "dry_run" });
    expect(outcome.ok && outcome.message).toBe(
      [
        "Dry run, nothing changed. Would:",
        `Land 1 commit of feat/land into main (${from.slice(0, 12)} -> ${tip.slice(0, 12)}): fast-forward main to ${tip.slice(0, 12)}.`,
        `  ${tip.slice(0, 12)} add a`,
        `main is checked out in ${r.repo.root}: 1 file there is updated (git merge --ff-only).`,
        "Then remove the handoff's worktree (branch feat/land kept).",
      ].join("\n"),
    );
    expect(r.snapshot()).toEqual(before);
  });
});

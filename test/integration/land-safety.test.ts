/**
 * Nothing lost by `pi-handoff land`, on real git (issue 22): a landing never overwrites a file git
 * ignores in the target's checkout, never stashes or unstages the person's work there
 * (`merge.autoStash`), never moves a branch that is being rebased, puts the checkout back as it
 * was when git is stopped half-way, honours commit signing and refuses to bypass commit hooks, and
 * runs with the person's own git identity and config. Each case states exactly what is preserved.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LandGit } from "../../src/git/land.ts";
import { landHandoff, type LandRequest } from "../../src/land/land.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

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

/**
 * What a landing must leave alone in a checkout: its index's entries (mode, object, stage, path),
 * staged and unstaged diffs, stashes, and the status of every file. Read without refreshing the
 * index, whose cached file times any `git status` may rewrite.
 */
function checkoutState(r: LandRig): Record<string, string> {
  const read = (args: string[]): string => r.repo.run(["--no-optional-locks", ...args]);
  return {
    index: read(["ls-files", "--stage"]),
    staged: read(["diff", "--cached", "--binary"]),
    unstaged: read(["diff", "--binary"]),
    stashes: read(["stash", "list"]),
    status: read(["status", "--porcelain=v1", "--untracked-files=all", "--ignored"]),
  };
}

/** The snapshot without the index files' bytes (their cached file times), for a checkout git rewrote and was put back. */
function filesAndRefs(r: LandRig): Record<string, string> {
  return Object.fromEntries(Object.entries(r.snapshot()).filter(([key]) => !key.endsWith(" index")));
}

describe("land leaves the target's checkout as the person left it", () => {
  it("refuses to overwrite a file git ignores there (.env): its bytes stay, nothing moves", async () => {
    const r = await setup();
    writeFileSync(join(r.repo.root, ".git", "info", "exclude"), ".env\n");
    writeFileSync(join(r.repo.root, ".env"), "SECRET=the real one\n");
    writeFileSync(join(r.worktree, ".env"), "SECRET=placeholder\n");
    r.repo.run(["add", "-f", ".env"], { cwd: r.worktree });
    r.repo.run(["commit", "--quiet", "-m", "add .env"], { cwd: r.worktree });
    const before = r.snapshot();
    const outcome = await landHandoff(r.deps(), r.id, plain);
    expect(outcome).toMatchObject({
      ok: false,
      code: "target_dirty",
      message: `${r.repo.root} (where main is checked out) has files git ignores that the landing would overwrite (.env); nothing was landed. Move them away (or commit them), then land again.`,
    });
    expect(readFileSync(join(r.repo.root, ".env"), "utf8")).toBe("SECRET=the real one\n");
    expect(r.snapshot()).toEqual(before);
    expect((await r.read()).landings).toBeUndefined();
  });

  it("keeps staged work staged and makes no stash with merge.autoStash=true", async () => {
    const r = await setup();
    r.repo.run(["config", "merge.autoStash", "true"]);
    const tip = r.commitInWorktree("a.txt", "a\n", "add a");
    writeFileSync(join(r.repo.root, "README.md"), "staged edit\n");
    r.repo.run(["add", "README.md"]);
    writeFileSync(join(r.repo.root, "file-1.txt"), "unstaged edit\n");
    const staged = r.repo.run(["diff", "--cached", "--binary"]);
    const unstaged = r.repo.run(["diff", "--binary"]);
    const outcome = await landHandoff(r.deps(), r.id, plain);
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["rev-parse", "main"])).toBe(tip);
    expect(r.repo.run(["diff", "--cached", "--binary"])).toBe(staged);
    expect(r.repo.run(["diff", "--binary"])).toBe(unstaged);
    expect(r.repo.run(["stash", "list"])).toBe("");
    expect(existsSync(join(r.repo.root, ".git", "MERGE_AUTOSTASH"))).toBe(false);
    expect(r.repo.run(["status", "--porcelain"])).toBe("M  README.md\n M file-1.txt");
  });

  it("refuses to move a branch that is being rebased (git rebase -i stopped on it): refs and files unchanged", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.run(["-c", "sequence.editor=sed -i -e s/^pick/edit/", "rebase", "--quiet", "-i", "HEAD~1"]);
    expect(r.repo.run(["worktree", "list", "--porcelain"])).toContain("detached");
    const before = r.snapshot();
    const outcome = await landHandoff(r.deps(), r.id, plain);
    expect(outcome).toMatchObject({
      ok: false,
      code: "target_busy",
      message: `main is being rebased in ${r.repo.root}; nothing was landed. Finish the rebase there (git rebase --continue) or abort it (git rebase --abort), then land again.`,
    });
    expect(r.snapshot()).toEqual(before);
    // The stopped rebase goes on as git left it.
    r.repo.run(["rebase", "--continue"]);
    expect(r.repo.run(["rev-parse", "main"])).toBe(r.repo.run(["rev-parse", "HEAD"]));
  });

  it("puts the checkout back when git is stopped half-way through its files (a slow smudge filter)", async () => {
    const r = await setup();
    r.repo.run(["config", "merge.autoStash", "true"]);
    r.repo.run(["config", "filter.slow.smudge", "sleep 8; cat"]);
    r.repo.run(["config", "filter.slow.clean", "cat"]);
    writeFileSync(join(r.worktree, ".gitattributes"), "*.slow filter=slow\n");
    writeFileSync(join(r.worktree, "big.slow"), "slow content\n");
    r.repo.run(["rm", "--quiet", "file-1.txt"], { cwd: r.worktree });
    r.repo.run(["add", ".gitattributes", "big.slow"], { cwd: r.worktree });
    r.repo.run(["commit", "--quiet", "-m", "slow files"], { cwd: r.worktree });
    writeFileSync(join(r.repo.root, "README.md"), "staged edit\n");
    r.repo.run(["add", "README.md"]);
    const before = filesAndRefs(r);
    const state = checkoutState(r);
    const main = r.repo.run(["rev-parse", "main"]);
    // Only the landing's own git calls get the short bound: the checkout of big.slow outlasts it.
    const deps = { ...r.deps(), landGit: new LandGit({ env: r.env, timeoutMs: 2_000 }) };
    const outcome = await landHandoff(deps, r.id, plain);
    expect(outcome).toMatchObject({ ok: false, code: "failed" });
    expect(outcome.message).toMatch(
      new RegExp(
        `^Could not move main: git merge timed out after 2 s in ${r.repo.root}\\.?; nothing was landed \\(main is still at ${main.slice(0, 12)}\\); the 2 files the stopped merge had changed in ${r.repo.root} were put back as they were\\.$`,
      ),
    );
    expect(r.repo.run(["rev-parse", "main"])).toBe(main);
    expect(readFileSync(join(r.repo.root, "file-1.txt"), "utf8")).toBe("1\n");
    expect(existsSync(join(r.repo.root, ".gitattributes"))).toBe(false);
    expect(existsSync(join(r.repo.root, "big.slow"))).toBe(false);
    expect(checkoutState(r)).toEqual(state);
    expect(filesAndRefs(r)).toEqual(before);
    expect(existsSync(join(r.repo.root, ".git", "MERGE_AUTOSTASH"))).toBe(false);
    expect((await r.read()).landings?.map((landing) => landing.state)).toEqual(["abandoned"]);
  }, 60_000);
});

describe("land makes its commits as the person's git would", () => {
  function fakeGpg(r: LandRig, ok: boolean): string {
    const program = join(r.repo.dir, ok ? "gpg-ok" : "gpg-fails");
    writeFileSync(
      program,
      ok
        ? "#!/bin/sh\ncat >/dev/null\necho '[GNUPG:] SIG_CREATED ' >&2\nprintf -- '-----BEGIN PGP SIGNATURE-----\\n\\nfake\\n-----END PGP SIGNATURE-----\\n'\n"
        : "#!/bin/sh\ncat >/dev/null\necho 'no secret key' >&2\nexit 2\n",
    );
    chmodSync(program, 0o755);
    return program;
  }

  it("signs a merge commit when commit.gpgSign is set", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    r.repo.run(["config", "commit.gpgSign", "true"]);
    r.repo.run(["config", "gpg.program", fakeGpg(r, true)]);
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "merge" });
    expect(outcome).toMatchObject({ ok: true, code: "landed" });
    expect(r.repo.run(["cat-file", "commit", "main"])).toContain("gpgsig -----BEGIN PGP SIGNATURE-----");
  });

  it("refuses, changing nothing, when signing fails, naming commit.gpgSign", async () => {
    const r = await setup();
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    r.repo.run(["config", "commit.gpgSign", "true"]);
    r.repo.run(["config", "gpg.program", fakeGpg(r, false)]);
    const before = r.snapshot();
    for (const strategy of ["merge", "squash", "rebase"] as const) {
      const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy });
      expect(outcome).toMatchObject({ ok: false, code: "failed" });
      expect(outcome.message).toMatch(
        /^Could not plan the landing: the commit could not be signed \(commit\.gpgSign is set\): git commit-tree failed: .*; nothing was landed\.$/,
      );
      expect(r.snapshot()).toEqual(before);
    }
  });

  it("refuses to bypass a commit-msg hook for a merge, naming it, and lands with --no-verify", async () => {
    const r = await setup();
    const hook = join(r.repo.root, ".git", "hooks", "commit-msg");
    mkdirSync(join(r.repo.root, ".git", "hooks"), { recursive: true });
    writeFileSync(hook, "#!/bin/sh\necho 'rejected' >&2\nexit 1\n");
    chmodSync(hook, 0o755);
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    const before = r.snapshot();
    const outcome = await landHandoff(r.deps(), r.id, { ...plain, strategy: "merge" });
    expect(outcome).toMatchObject({
      ok: false,
      code: "hooks",
      message: `Landing by merge makes a commit without running the repository's hooks that git merge runs (commit-msg in ${join(r.repo.root, ".git", "hooks")}); nothing was landed. Land by fast-forward (rebase the branch onto main in its worktree, where the hooks run), or pass --no-verify to land without them.`,
    });
    expect(r.snapshot()).toEqual(before);
    const forced = await landHandoff(r.deps(), r.id, { ...plain, strategy: "merge", noVerify: true });
    expect(forced).toMatchObject({ ok: true, code: "landed" });
  });

  it("commits with the identity in GIT_AUTHOR_*/GIT_COMMITTER_* and reads GIT_CONFIG_GLOBAL", async () => {
    const r = await setup();
    r.repo.run(["config", "--unset", "user.name"]);
    r.repo.run(["config", "--unset", "user.email"]);
    const global = join(r.repo.dir, "global.gitconfig");
    // Git may not guess an identity: only the environment's counts.
    writeFileSync(global, "[user]\n\tuseConfigOnly = true\n");
    const env = { ...r.env, GIT_CONFIG_GLOBAL: global };
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    const landed = await runCli(["land", r.id, "--strategy", "squash"], env, r.repo.root);
    expect(landed.stderr).toBe("");
    expect(landed.status).toBe(0);
    expect(r.repo.run(["log", "-1", "--format=%an <%ae> / %cn <%ce>", "main"])).toBe(
      "Handoff Test <handoff-test@example.invalid> / Handoff Test <handoff-test@example.invalid>",
    );
  });

  it("says a failure to commit under pi-handoff land:, and --delete-branch without --remove is bad input", async () => {
    const r = await setup();
    r.repo.run(["config", "--unset", "user.name"]);
    r.repo.run(["config", "--unset", "user.email"]);
    r.repo.run(["config", "user.useConfigOnly", "true"]);
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(r.env)) if (!/^GIT_(AUTHOR|COMMITTER)_/.test(key)) env[key] = value;
    r.commitInWorktree("a.txt", "a\n", "add a");
    r.repo.commitFile("m.txt", "m\n", "main moves");
    const before = r.snapshot();
    const failed = await runCli(["land", r.id, "--strategy", "merge"], env, r.repo.root);
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(
      /^pi-handoff land: Could not plan the landing: git commit-tree failed: .*no email was given and auto-detection is disabled.*; nothing was landed\.\n$/,
    );
    expect(r.snapshot()).toEqual(before);
    const bad = await runCli(["land", r.id, "--delete-branch"], r.env, r.repo.root);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe(
      "pi-handoff land: --delete-branch works only with --remove: the branch is checked out in the handoff's worktree until that is removed.\n",
    );
    expect(r.snapshot()).toEqual(before);
  });
});

describe("what reaches the terminal", () => {
  it("shows terminal escapes and line breaks of commit subjects and file names escaped in inspect and land --dry-run", async () => {
    const r = await setup();
    const subject = "fix \u001b[2K\u001b[1Ahidden \u001b]0;title\u0007 \u202eevil";
    const file = "odd\u001b[31m\nname.txt";
    writeFileSync(join(r.worktree, file), "x\n");
    r.repo.run(["add", "--", file], { cwd: r.worktree });
    r.repo.run(["commit", "--quiet", "-m", subject], { cwd: r.worktree });
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
    const inspect = await runCli(["inspect", r.id], r.env, r.repo.root);
    expect(inspect.status).toBe(0);
    expect(inspect.stdout).not.toMatch(raw);
    expect(inspect.stdout).toContain("fix \\u001b[2K\\u001b[1Ahidden \\u001b]0;title\\u0007 \\u202eevil");
    const dry = await runCli(["land", r.id, "--dry-run"], r.env, r.repo.root);
    expect(dry.status).toBe(0);
    expect(dry.stdout).not.toMatch(raw);
    expect(dry.stdout.split("\n")).toContain(
      `  ${r.repo.run(["rev-parse", "--short=12", r.branch])} fix \\u001b[2K\\u001b[1Ahidden \\u001b]0;title\\u0007 \\u202eevil`,
    );
    // The same text as JSON parses to exactly what git holds.
    const json = await runCli(["inspect", r.id, "--json"], r.env, r.repo.root);
    expect(json.stdout).not.toMatch(raw);
    const parsed = JSON.parse(json.stdout) as {
      handoff: { branchState: { unmerged: { commits: { subject: string }[] } } };
    };
    expect(parsed.handoff.branchState.unmerged.commits[0]?.subject).toBe(subject);
  });
});

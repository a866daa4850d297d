/**
 * Worktree setup through the real transaction: real git, a real fork of a real session, a real
 * multiplexer (a private tmux server, or Herdr: the test double, and the real Herdr in the
 * herdr-real project, which runs this file's Herdr cases only) and the stand-in child Pi started
 * by the real launch command.
 *
 * - postCreate commands run in the pane before Pi: a failure is a failed launch with the exit
 *   status, everything kept and Pi never started; fixed and re-run by hand, the child acknowledges.
 * - Settings (prefix, location template, copy, symlink, postCreate) with `--carry`, and a base that
 *   is behind its upstream: all in the worktree, the parent checkout byte-identical, all said.
 * - `--existing` on tmux and on Herdr; refusals for a branch checked out elsewhere or missing.
 * - A handoff started inside a linked worktree, on tmux and on Herdr (`--cwd <main checkout>`).
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HandoffConfig } from "../../src/config/schema.ts";
import { GitCli } from "../../src/git/git.ts";
import { CheckoutGit } from "../../src/git/checkout-git.ts";
import type { HandoffArgs } from "../../src/handoff/args.ts";
import { findChildProcess } from "../../src/child/launcher.ts";
import { HandoffTransaction, type HandoffOutcome } from "../../src/handoff/transaction.ts";
import type { HandoffStep, Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import type { Multiplexer } from "../../src/mux/types.ts";
import { forkActiveBranch } from "../../src/session/fork.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, startHerdr, type HerdrServer } from "../support/herdr.ts";
import { NODE_BIN, outsideShellEnv, PROJECT_ROOT, readEntries } from "../support/pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";
import { createParentConversation } from "../support/parent-session.ts";

const STAND_IN_PI = join(PROJECT_ROOT, "test", "support", "fixtures", "stand-in-pi.ts");
const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

interface Parent {
  file: string;
  leafId: string;
  sessionId: string;
  sessionDir: string;
  cwd: string;
}

/** A real two-message conversation whose cwd is `cwd`, in Pi's default session dir for it. */
function parentSession(cwd: string, agentDir: string): Parent {
  const parent = createParentConversation(cwd, defaultSessionDir(cwd, agentDir), {
    question: "set things up",
    answer: "done",
  });
  return {
    file: parent.sessionFile,
    leafId: parent.leafId,
    sessionId: parent.sessionId,
    sessionDir: parent.sessionDir,
    cwd,
  };
}

interface Rig {
  repo: TempRepo;
  agentDir: string;
  store: ManifestStore;
  env: Record<string, string>;
  handoff(
    mux: Multiplexer,
    args: Partial<HandoffArgs> & { branch: string },
    options?: { config?: HandoffConfig; parent?: Parent; postCreateMs?: number; faultAt?: HandoffStep },
  ): Promise<HandoffOutcome>;
  cleanup(): void;
}

function createRig(): Rig {
  const repo = createTempRepo({ prefix: "phw-setup-", extraCommits: 1 });
  const agentDir = join(repo.dir, "agent");
  mkdirSync(agentDir, { recursive: true });
  const env = outsideShellEnv(repo, agentDir);
  const store = ManifestStore.forAgentDir(agentDir);
  const git = new GitCli({ env, timeoutMs: 15_000 });
  const mainParent = parentSession(repo.root, agentDir);
  return {
    repo,
    agentDir,
    store,
    env,
    async handoff(mux, args, options = {}) {
      const parent = options.parent ?? mainParent;
      const transaction = new HandoffTransaction({
        git,
        checkoutGit: new CheckoutGit({ env }),
        store,
        selectMux: () => ({ ok: true, mux }),
        fork: (request) => forkActiveBranch(request, { SessionManager, CURRENT_SESSION_VERSION }),
        now: () => new Date(),
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        progress: () => {},
        timeouts: { shellMs: 10_000, confirmMs: 20_000, pollMs: 50, postCreateMs: options.postCreateMs ?? 20_000 },
        faults: { failAt: options.faultAt },
      });
      const outcome = await transaction.run({
        args: { base: "HEAD", baseGiven: false, focus: false, ...args },
        parent: {
          sessionFile: parent.file,
          sessionFileExists: true,
          sessionId: parent.sessionId,
          leafId: parent.leafId,
          cwd: parent.cwd,
          sessionDir: parent.sessionDir,
        },
        model: { provider: "faux", id: "faux-1", available: true },
        thinkingLevel: "low",
        projectTrusted: false,
        agentDir,
        piCommand: [NODE_BIN, STAND_IN_PI],
        extraPiArgs: [],
        env,
        ...(options.config !== undefined ? { config: options.config } : {}),
      });
      // The child lets go of the manifest's lock right after acknowledging; wait for that.
      if ("manifest" in outcome) {
        const lock = `${store.pathFor(outcome.manifest.id)}.lock`;
        await waitFor(() => !existsSync(lock), { timeoutMs: 10_000, description: `the lock ${lock} to be released` });
      }
      return outcome;
    },
    cleanup: () => repo.cleanup(),
  };
}

function manifestOf(outcome: HandoffOutcome): Manifest {
  if (!("manifest" in outcome)) throw new Error(`No manifest: ${outcome.code}: ${outcome.message}`);
  return outcome.manifest;
}

/** The text of the handoff message in a child session. */
function handoffMessage(childFile: string): string {
  const entry = readEntries(childFile).find((e) => e.type === "custom_message" && e.customType === "handoff-worktree");
  return entry?.type === "custom_message" && typeof entry.content === "string" ? entry.content : "";
}

/** What "the checkout did not change" means: index bytes, status, both diffs. */
function checkoutState(repo: TempRepo, checkout: string, indexFile: string) {
  const index = sha256(readFileSync(indexFile));
  const git = (args: string[]) =>
    execFileSync("git", args, {
      cwd: checkout,
      env: { ...repo.env, GIT_OPTIONAL_LOCKS: "0" },
      timeout: 30_000,
    }).toString("latin1");
  return {
    index,
    status: git(["status", "--porcelain=v2", "-z", "--untracked-files=all"]),
    diff: sha256(git(["diff", "--binary"])),
    cached: sha256(git(["diff", "--cached", "--binary"])),
  };
}

// The herdr-real pass runs this file for its Herdr cases; the tmux ones run in the default pass.
if (HERDR_TARGET === "double") {
  describe("worktree setup on tmux", () => {
    let rig: Rig;
    let tmux: PrivateTmux;
    let mux: TmuxMultiplexer;

    beforeAll(async () => {
      rig = createRig();
      tmux = await startPrivateTmux({ env: { HOME: rig.repo.home } });
      mux = new TmuxMultiplexer({
        socketPath: tmux.socketPath,
        targetSession: tmux.sessionId,
        git: new GitCli({ env: rig.env }),
      });
    });
    afterAll(async () => {
      await tmux?.kill();
      rig?.cleanup();
    });

    it("uncommitted work not carried is said in one line with how many changes stayed and how --carry takes them; the parent keeps them", async () => {
      const { repo } = rig;
      writeFileSync(join(repo.root, "README.md"), "# edited, not committed\n");
      writeFileSync(join(repo.root, "file-1.txt"), "changed too\n");
      writeFileSync(join(repo.root, "notes.txt"), "untracked\n");
      const outcome = await rig.handoff(mux, { branch: "dirty/plain" });
      expect(outcome.code, outcome.message).toBe("running");
      const note = `Not carried: 2 uncommitted changes to tracked files and 1 untracked file stayed in ${repo.root} (the new worktree does not have them); --carry takes the changes along, --carry=all the untracked files too.`;
      expect(outcome.message.split("\n").filter((line) => line.startsWith("Not carried:"))).toEqual([note]);
      const manifest = manifestOf(outcome);
      expect(readFileSync(join(manifest.worktree.path, "README.md"), "utf8")).toBe("# test repository\n");
      expect(readFileSync(join(repo.root, "README.md"), "utf8")).toBe("# edited, not committed\n");

      // --carry takes the tracked changes; the untracked file is still said to stay.
      const carried = await rig.handoff(mux, { branch: "dirty/carried", carry: "tracked" });
      expect(carried.message.split("\n").filter((line) => line.startsWith("Not carried:"))).toEqual([
        `Not carried: 1 untracked file stayed in ${repo.root} (the new worktree does not have them); --carry=all takes them along.`,
      ]);
      // --carry=all takes everything: nothing to say.
      const all = await rig.handoff(mux, { branch: "dirty/all", carry: "all" });
      expect(all.code, all.message).toBe("running");
      expect(all.message).not.toContain("Not carried:");
      // The checkout as the other tests expect it: clean.
      repo.run(["checkout", "-q", "--", "README.md", "file-1.txt"]);
      rmSync(join(repo.root, "notes.txt"));
    });

    it("a failing postCreate command stops the launch: failed at launch with its exit status, everything kept, Pi not started", async () => {
      const commands = ["echo preparing > prepared.txt", "test -f ready.txt || exit 7"];
      const outcome = await rig.handoff(mux, { branch: "hook/fails" }, { config: { postCreate: commands } });
      expect(outcome.code).toBe("failed");
      const manifest = manifestOf(outcome);
      expect(manifest.state).toBe("failed");
      expect(manifest.error).toMatchObject({
        step: "launch",
        message:
          'The postCreate command 2 of 2 ("test -f ready.txt || exit 7") failed with exit status 7 in the new pane, so Pi was not started.',
      });
      expect(manifest.setup?.postCreate).toEqual({
        commands,
        statusFile: rig.store.pathFor(manifest.id).replace(/\.json$/, ".post-create.status"),
        exitStatus: 7,
        failedCommand: 2,
      });
      expect(manifest.history.map((h) => h.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "failed",
      ]);
      // Kept: the worktree (where the first command ran), the window, the child session.
      expect(readFileSync(join(manifest.worktree.path, "prepared.txt"), "utf8")).toBe("preparing\n");
      expect(existsSync(manifest.child.sessionFile ?? "")).toBe(true);
      expect(outcome.message).toContain(
        'The handoff failed at the launch step: The postCreate command 2 of 2 ("test -f ready.txt || exit 7") failed with exit status 7 in the new pane, so Pi was not started.',
      );
      expect(outcome.message).toContain(
        `Kept (nothing was deleted): worktree ${manifest.worktree.path} on branch hook/fails; tmux window`,
      );
      expect(outcome.message).toContain(`To start the child by hand, run in its pane: ${manifest.child.command}`);
      // Pi was not started: no acknowledgement, no Pi in the pane, and the pane says why.
      expect(manifest.child.pid).toBeUndefined();
      const probed = await mux.probe(manifest.mux);
      expect(probed.ok && findChildProcess(probed.processes, manifest)).toBeFalsy();
      if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
      const paneId = manifest.mux.paneId ?? "";
      const screen = await tmux.capturePane(paneId);
      expect(screen).toContain("[postCreate 1/2] echo preparing > prepared.txt");
      expect(screen).toContain("[postCreate 2/2] failed with exit status 7; Pi was not started.");
      // Fixed, and the line run again by hand: the commands pass, the child starts and acknowledges.
      writeFileSync(join(manifest.worktree.path, "ready.txt"), "");
      await tmux.tmux(["send-keys", "-t", paneId, "-l", manifest.child.command ?? ""]);
      await tmux.tmux(["send-keys", "-t", paneId, "Enter"]);
      const running = await waitFor(
        async () => {
          const read = await rig.store.read(manifest.id);
          return read.ok && read.manifest.state === "running" ? read.manifest : undefined;
        },
        { timeoutMs: 20_000, description: "the acknowledgement after the fix" },
      );
      expect(running.child.confirmedBy).toBe("ack");
    });

    it("postCreate commands still running at the deadline: launch_unconfirmed, then the late child still acknowledges", async () => {
      const outcome = await rig.handoff(
        mux,
        { branch: "hook/slow" },
        { config: { postCreate: ["sleep 3"] }, postCreateMs: 1_000 },
      );
      expect(outcome.code).toBe("launch_unconfirmed");
      const manifest = manifestOf(outcome);
      expect(manifest.error).toMatchObject({
        step: "confirm",
        message:
          "The postCreate commands had not finished after 1 s; they may still be running in the new pane, and Pi starts there when they succeed.",
      });
      const running = await waitFor(
        async () => {
          const read = await rig.store.read(manifest.id);
          return read.ok && read.manifest.state === "running" ? read.manifest : undefined;
        },
        { timeoutMs: 20_000, description: "the late acknowledgement" },
      );
      expect(running.setup?.postCreate?.exitStatus).toBeUndefined();
      expect(running.history.map((h) => h.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "launch_unconfirmed",
        "running",
      ]);
    });

    it("setup failures are recorded at the setup step with the worktree kept: changes that do not apply, an injected fault", async () => {
      const { repo } = rig;
      // file-1.txt was added by the last commit: a change to it cannot apply at HEAD~1.
      writeFileSync(join(repo.root, "file-1.txt"), "1\nchanged\n");
      const outcome = await rig.handoff(mux, {
        branch: "carry/old-base",
        base: "HEAD~1",
        baseGiven: true,
        carry: "tracked",
      });
      expect(outcome.code).toBe("failed");
      const manifest = manifestOf(outcome);
      expect(manifest.error?.step).toBe("setup");
      expect(manifest.error?.message).toMatch(
        new RegExp(
          `^The unstaged changes do not apply in ${manifest.worktree.path}: .*file-1\\.txt.*; they are still in ${repo.root}\\.$`,
        ),
      );
      expect(existsSync(manifest.worktree.path)).toBe(true);
      expect(manifest.child.sessionFile).toBeUndefined();
      expect(outcome.message).toContain(
        `The handoff failed at the setup step: The unstaged changes do not apply in ${manifest.worktree.path}`,
      );
      expect(readFileSync(join(repo.root, "file-1.txt"), "utf8")).toBe("1\nchanged\n");
      repo.run(["checkout", "--", "file-1.txt"]);

      writeFileSync(join(repo.root, ".gitignore"), "secret.txt\n");
      writeFileSync(join(repo.root, "secret.txt"), "s\n");
      const faulted = await rig.handoff(
        mux,
        { branch: "setup/fault" },
        { config: { copy: ["secret.txt"] }, faultAt: "setup" },
      );
      const recorded = manifestOf(faulted);
      expect(recorded.error).toMatchObject({
        step: "setup",
        message: "Injected fault at the setup step (PI_HANDOFF_FAULT).",
      });
      expect(recorded.setup).toEqual({ copied: ["secret.txt"] });
      expect(readFileSync(join(recorded.worktree.path, "secret.txt"), "utf8")).toBe("s\n");
      // The branch stays claimed by the failed handoff (its worktree exists).
      expect(await rig.handoff(mux, { branch: "setup/fault" })).toMatchObject({ code: "refused" });
      execFileSync("rm", ["-f", join(repo.root, ".gitignore"), join(repo.root, "secret.txt")], { timeout: 5_000 });
    });

    it("settings plus --carry and a stale base: prefix, location, carried changes, copies, links and a hook, all said; the parent unchanged", async () => {
      const { repo } = rig;
      // An upstream that is ahead of main (as last fetched).
      const remote = join(repo.dir, "remote.git");
      execFileSync("git", ["init", "-q", "--bare", remote], { env: repo.env, timeout: 30_000 });
      repo.run(["remote", "add", "origin", remote]);
      repo.run(["push", "-q", "-u", "origin", "main"]);
      const other = join(repo.dir, "other");
      execFileSync("git", ["clone", "-q", remote, other], { env: repo.env, timeout: 30_000 });
      repo.commitFile("up.txt", "up\n", "upstream change", { cwd: other });
      repo.run(["push", "-q", "origin", "main"], { cwd: other });
      repo.run(["fetch", "-q", "origin"]);
      // Ignored files to copy and link, and uncommitted work to carry (a rename, a deletion, a binary).
      writeFileSync(join(repo.root, ".gitignore"), ".env\ndeps/\n");
      repo.run(["add", ".gitignore"]);
      repo.run(["commit", "-q", "-m", "ignore"]);
      writeFileSync(join(repo.root, ".env"), "TOKEN=x\n");
      mkdirSync(join(repo.root, "deps"), { recursive: true });
      writeFileSync(join(repo.root, "deps", "lib.js"), "1\n");
      repo.run(["mv", "file-1.txt", "renamed.txt"]);
      repo.run(["rm", "-q", "README.md"]);
      writeFileSync(join(repo.root, "blob.bin"), Buffer.from([0, 1, 2, 255, 0, 254]));
      repo.run(["add", "blob.bin"]);
      writeFileSync(join(repo.root, ".gitignore"), ".env\ndeps/\n# edited, unstaged\n");
      const parentIndex = join(repo.root, ".git", "index");
      const before = checkoutState(repo, repo.root, parentIndex);

      const config: HandoffConfig = {
        branchPrefix: "pi/",
        worktreeDir: "{repoParent}/trees/{repo}-{branch}",
        copy: [".env"],
        symlink: ["deps"],
        postCreate: ['printf "%s" "$PI_HANDOFF_BRANCH" > hook-branch.txt', "test -f .env && test -f renamed.txt"],
      };
      const outcome = await rig.handoff(mux, { branch: "setup", carry: "tracked" }, { config });
      expect(outcome.code, outcome.message).toBe("running");
      const manifest = manifestOf(outcome);
      expect(manifest.branch).toBe("pi/setup");
      expect(manifest.worktree.path).toBe(join(realpathSync(repo.dir), "trees", "repo-pi-setup"));
      const wt = manifest.worktree.path;
      // The hook ran in the worktree after the setup step and before Pi (which then acknowledged).
      expect(readFileSync(join(wt, "hook-branch.txt"), "utf8")).toBe("pi/setup");
      expect(manifest.child.confirmedBy).toBe("ack");
      expect(manifest.setup).toEqual({
        carried: { mode: "tracked", from: repo.root, changes: 4, untracked: 0 },
        copied: [".env"],
        symlinked: ["deps"],
        postCreate: {
          commands: config.postCreate,
          statusFile: rig.store.pathFor(manifest.id).replace(/\.json$/, ".post-create.status"),
        },
      });
      expect(readFileSync(join(wt, ".env"), "utf8")).toBe("TOKEN=x\n");
      expect(readlinkSync(join(wt, "deps"))).toBe(join(repo.root, "deps"));
      expect(readFileSync(join(wt, "blob.bin"))).toEqual(Buffer.from([0, 1, 2, 255, 0, 254]));
      expect(existsSync(join(wt, "README.md"))).toBe(false);
      const child = checkoutState(repo, wt, join(repo.root, ".git", "worktrees", "repo-pi-setup", "index"));
      expect({ diff: child.diff, cached: child.cached }).toEqual({ diff: before.diff, cached: before.cached });
      // The parent checkout is byte-identical.
      expect(checkoutState(repo, repo.root, parentIndex)).toEqual(before);
      // The user and the new Pi are told.
      expect(outcome.message).toContain("Handed off to branch pi/setup (from HEAD at");
      expect(outcome.message).toContain(
        "Warning: HEAD is 1 commit behind origin/main (as last fetched; add --fetch to fetch it first); the worktree starts from HEAD as it is.",
      );
      expect(outcome.message).toContain(
        `Carried 4 uncommitted changes from ${repo.root} (staged ones stay staged): M .gitignore, D README.md, A blob.bin, R file-1.txt -> renamed.txt.`,
      );
      expect(outcome.message).toContain("Copied from the main checkout: .env.");
      expect(outcome.message).toContain("Symlinked to the main checkout: deps.");
      const message = handoffMessage(manifest.child.sessionFile ?? "");
      expect(message).toContain("## Worktree setup");
      expect(message).toMatch(/- Carried 4 uncommitted changes/);
      expect(message).toContain("- Warning: HEAD is 1 commit behind origin/main");
      expect(message).toContain(
        `- Before this Pi started, these postCreate commands ran in this worktree and succeeded: ${config.postCreate?.join("; ")}`,
      );
      // Leave the main checkout clean for the next tests.
      repo.run(["reset", "-q", "--hard"]);
      execFileSync("rm", ["-f", join(repo.root, "blob.bin")], { timeout: 5_000 });
    });

    it("--fetch with a remote branch never fetched (a real second repository): fetched first, then the base", async () => {
      const { repo } = rig;
      const remote = join(repo.dir, "team.git");
      execFileSync("git", ["init", "-q", "--bare", remote], { env: repo.env, timeout: 30_000 });
      repo.run(["remote", "add", "team", remote]);
      repo.run(["push", "-q", "team", "main"]);
      const colleague = join(repo.dir, "colleague");
      execFileSync("git", ["clone", "-q", remote, colleague], { env: repo.env, timeout: 30_000 });
      repo.run(["checkout", "-q", "-b", "colleague"], { cwd: colleague });
      const tip = repo.commitFile("theirs.txt", "theirs\n", "the colleague's work", { cwd: colleague });
      repo.run(["push", "-q", "origin", "colleague"], { cwd: colleague });
      // Never fetched here: no such ref yet, so without --fetch the base does not resolve.
      expect(repo.run(["for-each-ref", "refs/remotes/team/colleague"])).toBe("");
      expect(
        await rig.handoff(mux, { branch: "review/unfetched", base: "team/colleague", baseGiven: true }),
      ).toMatchObject({ code: "refused" });

      const outcome = await rig.handoff(mux, {
        branch: "review/colleague",
        base: "team/colleague",
        baseGiven: true,
        fetch: true,
      });
      expect(outcome.code, outcome.message).toBe("running");
      const manifest = manifestOf(outcome);
      expect(manifest.base).toEqual({ ref: "team/colleague", sha: tip });
      expect(repo.run(["rev-parse", "refs/remotes/team/colleague"])).toBe(tip);
      expect(repo.run(["rev-parse", "HEAD"], { cwd: manifest.worktree.path })).toBe(tip);
      expect(outcome.message).toContain(
        "Fetched colleague from team first (it had not been fetched before, so team/colleague is new here).",
      );
      // Nothing local was made or moved for it.
      expect(repo.run(["for-each-ref", "--format=%(refname)", "refs/heads/colleague"])).toBe("");

      // A name that is no branch cannot become a refspec.
      expect(await rig.handoff(mux, { branch: "review/bad", base: "team/a:b", baseGiven: true, fetch: true })).toEqual({
        ok: false,
        code: "refused",
        reason: "base_freshness",
        message:
          "team/a:b follows no remote branch, so --fetch has nothing to fetch; hand off without --fetch (or give a remote branch such as origin/main as the base).",
      });
    });

    it("--existing checks out an existing branch as it is (the base ignored, and said so); refusals name the reason", async () => {
      const { repo } = rig;
      repo.run(["branch", "feature", "HEAD~1"]);
      const tip = commitOnBranch(repo, "feature", "feature.txt", "on the feature\n");
      const outcome = await rig.handoff(mux, { branch: "feature", existing: true, base: "main", baseGiven: true });
      expect(outcome.code, outcome.message).toBe("running");
      const manifest = manifestOf(outcome);
      expect(manifest.base).toEqual({ ref: "feature", sha: tip });
      expect(manifest.setup).toEqual({ existingBranch: true });
      expect(repo.run(["rev-parse", "HEAD"], { cwd: manifest.worktree.path })).toBe(tip);
      expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: manifest.worktree.path })).toBe("feature");
      expect(outcome.message).toContain(`Handed off to the existing branch feature (at ${tip.slice(0, 12)}).`);
      expect(outcome.message).toContain(
        `Base main was ignored: --existing checks out feature as it is (at ${tip.slice(0, 12)}).`,
      );
      const message = handoffMessage(manifest.child.sessionFile ?? "");
      expect(message).toContain(`- Branch: feature (an existing branch, checked out as it was, at ${tip})`);
      expect(message).toContain(
        `- Base main was ignored: --existing checks out feature as it is (at ${tip.slice(0, 12)}).`,
      );

      const busy = await rig.handoff(mux, { branch: "feature", existing: true });
      expect(busy).toEqual({
        ok: false,
        code: "refused",
        reason: "branch_checked_out",
        message: `Branch feature is already checked out at ${manifest.worktree.path}; work on it there, or hand off to another branch.`,
      });
      expect(await rig.handoff(mux, { branch: "main", existing: true })).toEqual({
        ok: false,
        code: "refused",
        reason: "branch_checked_out",
        message: `Branch main is already checked out at ${repo.root}; work on it there, or hand off to another branch.`,
      });
      expect(await rig.handoff(mux, { branch: "nope", existing: true })).toEqual({
        ok: false,
        code: "refused",
        reason: "branch_missing",
        message: "Branch nope does not exist; leave out --existing to create it.",
      });
      expect(await rig.handoff(mux, { branch: "feature" })).toMatchObject({ code: "refused" });
    });

    it("a handoff from inside a linked worktree: the main checkout is found, HEAD is the linked one's, changes are carried from it", async () => {
      const { repo } = rig;
      const linked = join(repo.dir, "linked");
      repo.run(["worktree", "add", "-q", "-b", "side", linked, "HEAD"]);
      const sideTip = repo.commitFile("side.txt", "side\n", "side work", { cwd: linked });
      writeFileSync(join(linked, "side.txt"), "side\nuncommitted\n");
      const parent = parentSession(linked, rig.agentDir);
      const outcome = await rig.handoff(mux, { branch: "from-linked", carry: "tracked" }, { parent });
      expect(outcome.code, outcome.message).toBe("running");
      const manifest = manifestOf(outcome);
      expect(manifest.repo.root).toBe(repo.root);
      expect(manifest.parent.cwd).toBe(linked);
      expect(manifest.base.sha).toBe(sideTip);
      expect(manifest.worktree.path).toBe(join(realpathSync(repo.dir), "repo.worktrees", "from-linked"));
      expect(readFileSync(join(manifest.worktree.path, "side.txt"), "utf8")).toBe("side\nuncommitted\n");
      expect(readFileSync(join(linked, "side.txt"), "utf8")).toBe("side\nuncommitted\n");
      expect(manifest.setup?.carried).toEqual({ mode: "tracked", from: linked, changes: 1, untracked: 0 });
    });
  });

  /** Commits a file on `branch` (in a linked worktree made for that and removed again); returns the new tip. */
}

function commitOnBranch(repo: TempRepo, branch: string, file: string, content: string): string {
  const path = join(repo.dir, `commit-on-${branch}`);
  repo.run(["worktree", "add", "-q", path, branch]);
  const tip = repo.commitFile(file, content, `${file} on ${branch}`, { cwd: path });
  repo.run(["worktree", "remove", path]);
  return tip;
}

describe(`worktree setup on Herdr (${HERDR_TARGET})`, () => {
  let rig: Rig;
  let herdr: HerdrServer;
  let mux: HerdrMultiplexer;

  beforeAll(async () => {
    rig = createRig();
    herdr = await startHerdr({
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", HOME: rig.repo.home },
    });
    mux = HerdrMultiplexer.fromEnvironment(herdr.clientEnv);
  });
  afterAll(async () => {
    await herdr?.kill();
    rig?.cleanup();
  });

  /** The first `worktree create` call since the log was cleared: the double's log (the real Herdr keeps none). */
  function firstCreateCall(): string[] | undefined {
    if (herdr.kind !== "double") throw new Error("Only the Herdr double keeps a call log.");
    return herdr
      .calls()
      .find((call) => call.argv[0] === "worktree" && call.argv[1] === "create" && !call.argv.includes("--help"))?.argv;
  }

  function clearCallLog(): void {
    if (herdr.kind === "double") herdr.clearCalls();
  }

  /** Herdr's own record of the handoff's workspace: the worktree it belongs to. */
  async function membershipOf(manifest: Manifest): Promise<unknown> {
    const workspaceId = manifest.mux.kind === "herdr" ? (manifest.mux.workspaceId ?? "") : "";
    return ((await herdr.result(["workspace", "get", workspaceId])).workspace as { worktree?: unknown }).worktree;
  }

  it("--existing: Herdr checks the existing branch out (its --base ignored), at the branch's commit", async () => {
    const { repo } = rig;
    const tip = repo.run(["rev-parse", "HEAD~1"]);
    repo.run(["branch", "herdr-feature", tip]);
    clearCallLog();
    const outcome = await rig.handoff(mux, { branch: "herdr-feature", existing: true });
    expect(outcome.code, outcome.message).toBe("running");
    const manifest = manifestOf(outcome);
    expect(manifest.mux.kind).toBe("herdr");
    expect(manifest.base).toEqual({ ref: "herdr-feature", sha: tip });
    expect(repo.run(["rev-parse", "HEAD"], { cwd: manifest.worktree.path })).toBe(tip);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: manifest.worktree.path })).toBe("herdr-feature");
    expect(await membershipOf(manifest)).toMatchObject({
      checkout_path: manifest.worktree.path,
      repo_root: repo.root,
      is_linked_worktree: true,
    });
    if (herdr.kind === "double")
      expect(firstCreateCall()?.slice(0, 8)).toEqual([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "herdr-feature",
        "--base",
        tip,
      ]);
  });

  it("from inside a linked worktree: Herdr is asked with --cwd <main checkout>, and the base is the linked worktree's HEAD", async () => {
    const { repo } = rig;
    const linked = join(repo.dir, "herdr-linked");
    repo.run(["worktree", "add", "-q", "-b", "herdr-side", linked, "HEAD"]);
    const sideTip = repo.commitFile("herdr-side.txt", "x\n", "side", { cwd: linked });
    const parent = parentSession(linked, rig.agentDir);
    clearCallLog();
    const outcome = await rig.handoff(mux, { branch: "herdr-from-linked" }, { parent });
    expect(outcome.code, outcome.message).toBe("running");
    const manifest = manifestOf(outcome);
    expect(manifest.repo.root).toBe(repo.root);
    expect(manifest.base.sha).toBe(sideTip);
    // Asked from the linked worktree Herdr refuses (linked_worktree_source): it was asked from the main checkout.
    expect(await membershipOf(manifest)).toMatchObject({
      checkout_path: manifest.worktree.path,
      repo_root: repo.root,
      is_linked_worktree: true,
    });
    if (herdr.kind === "double") expect(firstCreateCall()?.slice(2, 4)).toEqual(["--cwd", repo.root]);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: manifest.worktree.path })).toBe(sideTip);
    expect(lstatSync(manifest.worktree.path).isDirectory()).toBe(true);
  });
});

/**
 * Worktree setup end to end with the real Pi (offline faux provider) in print mode, as if typed in
 * a pane of a private tmux server, and the real child Pi in the new pane:
 * - settings from the user and the (trusted) repository, `--carry` and a postCreate command: the
 *   child starts after the command, in a worktree with the carried changes and the copied and
 *   linked files, and the parent checkout is byte-identical;
 * - a failing postCreate command: failed at launch with its exit status, everything kept, no Pi;
 * - an untrusted project (`--no-approve`): the repository's settings are ignored, with a notice;
 * - an unknown key: one sentence naming the file and key, and nothing created;
 * - in RPC mode (a UI), `/handoff-worktree` alone asks for the branch and the task.
 */
import { createHash } from "node:crypto";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import { findChildProcess } from "../../src/child/launcher.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { PiRpc, type RpcRecord } from "../support/pi-rpc.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux, paneEnv } from "../support/tmux.ts";
import { PI_HANDOFF_BIN } from "../support/reliability.ts";

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

describe("/handoff-worktree worktree setup with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let parentFile: string;
  let tmuxEnv: Record<string, string>;
  let store: ManifestStore;
  let repoConfig: string;
  let userConfig: string;

  function handoff(args: string, flags: string[] = []): { status: number; stderr: string } {
    const run = spawnSync(
      NODE_BIN,
      [
        PI_CLI,
        "-p",
        "--session",
        parentFile,
        "--model",
        FAUX_MODEL,
        "--extension",
        EXTENSION_ENTRY,
        ...flags,
        `/handoff-worktree ${args}`,
      ],
      {
        cwd: repo.root,
        env: tmuxEnv,
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    return { status: run.status ?? -1, stderr: run.stderr };
  }

  async function newManifest(before: string[]): Promise<Manifest> {
    const added = (await store.list()).filter((entry) => !before.includes(entry.id));
    expect(added).toHaveLength(1);
    const entry = added[0];
    if (entry === undefined || !entry.ok) throw new Error("the new manifest did not decode");
    return entry.manifest;
  }

  const ids = async () => (await store.list()).map((entry) => entry.id);

  /** The parent checkout as bytes: index first (nothing below may refresh it), status, both diffs, files. */
  function parentState() {
    const git = (args: string[]) =>
      execFileSync("git", args, {
        cwd: repo.root,
        env: { ...repo.env, GIT_OPTIONAL_LOCKS: "0" },
        timeout: 30_000,
      }).toString("latin1");
    return {
      index: sha256(readFileSync(join(repo.root, ".git", "index"))),
      status: git(["status", "--porcelain=v2", "-z", "--untracked-files=all"]),
      diff: sha256(git(["diff", "--binary"])),
      cached: sha256(git(["diff", "--cached", "--binary"])),
      files: ["notes.md", "data.bin", "file-1.txt", "file-2.txt"].map((file) =>
        existsSync(join(repo.root, file)) ? sha256(readFileSync(join(repo.root, file))) : "absent",
      ),
    };
  }

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-setup-e2e-");
    repo = createTempRepo({ extraCommits: 2 });
    tmux = await startPrivateTmux({ env: sandbox.env });
    tmuxEnv = {
      ...sandbox.env,
      ...(await paneEnv(tmux)),
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000",
    };
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    parentFile = onlySessionFile(sandbox, repo.root);
    store = ManifestStore.forAgentDir(sandbox.agentDir);
    repoConfig = join(repo.root, ".pi", "handoff-worktree.json");
    userConfig = join(sandbox.agentDir, "handoff-worktree.json");
    mkdirSync(join(repo.root, ".pi"), { recursive: true });
    // Ignored: the settings themselves, and the files to copy and link.
    writeFileSync(join(repo.root, ".git", "info", "exclude"), ".pi/\n.env\ndeps/\n");
  });

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("settings + --carry + a postCreate command: the child starts after it, with everything in place; the parent is unchanged", async () => {
    writeFileSync(userConfig, JSON.stringify({ branchPrefix: "me/", symlink: ["deps"] }));
    writeFileSync(
      repoConfig,
      JSON.stringify({
        branchPrefix: "pi/",
        worktreeDir: "{repoParent}/e2e-trees/{branch}",
        copy: [".env"],
        postCreate: ['printf "%s" "$PI_HANDOFF_BRANCH" > .hook-ran', "test -f .env"],
      }),
    );
    writeFileSync(join(repo.root, ".env"), "API=1\n");
    mkdirSync(join(repo.root, "deps"), { recursive: true });
    writeFileSync(join(repo.root, "deps", "lib.js"), "x\n");
    // Uncommitted: a staged new binary file, a staged edit, an unstaged deletion.
    writeFileSync(join(repo.root, "data.bin"), Buffer.from([0, 200, 13, 10, 0, 255]));
    writeFileSync(join(repo.root, "file-1.txt"), "1\nstaged edit\n");
    repo.run(["add", "data.bin", "file-1.txt"]);
    rmSync(join(repo.root, "file-2.txt"));
    const before = parentState();
    const parentHash = sha256(readFileSync(parentFile));
    const existing = await ids();

    // The repository's postCreate commands are not approved yet: refused in print mode, nothing made.
    const unapproved = handoff("e2e --carry -- list the files");
    expect(unapproved.status).toBe(1);
    expect(unapproved.stderr.trim().split("\n").at(-1)).toBe(
      `The postCreate commands in ${repoConfig} have not been approved yet; review them and add --approve-repo-code, or run the handoff once in Pi's TUI.`,
    );
    expect(await ids()).toEqual(existing);
    expect(parentState()).toEqual(before);

    const run = handoff("e2e --carry --approve-repo-code -- list the files");
    expect(run.status, run.stderr).toBe(0);
    const manifest = await newManifest(existing);
    expect(manifest.state).toBe("running");
    expect(manifest.branch).toBe("pi/e2e");
    expect(manifest.worktree.path).toBe(join(repo.dir, "e2e-trees", "pi-e2e"));
    const wt = manifest.worktree.path;
    // The postCreate commands ran in the worktree before the child (which then acknowledged).
    expect(readFileSync(join(wt, ".hook-ran"), "utf8")).toBe("pi/e2e");
    expect(manifest.child.confirmedBy).toBe("ack");
    expect(manifest.history.map((h) => h.state)).toEqual([
      "provisioning",
      "provisioned",
      "forked",
      "launching",
      "running",
    ]);
    // Carried, copied, linked.
    expect(readFileSync(join(wt, "data.bin"))).toEqual(Buffer.from([0, 200, 13, 10, 0, 255]));
    expect(readFileSync(join(wt, "file-1.txt"), "utf8")).toBe("1\nstaged edit\n");
    expect(existsSync(join(wt, "file-2.txt"))).toBe(false);
    expect(repo.run(["diff", "--cached", "--name-only"], { cwd: wt }).split("\n").sort()).toEqual([
      "data.bin",
      "file-1.txt",
    ]);
    expect(readFileSync(join(wt, ".env"), "utf8")).toBe("API=1\n");
    expect(readlinkSync(join(wt, "deps"))).toBe(join(repo.root, "deps"));
    expect(manifest.setup).toMatchObject({
      carried: { mode: "tracked", from: repo.root, changes: 3, untracked: 0 },
      copied: [".env"],
      symlinked: ["deps"],
    });
    // The parent checkout and session are byte-identical.
    expect(parentState()).toEqual(before);
    expect(sha256(readFileSync(parentFile))).toBe(parentHash);
    // Said to the user and to the new Pi.
    expect(run.stderr).toContain(
      `Carried 3 uncommitted changes from ${repo.root} (staged ones stay staged): A data.bin, M file-1.txt, D file-2.txt.`,
    );
    expect(run.stderr).toContain("Copied from the main checkout: .env.");
    const childEntries = readEntries(manifest.child.sessionFile ?? "");
    const message = childEntries.find((e) => e.type === "custom_message" && e.customType === "handoff-worktree");
    const content = message?.type === "custom_message" && typeof message.content === "string" ? message.content : "";
    expect(content).toContain("- Carried 3 uncommitted changes");
    expect(content).toContain("## Task\n\nlist the files");
    // Leave the checkout clean for the next tests.
    repo.run(["reset", "-q", "--hard"]);
    rmSync(join(repo.root, "data.bin"), { force: true });
  });

  it("a failing postCreate command: failed at launch with the exit status, worktree and session kept, Pi not started", async () => {
    writeFileSync(userConfig, "{}");
    writeFileSync(repoConfig, JSON.stringify({ postCreate: ["exit 4"] }));
    const existing = await ids();
    const run = handoff("e2e-hook-fails --approve-post-create");
    expect(run.status).toBe(1);
    const manifest = await newManifest(existing);
    expect(manifest.state).toBe("failed");
    expect(manifest.error?.step).toBe("launch");
    expect(manifest.setup?.postCreate).toMatchObject({ commands: ["exit 4"], exitStatus: 4, failedCommand: 1 });
    expect(run.stderr).toContain(
      'The handoff failed at the launch step: The postCreate command 1 of 1 ("exit 4") failed with exit status 4 in the new pane, so Pi was not started.',
    );
    expect(run.stderr).toContain(
      `Kept (nothing was deleted): worktree ${manifest.worktree.path} on branch e2e-hook-fails`,
    );
    expect(existsSync(manifest.worktree.path)).toBe(true);
    expect(existsSync(manifest.child.sessionFile ?? "")).toBe(true);
    expect(manifest.child.pid).toBeUndefined();
    const probe = await new TmuxMultiplexer({
      socketPath: tmux.socketPath,
      targetSession: tmux.sessionId,
      git: new GitCli({ env: repo.env }),
    }).probe(manifest.mux);
    expect(probe.ok && findChildProcess(probe.processes, manifest)).toBeFalsy();
    // The pane says what failed and, as nothing was typed there (the window runs the launcher), the
    // whole line that runs the commands again and starts Pi; then the user's shell, and nothing else
    // (no "Terminated" from the warm Pi the launcher ended).
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    const pane = manifest.mux.paneId ?? "";
    const lines = async () =>
      (await tmux.tmux(["capture-pane", "-p", "-J", "-t", pane])).split("\n").filter((line) => line.trim() !== "");
    await waitFor(async () => ((await lines()).length >= 5 ? true : undefined), {
      timeoutMs: 10_000,
      description: "the user's shell in the failed child's pane",
    });
    const screen = await lines();
    expect(screen.slice(0, -1)).toEqual([
      `[pi-handoff] Preparing handoff ${manifest.id}; its Pi starts here in a moment.`,
      "[postCreate 1/1] exit 4",
      "[postCreate 1/1] failed with exit status 4; Pi was not started.",
      `[pi-handoff] To run the postCreate commands again and then start Pi, type: ${manifest.child.command}`,
    ]);
    expect(screen.at(-1)).toMatch(/^bash-[\d.]+[#$] $/);
    // inspect says its Pi never started (not that it exited), and why.
    const inspected = spawnSync(NODE_BIN, [PI_HANDOFF_BIN, "inspect", manifest.id], {
      cwd: repo.root,
      env: tmuxEnv,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(inspected.stdout.split("\n").filter((line) => line.trimStart().startsWith("child:"))).toEqual([
      "  child:         never started (its postCreate command 1 of 1 failed with exit status 4, so its Pi was not started)",
    ]);
    // The child session holds only the fork: no Pi ever opened it.
    expect(
      readEntries(manifest.child.sessionFile ?? "").some(
        (e) => e.type === "custom_message" && e.customType === "handoff-worktree-kickoff",
      ),
    ).toBe(false);
  });

  it("an untrusted project (--no-approve): the repository's settings are ignored with a one-line notice", async () => {
    writeFileSync(repoConfig, JSON.stringify({ branchPrefix: "pi/", postCreate: ["touch should-not-run"] }));
    const existing = await ids();
    const run = handoff("untrusted", ["--no-approve"]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr.split("\n")).toContain(
      `Ignored ${repoConfig}: this project is not trusted in Pi, so its handoff settings (which can run commands) are not used.`,
    );
    const manifest = await newManifest(existing);
    expect(manifest.branch).toBe("untrusted");
    expect(manifest.setup).toBeUndefined();
    expect(existsSync(join(manifest.worktree.path, "should-not-run"))).toBe(false);
  });

  it("remembers an approval for exactly those commands, and asks again when they change", async () => {
    writeFileSync(userConfig, "{}");
    writeFileSync(repoConfig, JSON.stringify({ postCreate: ["touch approved-once"] }));
    const first = await ids();
    expect(handoff("approve/first --approve-post-create").status).toBe(0);
    const approved = await newManifest(first);
    expect(existsSync(join(approved.worktree.path, "approved-once"))).toBe(true);
    // Same commands: no flag needed any more.
    const second = await ids();
    expect(handoff("approve/second").status).toBe(0);
    expect(existsSync(join((await newManifest(second)).worktree.path, "approved-once"))).toBe(true);
    // Changed commands: refused until approved again, and nothing was made.
    writeFileSync(repoConfig, JSON.stringify({ postCreate: ["touch approved-once", "touch sneaky"] }));
    const third = await ids();
    const changed = handoff("approve/third");
    expect(changed.status).toBe(1);
    expect(changed.stderr).toContain(`The postCreate commands in ${repoConfig} have not been approved yet`);
    expect(await ids()).toEqual(third);
    writeFileSync(repoConfig, "{}");
  });

  it("an unknown key: one sentence naming the file and the key, and nothing created", async () => {
    writeFileSync(userConfig, JSON.stringify({ postCreat: ["make"] }));
    const snapshot = async () => ({
      manifests: await ids(),
      branches: repo.run(["branch", "--list", "--format=%(refname)"]),
      worktrees: repo.run(["worktree", "list", "--porcelain"]),
      windows: await tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"]),
    });
    const before = await snapshot();
    const run = handoff("never-made");
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split("\n").at(-1)).toBe(
      `Unknown key "postCreat" in ${userConfig}; the keys are worktreeDir, branchPrefix, copy, symlink, postCreate, mux, reportsTriggerTurn, ports, env, check, checkTimeoutMs.`,
    );
    expect(await snapshot()).toEqual(before);
    writeFileSync(userConfig, "{}");
  });

  it("in a UI (RPC mode), /handoff-worktree alone asks for the branch and the task; cancelling creates nothing", async () => {
    writeFileSync(repoConfig, "{}");
    const rpc = PiRpc.start(["--session", parentFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY], {
      cwd: repo.root,
      env: tmuxEnv,
    });
    try {
      const isRequest = (method: string) => (record: RpcRecord) =>
        record.type === "extension_ui_request" && record.method === method;
      // Cancelled at the first question: nothing happens.
      let from = rpc.records.length;
      const existing = await ids();
      void rpc.command({ type: "prompt", message: "/handoff-worktree" }, 60_000).catch(() => undefined);
      const first = await rpc.waitFor(isRequest("input"), "the branch question", 30_000, from);
      expect(first.title).toBe("Hand off to which new branch? (a base and flags may follow, as after the command)");
      rpc.send({ type: "extension_ui_response", id: first.id, cancelled: true });
      await rpc.waitFor(
        (r) => isRequest("notify")(r) && r.message === "Handoff cancelled: no branch was given.",
        "the cancel notice",
        30_000,
        from,
      );
      expect(await ids()).toEqual(existing);

      // Cancelled at the task question, after a branch was given: said so, nothing happens.
      from = rpc.records.length;
      void rpc.command({ type: "prompt", message: "/handoff-worktree" }, 60_000).catch(() => undefined);
      const named = await rpc.waitFor(isRequest("input"), "the branch question", 30_000, from);
      rpc.send({ type: "extension_ui_response", id: named.id, value: "asked/cancel" });
      const question = await rpc.waitFor(
        (r) => isRequest("input")(r) && r.id !== named.id,
        "the task question",
        30_000,
        from,
      );
      rpc.send({ type: "extension_ui_response", id: question.id, cancelled: true });
      await rpc.waitFor(
        (r) =>
          isRequest("notify")(r) &&
          r.message === "Handoff to asked/cancel cancelled at the task question; nothing was created.",
        "the cancel notice after a branch",
        30_000,
        from,
      );
      expect(await ids()).toEqual(existing);

      // Answered: branch (with a flag), then the task.
      from = rpc.records.length;
      void rpc.command({ type: "prompt", message: "/handoff-worktree" }, 120_000).catch(() => undefined);
      const branch = await rpc.waitFor(isRequest("input"), "the branch question", 30_000, from);
      rpc.send({ type: "extension_ui_response", id: branch.id, value: "asked --no-focus" });
      const task = await rpc.waitFor(
        (r) => isRequest("input")(r) && r.id !== branch.id,
        "the task question",
        30_000,
        from,
      );
      expect(task.title).toBe("What should the new Pi start on? (optional: leave empty and it waits for you)");
      rpc.send({ type: "extension_ui_response", id: task.id, value: "say hello" });
      const done = await rpc.waitFor(
        (r) =>
          isRequest("notify")(r) && typeof r.message === "string" && r.message.startsWith("Handed off to branch asked"),
        "the handoff notice",
        90_000,
        from,
      );
      expect(done.notifyType).toBe("info");
      const manifest = await newManifest(existing);
      expect(manifest).toMatchObject({ branch: "asked", state: "running", task: "say hello" });
      expect(manifest.focus).toBeUndefined();
    } finally {
      await rpc.stop();
    }
  });

  it("in a UI (RPC mode), asks before running a repository's postCreate commands; no creates nothing, yes runs them", async () => {
    writeFileSync(userConfig, "{}");
    writeFileSync(repoConfig, JSON.stringify({ postCreate: ["touch asked-first"] }));
    const rpc = PiRpc.start(["--session", parentFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY], {
      cwd: repo.root,
      env: tmuxEnv,
    });
    try {
      // A choice whose first option (the one Enter takes) refuses: nothing runs on a reflexive Enter.
      const isConfirm = (record: RpcRecord) => record.type === "extension_ui_request" && record.method === "select";
      let from = rpc.records.length;
      const existing = await ids();
      void rpc
        .command({ type: "prompt", message: "/handoff-worktree confirm/no --no-focus" }, 60_000)
        .catch(() => undefined);
      const refused = await rpc.waitFor(isConfirm, "the approval question", 30_000, from);
      expect(refused.title).toBe(
        `Run this repository's postCreate commands?\n${repoConfig} asks to run, in the new worktree:\n1. touch asked-first`,
      );
      expect(refused.options).toEqual(["No, do not run them", "Yes, run them (remembered for this exact list)"]);
      rpc.send({ type: "extension_ui_response", id: refused.id, value: "No, do not run them" });
      await rpc.waitFor(
        (r) =>
          r.type === "extension_ui_request" &&
          r.method === "notify" &&
          r.message === `The handoff was not started: the postCreate commands in ${repoConfig} were not approved.`,
        "the refusal",
        30_000,
        from,
      );
      expect(await ids()).toEqual(existing);

      from = rpc.records.length;
      void rpc
        .command({ type: "prompt", message: "/handoff-worktree confirm/yes --no-focus" }, 120_000)
        .catch(() => undefined);
      const approved = await rpc.waitFor(isConfirm, "the approval question", 30_000, from);
      rpc.send({
        type: "extension_ui_response",
        id: approved.id,
        value: "Yes, run them (remembered for this exact list)",
      });
      await rpc.waitFor(
        (r) =>
          r.type === "extension_ui_request" &&
          r.method === "notify" &&
          typeof r.message === "string" &&
          r.message.startsWith("Handed off to branch confirm/yes"),
        "the handoff notice",
        90_000,
        from,
      );
      const manifest = await newManifest(existing);
      expect(existsSync(join(manifest.worktree.path, "asked-first"))).toBe(true);
    } finally {
      await rpc.stop();
      writeFileSync(repoConfig, "{}");
    }
  });
});

/**
 * The transaction's decisions with fakes for git, the multiplexer and the fork (a real manifest
 * store in a temp dir): call order, refusals that touch nothing, the probe fallback, and failures.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CheckoutGitPort, GitPort, RepositoryInfo, WorktreeEntry } from "../../src/git/types.ts";
import type { DescribedProcess } from "../../src/process/facts.ts";
import { acknowledgeHandoff } from "../../src/child/acknowledge.ts";
import type { HandoffArgs } from "../../src/handoff/args.ts";
import { HandoffTransaction, type HandoffDeps, type HandoffRequest } from "../../src/handoff/transaction.ts";
import type { HandoffStep, MuxLocation } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { CreateWorkspaceRequest, Multiplexer, MuxResult } from "../../src/mux/types.ts";
import type { ForkRequest, ForkResult } from "../../src/session/fork.ts";
import type { PortProbe } from "../../src/ports/probe.ts";
import { shellQuote } from "../../src/child/launch-command.ts";
import { PROJECT_ROOT } from "../support/pi.ts";

/** The requests here have no `pi-handoff` on PATH: their messages name this copy's launcher by its path. */
const CLI = shellQuote(join(PROJECT_ROOT, "bin", "pi-handoff.mjs"));

const SHA = "b".repeat(40);

class FakeGit implements GitPort {
  repo: RepositoryInfo | undefined;
  branches = new Set<string>(["main"]);
  worktrees: WorktreeEntry[];
  commits = new Map<string, string>([
    ["HEAD", SHA],
    ["main", SHA],
  ]);
  constructor(root: string) {
    this.repo = { mainCheckout: root, commonDir: join(root, ".git"), currentCheckout: root, isLinkedWorktree: false };
    this.worktrees = [{ path: root, branch: "main", detached: false, prunable: false }];
  }
  async findRepository() {
    return this.repo;
  }
  async isValidBranchName(name: string) {
    return !name.startsWith("-") && !name.includes("..") && name.length > 0;
  }
  async branchExists(_repo: string, name: string) {
    return this.branches.has(name);
  }
  async listWorktrees() {
    return this.worktrees;
  }
  async resolveCommit(_repo: string, ref: string) {
    return this.commits.get(ref);
  }
  async currentBranch() {
    return "main";
  }
  async addWorktree() {
    throw new Error("the fake multiplexer never asks git for a worktree");
  }
  async captureState() {
    return { capturedAt: new Date().toISOString(), head: SHA, dirtyFiles: [], untrackedFiles: [], aheadOfBase: 0 };
  }
}

/**
 * What the launcher does when it runs, for a pane without processes: it announces its start with
 * this launch's token and holds its lock (this live process stands in for it). Returns whether its
 * params start Pi (not the confirm fault's "start nothing").
 */
function launcherRuns(script: string): boolean {
  const params = readFileSync(script.replace(/\.sh$/, ".params"), "utf8");
  const token = /^launch_token=(\S+)$/m.exec(params)?.[1] ?? "?";
  writeFileSync(script.replace(/\.sh$/, ".started"), `${token} ${process.pid}\n`);
  writeFileSync(script.replace(/\.sh$/, ".pid"), `${process.pid}\n`);
  return params.includes("launch_exec_pi() { exec env");
}

class FakeMux implements Multiplexer {
  readonly kind = "tmux" as const;
  /** As tmux and zellij (git makes the worktree at the requested path): the fork may begin beside it. */
  createsAtRequestedPath = false;
  /** Holds the worktree step until released, to see what runs beside it. */
  createGate: Promise<void> | undefined;
  calls: string[] = [];
  createResult: MuxResult<{ location: MuxLocation; worktreePath: string; commandStarted?: boolean }> | undefined;
  shellReady = true;
  focusOk = true;
  processes: DescribedProcess[] = [];
  /** How many typed lines the pane's shell loses (a start-up that swallows input). */
  swallow = 0;
  typed: string[] = [];
  /** Whether the window runs the request's command (as tmux does): the launcher then starts by itself. */
  runsCommand = false;
  windowWatch: NodeJS.Timeout | undefined;
  onRun: (line: string, startsPi: boolean) => Promise<void> = async () => {};
  async createWorkspace(request: CreateWorkspaceRequest) {
    this.calls.push("createWorkspace");
    await this.createGate;
    this.calls.push("createWorkspace done");
    mkdirSync(request.worktreePath, { recursive: true });
    const script = request.command?.[1];
    if (this.runsCommand && script !== undefined) {
      // The window's launcher waits for the launch step's go-ahead, then runs.
      this.windowWatch = setInterval(() => {
        const signal = script.replace(/\.sh$/, ".window");
        if (!existsSync(signal)) return;
        clearInterval(this.windowWatch);
        if (!readFileSync(signal, "utf8").startsWith("window_go=")) return;
        const startsPi = launcherRuns(script);
        this.calls.push("window launcher");
        void this.onRun("", startsPi);
      }, 5);
    }
    return (
      this.createResult ?? {
        ok: true as const,
        location: { kind: "tmux" as const, socketPath: "/tmp/sock", sessionId: "$1", windowId: "@7", paneId: "%7" },
        worktreePath: request.worktreePath,
        ...(this.runsCommand ? { commandStarted: true } : {}),
      }
    );
  }
  async waitForShell() {
    this.calls.push("waitForShell");
    return this.shellReady
      ? { ok: true as const }
      : { ok: false as const, code: "shell_not_ready", message: "The shell in pane %7 did not become ready." };
  }
  async run(_location: MuxLocation, line: string) {
    this.calls.push("run");
    this.typed.push(line);
    if (this.swallow > 0) {
      this.swallow -= 1;
      return { ok: true as const };
    }
    const script = /^sh (\S+)$/.exec(line)?.[1];
    await this.onRun(line, script !== undefined && launcherRuns(script));
    return { ok: true as const };
  }
  async probe() {
    this.calls.push("probe");
    return { ok: true as const, processes: this.processes };
  }
  async focus() {
    this.calls.push("focus");
    return this.focusOk
      ? { ok: true as const }
      : { ok: false as const, code: "pane_not_found", message: "Window @7 is gone." };
  }
  async exists() {
    return true;
  }
}

/** A checkout with nothing uncommitted, no upstreams and no tracked files (what the copy step asks). */
function fakeCheckoutGit(): CheckoutGitPort {
  return {
    snapshotChanges: async () => {
      throw new Error("nothing is carried here");
    },
    applyChanges: async () => {},
    uncommittedCounts: async () => ({ tracked: 0, untracked: 0 }),
    trackedFiles: async () => [],
    upstreamOf: async () => undefined,
    unfetchedRemoteBranch: async () => undefined,
    fetchUpstream: async () => {},
    countCommits: async () => 0,
    listRefs: async () => ({ branches: [], remotes: [], tags: [] }),
  };
}

describe("HandoffTransaction", () => {
  let dir: string;
  let repoRoot: string;
  let store: ManifestStore;
  let git: FakeGit;
  let mux: FakeMux;
  let forks: ForkRequest[];
  let calls: string[];

  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "tx-unit-")));
    repoRoot = join(dir, "repo");
    mkdirSync(repoRoot);
    store = ManifestStore.forAgentDir(join(dir, "agent"));
    git = new FakeGit(repoRoot);
    mux = new FakeMux();
    forks = [];
    calls = mux.calls;
  });
  afterEach(() => {
    clearInterval(mux.windowWatch);
    rmSync(dir, { recursive: true, force: true });
  });

  function deps(overrides: Partial<HandoffDeps> = {}): HandoffDeps {
    return {
      git,
      store,
      selectMux: () => ({ ok: true, mux }),
      fork: async (request: ForkRequest): Promise<ForkResult> => {
        calls.push("fork");
        forks.push(request);
        const childSessionFile = join(dir, "child.jsonl");
        writeFileSync(childSessionFile, "{}\n");
        return { childSessionFile, childSessionId: "child-id", pathEntries: 3, parentEntries: 5 };
      },
      now: () => new Date(),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      progress: () => {},
      timeouts: { shellMs: 1000, confirmMs: 300, pollMs: 10, startMs: 200, attempts: 3 },
      ...overrides,
    };
  }

  function request(args: Partial<HandoffArgs> = {}, overrides: Partial<HandoffRequest> = {}): HandoffRequest {
    const parentFile = join(dir, "parent.jsonl");
    writeFileSync(parentFile, "{}\n");
    return {
      args: { branch: "feat/x", base: "HEAD", baseGiven: false, focus: true, ...args },
      parent: {
        sessionFile: parentFile,
        sessionFileExists: true,
        sessionId: "parent-id",
        leafId: "abcd1234",
        cwd: repoRoot,
        sessionDir: join(dir, "sessions"),
      },
      model: { provider: "faux", id: "faux-1", available: true },
      thinkingLevel: "high",
      projectTrusted: false,
      agentDir: join(dir, "agent"),
      piCommand: ["/usr/bin/node", "/opt/pi/cli.js"],
      extraPiArgs: [],
      env: {},
      ...overrides,
    };
  }

  /** The child's side, as the real extension does it, once the command is typed. */
  function childAcknowledgesOnRun(): void {
    mux.onRun = async (_line, startsPi) => {
      // Only a launcher that starts Pi brings up a child.
      if (!startsPi) return;
      const details = forks.at(-1)?.message.details;
      if (details === undefined) throw new Error("no fork happened");
      // Noted first: the launch may see the acknowledgement in the store before this returns.
      calls.push("ack");
      // The session the manifest names for the child (wherever the fork step put it).
      const [entry] = await store.list();
      const sessionFile = entry?.ok === true ? entry.manifest.child.sessionFile : undefined;
      if (sessionFile === undefined) throw new Error("no child session recorded");
      await acknowledgeHandoff({ store, details, sessionFile, pid: 4242, now: () => new Date() });
    };
  }

  it("runs every step in order, and focuses only after the acknowledgement", async () => {
    childAcknowledgesOnRun();
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("running");
    expect(calls).toEqual(["createWorkspace", "createWorkspace done", "waitForShell", "fork", "run", "ack", "focus"]);
    if (outcome.code !== "running") return;
    expect(outcome.manifest.history.map((h) => h.state)).toEqual([
      "provisioning",
      "provisioned",
      "forked",
      "launching",
      "running",
    ]);
    expect(outcome.manifest.child).toMatchObject({
      pid: 4242,
      confirmedBy: "ack",
      sessionFile: join(dir, "child.jsonl"),
    });
    expect(outcome.manifest.focus).toEqual({ at: expect.any(String) });
    // Each step's time, in the entry written when it had run: the checks in the first one.
    expect(outcome.manifest.history.map((h) => (h.steps ?? []).map((s) => s.step))).toEqual([
      ["preconditions"],
      ["manifest", "worktree"],
      ["worktree", "fork"],
      [],
      [],
    ]);
    for (const entry of outcome.manifest.history)
      for (const step of entry.steps ?? []) expect(Number.isInteger(step.ms) && step.ms >= 0).toBe(true);
    expect(outcome.message).toContain("Handed off to branch feat/x (from HEAD at bbbbbbbbbbbb).");
    expect(outcome.message).toContain("Window: tmux window @7 (pane %7), Pi pid 4242");
  });

  it("does not focus with --no-focus", async () => {
    childAcknowledgesOnRun();
    const outcome = await new HandoffTransaction(deps()).run(request({ focus: false }));
    expect(outcome.code).toBe("running");
    expect(calls).not.toContain("focus");
  });

  it.each([
    ["no model", { model: undefined }, "no_model", "No model is selected; choose one with /model, then hand off."],
    [
      "an unavailable model",
      { model: { provider: "gone", id: "m", available: false } },
      "model_unavailable",
      "No usable model is selected (gone/m is not available in this Pi); choose one with /model, then hand off.",
    ],
    [
      "an unsaved session",
      {
        parent: {
          sessionFile: undefined,
          sessionFileExists: false,
          sessionId: "p",
          leafId: null,
          cwd: "/",
          sessionDir: "/",
        },
      },
      "session_not_saved",
      "This session is not saved (--no-session), so there is nothing to hand off; start Pi with a saved session.",
    ],
    [
      "a session with nothing on disk yet",
      {
        parent: {
          sessionFile: "/tmp/none.jsonl",
          sessionFileExists: false,
          sessionId: "p",
          leafId: null,
          cwd: "/",
          sessionDir: "/",
        },
      },
      "session_empty",
      "This session has no messages on disk yet; send a message first, then hand off.",
    ],
    [
      "a session with nothing on disk yet, in print mode (where no message can be sent first)",
      {
        printMode: true,
        parent: {
          sessionFile: "/tmp/none.jsonl",
          sessionFileExists: false,
          sessionId: "p",
          leafId: null,
          cwd: "/",
          sessionDir: "/",
        },
      },
      "session_empty",
      'This session has no messages on disk yet, and print mode cannot send one first; hand off from a saved session: pi -p --session <file> "/handoff-worktree ..." (or -c for the latest one here).',
    ],
    [
      "a confirm timeout that is not a number",
      { env: { PI_HANDOFF_CONFIRM_TIMEOUT_MS: "abc" } },
      "environment",
      'PI_HANDOFF_CONFIRM_TIMEOUT_MS is "abc", but it must be a whole number of milliseconds from 100 to 600000 (such as 45000); set it so, or unset it.',
    ],
    [
      "a relative worktree root (it would put the worktree inside the repository)",
      { env: { PI_HANDOFF_WORKTREE_ROOT: "trees" } },
      "environment",
      'PI_HANDOFF_WORKTREE_ROOT is "trees", but it must be an absolute path (such as ~/worktrees or /srv/worktrees): a relative one would put worktrees inside whatever directory Pi runs in; set it so, or unset it.',
    ],
  ] as Array<[string, Partial<HandoffRequest>, string, string]>)(
    "refuses %s before touching anything",
    async (_label, overrides, reason, message) => {
      const outcome = await new HandoffTransaction(deps()).run(request({}, overrides));
      expect(outcome).toEqual({ ok: false, code: "refused", reason, message });
      expect(calls).toEqual([]);
      expect(await store.list()).toEqual([]);
    },
  );

  it("refuses a multiplexer it cannot use, before asking git anything", async () => {
    let gitAsked = false;
    git.findRepository = async () => {
      gitAsked = true;
      return git.repo;
    };
    const outcome = await new HandoffTransaction(
      deps({ selectMux: () => ({ ok: false, message: "Not in tmux." }) }),
    ).run(request());
    expect(outcome).toEqual({ ok: false, code: "refused", reason: "no_multiplexer", message: "Not in tmux." });
    expect(gitAsked).toBe(false);
  });

  it("refuses a repository with no commits yet, saying so, with or without a base", async () => {
    git.commits.clear();
    for (const base of [undefined, "main"]) {
      const outcome = await new HandoffTransaction(deps()).run(
        request(base === undefined ? {} : { base, baseGiven: true }),
      );
      expect(outcome).toEqual({
        ok: false,
        code: "refused",
        reason: "no_commits",
        message: `The repository at ${repoRoot} has no commits yet, so a branch has nothing to start from; make a first commit, then hand off.`,
      });
    }
    // With commits, a base that names none is still said as such.
    git.commits.set("HEAD", SHA);
    const unresolved = await new HandoffTransaction(deps()).run(request({ base: "nope", baseGiven: true }));
    expect(unresolved).toMatchObject({ reason: "base_unresolved" });
    expect(await store.list()).toEqual([]);
  });

  it("refuses a branch another live handoff has claimed", async () => {
    childAcknowledgesOnRun();
    const first = await new HandoffTransaction(deps()).run(request());
    expect(first.code).toBe("running");
    // git has not seen the branch yet in this fake, so only the claim can stop the second one.
    const second = await new HandoffTransaction(deps()).run(request());
    expect(second.code).toBe("refused");
    if (second.code !== "refused" || first.code !== "running") return;
    expect(second.message).toBe(
      `Branch feat/x is already claimed by handoff ${first.manifest.id} (running); pick a new branch name.`,
    );
    expect(await store.list()).toHaveLength(1);
  });

  describe("ports and variables", () => {
    /** A bind test over a set of ports something else listens on, recording what it was asked. */
    function probe(busy: ReadonlySet<number> = new Set()): PortProbe & { asked: number[] } {
      const asked: number[] = [];
      return {
        asked,
        async check(port) {
          asked.push(port);
          return busy.has(port)
            ? { free: false, inUse: true, reason: `something listens on 127.0.0.1:${port}` }
            : { free: true };
        },
      };
    }
    const config = (count: number, env: Record<string, string> = {}) => ({
      ports: { count, range: [4100, 4105] as const },
      env,
    });

    it("reserves free ports no other live handoff holds, records them with the variables, and tells the child", async () => {
      childAcknowledgesOnRun();
      const first = await new HandoffTransaction(deps({ portProbe: probe(new Set([4100])) })).run(
        request({}, { config: config(2, { URL: "http://localhost:${PORT}/", DB: "db:${PORT_2}", ALL: "${PORTS}" }) }),
      );
      expect(first.code).toBe("running");
      if (first.code !== "running") return;
      expect(first.manifest.ports).toEqual([4101, 4102]);
      expect(first.manifest.env).toEqual({ URL: "http://localhost:4101/", DB: "db:4102", ALL: "4101,4102" });
      const note = `Ports reserved for this handoff: 4101, 4102 ($PI_HANDOFF_PORT is the first, $PI_HANDOFF_PORTS all of them); run its servers on these, not on the project's usual ports. Variables set for it: URL, DB, ALL. Everything run for it gets them (postCreate, its Pi and what that Pi runs); ${CLI} env ${first.manifest.id} prints them for another shell.`;
      expect(first.message).toContain(note);
      expect(forks[0]?.message.content).toContain(note);
      // The launcher exports them for everything it runs.
      const params = readFileSync(store.pathFor(first.manifest.id).replace(/\.json$/, ".launch.params"), "utf8");
      expect(params).toContain("export PI_HANDOFF_PORT=4101\nexport PI_HANDOFF_PORTS=4101,4102\n");
      expect(params).toContain("export URL=http://localhost:4101/\n");

      // A second handoff skips the first one's ports without a bind test, whatever the probe says.
      mux.calls.length = 0;
      const second = await new HandoffTransaction(deps({ portProbe: probe() })).run(
        request({ branch: "feat/y" }, { config: config(2) }),
      );
      expect(second.code === "running" && second.manifest.ports).toEqual([4100, 4103]);
      // Removed, the first one's ports are free again for the next.
      await store.transition(first.manifest.id, "removed");
      const third = await new HandoffTransaction(deps({ portProbe: probe() })).run(
        request({ branch: "feat/z" }, { config: config(2) }),
      );
      expect(third.code === "running" && third.manifest.ports).toEqual([4101, 4102]);
    });

    it("refuses, writing nothing, when the range has too few ports free", async () => {
      const asked = probe(new Set([4101, 4103, 4104]));
      const outcome = await new HandoffTransaction(deps({ portProbe: asked })).run(request({}, { config: config(4) }));
      expect(outcome).toEqual({
        ok: false,
        code: "refused",
        reason: "ports_unavailable",
        message: `Only 3 of the 4 ports asked for are free in 4100-4105 (3 not free (first: something listens on 127.0.0.1:4101)); remove handoffs you no longer need (${CLI} list), or widen "ports" in the settings.`,
      });
      expect(asked.asked).toEqual([4100, 4101, 4102, 4103, 4104, 4105]);
      expect(calls).toEqual([]);
      expect(await store.list()).toEqual([]);
    });

    it("records the variables alone for settings that reserve no port, and nothing for none", async () => {
      childAcknowledgesOnRun();
      const outcome = await new HandoffTransaction(deps({ portProbe: probe() })).run(
        request({}, { config: { ports: { count: 0, range: [4100, 4105] }, env: { MODE: "dev $(x)" } } }),
      );
      expect(outcome.code === "running" && [outcome.manifest.ports, outcome.manifest.env]).toEqual([
        undefined,
        { MODE: "dev $(x)" },
      ]);
      const plain = await new HandoffTransaction(deps()).run(request({ branch: "feat/plain" }));
      expect(plain.code === "running" && [plain.manifest.ports, plain.manifest.env]).toEqual([undefined, undefined]);
      expect(plain.message).not.toContain("Ports reserved");
    });
  });

  it("confirms through the process probe when no acknowledgement comes", async () => {
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("launch_unconfirmed");
    // Now with a Pi process in the pane that carries the marker and runs in the worktree.
    calls.length = 0;
    const second = new HandoffTransaction(deps());
    mux.onRun = async () => {
      const manifest = (await store.list())
        .map((e) => (e.ok ? e.manifest : undefined))
        .find((m) => m?.branch === "feat/y");
      if (manifest === undefined) throw new Error("no manifest");
      mux.processes = [
        { pid: 10, name: "bash", cwd: manifest.worktree.path },
        { pid: 11, name: "pi", cwd: manifest.worktree.path, handoffId: "someone-else" },
        { pid: 12, name: "pi", cwd: manifest.worktree.path, handoffId: manifest.id },
      ];
    };
    const probed = await second.run(request({ branch: "feat/y" }));
    expect(probed.code).toBe("running");
    if (probed.code !== "running") return;
    expect(probed.manifest.child).toMatchObject({ pid: 12, confirmedBy: "probe" });
    expect(probed.manifest.history.at(-1)).toMatchObject({ state: "running", note: "confirmed by process probe" });
    expect(calls).toEqual(["createWorkspace", "createWorkspace done", "waitForShell", "fork", "run", "probe", "focus"]);
  });

  it("records launch_unconfirmed, and does not focus, when nothing confirms", async () => {
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("launch_unconfirmed");
    expect(calls).toEqual(["createWorkspace", "createWorkspace done", "waitForShell", "fork", "run", "probe"]);
    if (outcome.code !== "launch_unconfirmed") return;
    expect(outcome.manifest.error).toMatchObject({ step: "confirm" });
    expect(outcome.message).toContain(
      "The new Pi did not confirm its start within 0.3 s and no Pi process was found in the new pane.",
    );
    expect(outcome.message).toContain("Kept (nothing was deleted): worktree");
  });

  it("keeps a running handoff when only the focus fails, and says so", async () => {
    childAcknowledgesOnRun();
    mux.focusOk = false;
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("running");
    if (outcome.code !== "running") return;
    expect(outcome.manifest.state).toBe("running");
    expect(outcome.manifest.focus).toEqual({ error: "Window @7 is gone.", at: expect.any(String) });
    expect(outcome.message).toContain("Could not switch to it: Window @7 is gone.");
  });

  it("fails at launch without typing anything when the shell never gets ready", async () => {
    mux.shellReady = false;
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    expect(calls).toEqual(["createWorkspace", "createWorkspace done", "waitForShell", "fork"]);
    if (outcome.code !== "failed") return;
    expect(outcome.step).toBe("launch");
    expect(outcome.manifest.error).toMatchObject({
      step: "launch",
      message: "The shell in pane %7 did not become ready.",
    });
    expect(outcome.manifest.gitState).toMatchObject({ head: SHA });
  });

  it("records what a partly failed worktree step left behind", async () => {
    mux.createResult = {
      ok: false,
      code: "window_create_failed",
      message: "tmux could not open a window.",
      partial: { worktreePath: join(dir, "left-behind") },
    };
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    expect(outcome.manifest.worktree.path).toBe(join(dir, "left-behind"));
    expect(outcome.manifest.error).toMatchObject({ step: "worktree", message: "tmux could not open a window." });
    expect(calls).toEqual(["createWorkspace", "createWorkspace done"]);
  });

  it("fails at the worktree step when the new worktree is not at the base commit", async () => {
    const other = "c".repeat(40);
    const resolve = git.resolveCommit.bind(git);
    git.resolveCommit = async (repo: string, ref: string) =>
      repo !== repoRoot && ref === "HEAD" ? other : resolve(repo, ref);
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    expect(outcome.step).toBe("worktree");
    expect(outcome.manifest.error?.message).toBe(
      `The new worktree is at ${other}, not at the base ${SHA}; the branch feat/x must have been created by something else meanwhile.`,
    );
    expect(outcome.manifest.mux).toMatchObject({ windowId: "@7" });
    expect(calls).toEqual(["createWorkspace", "createWorkspace done"]);
  });

  it("does not turn a handoff that changed meanwhile back to running when the probe finds a Pi", async () => {
    mux.onRun = async () => {
      const manifest = (await store.list())
        .map((e) => (e.ok ? e.manifest : undefined))
        .find((m) => m?.branch === "feat/x");
      if (manifest === undefined) throw new Error("no manifest");
      mux.processes = [{ pid: 12, name: "pi", cwd: manifest.worktree.path, handoffId: manifest.id }];
      // Someone else (recovery) settles the handoff while this one waits for the acknowledgement.
      await store.transition(manifest.id, "failed", undefined, "failed elsewhere");
    };
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("launch_unconfirmed");
    if (outcome.code !== "launch_unconfirmed") return;
    expect(outcome.manifest.state).toBe("failed");
    expect(outcome.manifest.history.map((h) => h.state)).not.toContain("running");
    expect(outcome.message).toContain(`but handoff ${outcome.manifest.id} is failed now, so it was left as it is.`);
    expect(calls).not.toContain("focus");
  });

  it("records an unexpected error at the step where it happened, not at launch", async () => {
    const resolve = git.resolveCommit.bind(git);
    git.resolveCommit = async (repo: string, ref: string) => {
      if (repo !== repoRoot && ref === "HEAD") throw new Error("git rev-parse timed out after 30 s");
      return resolve(repo, ref);
    };
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    expect(outcome.step).toBe("worktree");
    expect(outcome.manifest.error).toMatchObject({ step: "worktree", message: "git rev-parse timed out after 30 s" });
    expect(calls).toEqual(["createWorkspace", "createWorkspace done"]);
  });

  it.each(["worktree", "fork", "launch", "confirm"] as const)(
    "stops at an injected fault at %s with the step recorded",
    async (step: HandoffStep) => {
      childAcknowledgesOnRun();
      const outcome = await new HandoffTransaction(deps({ faults: { failAt: step } })).run(request());
      const manifest = "manifest" in outcome ? outcome.manifest : undefined;
      expect(manifest?.error?.step).toBe(step);
      expect(calls).not.toContain("focus");
    },
  );

  it("types the short launch line again when the shell lost it, and reaches running", async () => {
    childAcknowledgesOnRun();
    mux.swallow = 1;
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code, outcome.message).toBe("running");
    if (outcome.code !== "running") return;
    const line = `sh ${store.pathFor(outcome.manifest.id).replace(/\.json$/, ".launch.sh")}`;
    expect(mux.typed).toEqual([line, line]);
    expect(outcome.manifest.child.command).toBe(line);
    expect(outcome.manifest.launch).toMatchObject({ typed: 2, startedPid: process.pid, startedAt: expect.any(String) });
    expect(calls).toEqual([
      "createWorkspace",
      "createWorkspace done",
      "waitForShell",
      "fork",
      "run",
      "run",
      "ack",
      "focus",
    ]);
  });

  it("names a launcher it could not write as the launch step's failure, not as a shell that was not ready, and types nothing", async () => {
    const waitForShell = mux.waitForShell.bind(mux);
    mux.waitForShell = async () => {
      // Something in the way of the launcher file: a directory that cannot be replaced.
      const [manifestFile] = readdirSync(store.dir).filter((name) => name.endsWith(".json"));
      const script = join(store.dir, `${manifestFile?.replace(/\.json$/, "")}.launch.sh`);
      rmSync(script, { force: true });
      mkdirSync(join(script, "in-the-way"), { recursive: true });
      return waitForShell();
    };
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    const script = store.pathFor(outcome.manifest.id).replace(/\.json$/, ".launch.sh");
    expect(outcome.step).toBe("launch");
    const message = outcome.manifest.error?.message ?? "";
    expect(message.slice(0, `Could not write the launcher ${script}: `.length)).toBe(
      `Could not write the launcher ${script}: `,
    );
    expect(message).toMatch(/: \S.*\.$/);
    expect(mux.typed).toEqual([]);
  });

  it("stops typing after the bounded number of attempts and reports exactly what it did and saw", async () => {
    childAcknowledgesOnRun();
    mux.swallow = 99;
    const progress: string[] = [];
    const outcome = await new HandoffTransaction(
      deps({ progress: (step, text) => progress.push(`${step}: ${text}`) }),
    ).run(request());
    expect(outcome.code).toBe("launch_unconfirmed");
    if (outcome.code !== "launch_unconfirmed") return;
    expect(mux.typed).toHaveLength(3);
    const files = store.pathFor(outcome.manifest.id).replace(/\.json$/, "");
    expect(outcome.manifest.error).toEqual({
      step: "launch",
      at: expect.any(String),
      message: `No launcher started in the new pane: the launch line (sh ${files}.launch.sh) was typed 3 times, 0.2 s apart, and no start was announced in ${files}.launch.started; the shell there may still be starting or may have lost the input.`,
    });
    expect(outcome.manifest.launch).toEqual({ launcherFile: `${files}.launch.sh`, typed: 3 });
    expect(calls).not.toContain("probe");
    // The wait is shown as it runs: elapsed against its limit, and which typing it is.
    expect(progress).toContain("launch: No launcher started; typing the launch line again (3 of 3)");
    expect(
      progress.some((text) =>
        // The elapsed time is the machine's (a loaded one overshoots the 0.2 s wait); its limit is exact.
        /^launch: Waiting for the launcher to start \(typed 2 of 3\) \(\d+\.\d s of 0\.2 s\)$/.test(text),
      ),
    ).toBe(true);
  });

  it("types nothing when the window runs the launcher itself, and waits for no shell", async () => {
    childAcknowledgesOnRun();
    mux.runsCommand = true;
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code, outcome.message).toBe("running");
    expect(calls).toEqual(["createWorkspace", "createWorkspace done", "fork", "window launcher", "ack", "focus"]);
    expect(mux.typed).toEqual([]);
    if (outcome.code !== "running") return;
    expect(outcome.manifest.launch).toMatchObject({ windowCommand: true, typed: 0, startedPid: process.pid });
  });

  it("tells a window's waiting launcher that nothing comes when the handoff fails before the launch", async () => {
    mux.runsCommand = true;
    const outcome = await new HandoffTransaction(deps({ faults: { failAt: "fork" } })).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    const signal = readFileSync(store.pathFor(outcome.manifest.id).replace(/\.json$/, ".launch.window"), "utf8");
    expect(signal).toBe(
      `window_cancelled=${shellQuote(`Handoff ${outcome.manifest.id} failed at the fork step, so no Pi was started here; ${CLI} inspect ${outcome.manifest.id} shows what exists.`)}\n`,
    );
  });

  it("records the window a failed checkout left, and tells its waiting launcher that nothing comes", async () => {
    mux.createResult = {
      ok: false,
      code: "worktree_create_failed",
      message: "git could not add the worktree.",
      partial: {
        location: { kind: "tmux", socketPath: join(dir, "tmux.sock"), sessionId: "$1", windowId: "@8", paneId: "%8" },
        commandStarted: true,
      },
    };
    const outcome = await new HandoffTransaction(deps()).run(request());
    expect(outcome.code).toBe("failed");
    if (outcome.code !== "failed") return;
    const files = store.pathFor(outcome.manifest.id).replace(/\.json$/, "");
    expect(outcome.manifest.mux).toMatchObject({ windowId: "@8", paneId: "%8" });
    expect(outcome.manifest.launch).toEqual({ launcherFile: `${files}.launch.sh`, windowCommand: true });
    expect(outcome.manifest.error).toMatchObject({ step: "worktree", message: "git could not add the worktree." });
    expect(readFileSync(`${files}.launch.window`, "utf8")).toBe(
      `window_cancelled=${shellQuote(`Handoff ${outcome.manifest.id} failed at the worktree step, so no Pi was started here; ${CLI} inspect ${outcome.manifest.id} shows what exists.`)}\n`,
    );
  });

  describe("where the backend makes the worktree at the planned path", () => {
    let release: () => void;
    beforeEach(() => {
      mux.createsAtRequestedPath = true;
      mux.createGate = new Promise((resolve) => {
        release = resolve;
      });
    });

    /** A fork that writes where it is told, as the real one does. */
    function forkInto(onFork: (request: ForkRequest) => Promise<void> | void = () => {}): HandoffDeps["fork"] {
      return async (forkRequest) => {
        calls.push("fork");
        forks.push(forkRequest);
        mkdirSync(forkRequest.childSessionDir, { recursive: true });
        const childSessionFile = join(forkRequest.childSessionDir, "2026-12-02T00-00-00-000Z_child.jsonl");
        writeFileSync(childSessionFile, "{}\n");
        await onFork(forkRequest);
        return { childSessionFile, childSessionId: "child-id", pathEntries: 3, parentEntries: 5 };
      };
    }

    it("copies the conversation while the worktree is made, beside the manifest, then into the session directory", async () => {
      childAcknowledgesOnRun();
      // The worktree step goes on only once the fork has run beside it.
      const outcome = await new HandoffTransaction(deps({ fork: forkInto(() => release()) })).run(request());
      expect(outcome.code, outcome.message).toBe("running");
      expect([...calls.slice(0, 2)].sort()).toEqual(["createWorkspace", "fork"]);
      expect(calls.slice(2)).toEqual(["createWorkspace done", "waitForShell", "run", "ack", "focus"]);
      if (outcome.code !== "running") return;
      const staging = store.pathFor(outcome.manifest.id).replace(/\.json$/, ".fork");
      expect(forks[0]?.childSessionDir).toBe(staging);
      expect(forks[0]?.childCwd).toBe(outcome.manifest.worktree.path);
      const sessionDir = outcome.manifest.intent?.sessionDir ?? "";
      expect(sessionDir).not.toBe("");
      expect(outcome.manifest.child).toMatchObject({
        sessionFile: join(sessionDir, "2026-12-02T00-00-00-000Z_child.jsonl"),
        sessionId: "child-id",
      });
      expect(readFileSync(join(sessionDir, "2026-12-02T00-00-00-000Z_child.jsonl"), "utf8")).toBe("{}\n");
      expect(existsSync(staging)).toBe(false);
      expect(outcome.manifest.history.map((h) => h.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "running",
      ]);
    });

    // Sessions on another file system than the store (a custom session dir on another mount):
    // /dev/shm is a tmpfs beside the temp dir on Linux machines such as CI's.
    const otherFileSystem = existsSync("/dev/shm") && statSync("/dev/shm").dev !== statSync(realpathSync(tmpdir())).dev;
    it.runIf(otherFileSystem)(
      "puts the early fork into a session directory on another file system whole, by a copy beside it",
      async () => {
        const sessions = mkdtempSync(join("/dev/shm", "tx-sessions-"));
        try {
          childAcknowledgesOnRun();
          const base = request();
          const outcome = await new HandoffTransaction(deps({ fork: forkInto(() => release()) })).run({
            ...base,
            parent: { ...base.parent, sessionDir: sessions },
          });
          expect(outcome.code, outcome.message).toBe("running");
          if (outcome.code !== "running") return;
          expect(outcome.manifest.child.sessionFile).toBe(join(sessions, "2026-12-02T00-00-00-000Z_child.jsonl"));
          // The file alone: no copy left beside it, and the staging directory gone.
          expect(readdirSync(sessions)).toEqual(["2026-12-02T00-00-00-000Z_child.jsonl"]);
          expect(readFileSync(join(sessions, "2026-12-02T00-00-00-000Z_child.jsonl"), "utf8")).toBe("{}\n");
          expect(existsSync(store.pathFor(outcome.manifest.id).replace(/\.json$/, ".fork"))).toBe(false);
        } finally {
          rmSync(sessions, { recursive: true, force: true });
        }
      },
    );

    it("leaves no session when the worktree step beside the fork fails: it waits for the fork and removes what it wrote", async () => {
      mux.createResult = { ok: false, code: "worktree_create_failed", message: "git could not add the worktree." };
      let forkEnded = false;
      const outcome = await new HandoffTransaction(
        deps({
          fork: forkInto(async () => {
            release();
            await new Promise((resolve) => setTimeout(resolve, 50));
            forkEnded = true;
          }),
        }),
      ).run(request());
      expect(outcome.code).toBe("failed");
      if (outcome.code !== "failed") return;
      expect(forkEnded).toBe(true);
      expect(outcome.step).toBe("worktree");
      expect(outcome.manifest.error).toMatchObject({ step: "worktree", message: "git could not add the worktree." });
      expect(outcome.manifest.child.sessionFile).toBeUndefined();
      expect(outcome.manifest.intent?.sessionDir).toBeUndefined();
      expect(existsSync(store.pathFor(outcome.manifest.id).replace(/\.json$/, ".fork"))).toBe(false);
      expect(outcome.manifest.history.map((h) => h.state)).toEqual(["provisioning", "failed"]);
    });

    it("reports a failed fork as the fork step's once the worktree step is recorded", async () => {
      release();
      const outcome = await new HandoffTransaction(
        deps({
          fork: async () => {
            calls.push("fork");
            throw new Error("The parent session could not be read.");
          },
        }),
      ).run(request());
      expect(outcome.code).toBe("failed");
      if (outcome.code !== "failed") return;
      expect(outcome.step).toBe("fork");
      expect(outcome.manifest.error?.message).toBe("The parent session could not be read.");
      expect(outcome.manifest.history.map((h) => h.state)).toEqual(["provisioning", "provisioned", "failed"]);
      expect(outcome.manifest.child.sessionFile).toBeUndefined();
    });

    it("copies after the setup when the setup's notes go into the handoff message", async () => {
      childAcknowledgesOnRun();
      release();
      writeFileSync(join(repoRoot, ".env"), "A=1\n");
      const outcome = await new HandoffTransaction(deps({ checkoutGit: fakeCheckoutGit() })).run(
        request({}, { config: { copy: [".env"] } }),
      );
      expect(outcome.code, outcome.message).toBe("running");
      expect(calls.indexOf("fork")).toBeGreaterThan(calls.indexOf("createWorkspace done"));
      expect(forks[0]?.message.content).toContain(".env");
    });
  });

  it("refuses a launch wait set to something unusable before touching anything", async () => {
    const outcome = await new HandoffTransaction(deps()).run(
      request({}, { env: { PI_HANDOFF_LAUNCH_ATTEMPTS: "many" } }),
    );
    expect(outcome).toEqual({
      ok: false,
      code: "refused",
      reason: "environment",
      message:
        'PI_HANDOFF_LAUNCH_ATTEMPTS is "many", but it must be a whole number from 1 to 10 (such as 3); set it so, or unset it.',
    });
    expect(calls).toEqual([]);
    expect(await store.list()).toEqual([]);
  });
});

/**
 * HerdrMultiplexer against Herdr: real worktrees, real shells in real PTYs, real processes, on the
 * real Herdr 0.8.2 (the herdr-real project) and on the test double from the same test code. What
 * only the double can show stays the double's (`forDoubleOnly`): every fault it can inject turned
 * into one sentence and a typed failure, a pretended version (0.8.2's missing trust flag, an
 * untrusted repository), legacy ids, a pane Herdr has not restarted yet, and the order of the calls.
 * Where the call log proves that nothing was typed, focused or closed, the observable state (the
 * screens, the focus, the workspaces, the processes) proves it on both.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HerdrLocation } from "../../src/manifest/locations.ts";
import { shellQuote } from "../../src/child/launch-command.ts";
import { selectMultiplexer } from "../../src/mux/registry.ts";
import { muxForLocation } from "../../src/mux/registry.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import type { CreatedWorkspace, CreateWorkspaceRequest, MuxFailure, MuxResult } from "../../src/mux/types.ts";
import { GitCli } from "../../src/git/git.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  asDouble,
  forDoubleOnly,
  HERDR_TARGET,
  onTheRealHerdrWhenBuilt,
  startFakePi,
  startHerdr,
  withHerdrDouble,
  type HerdrServer,
  type HerdrServerOptions,
} from "../support/herdr.ts";
import { waitFor } from "../support/tmux.ts";

const SHELL_DELAY_MS = 1_200;

let repo: TempRepo;
let herdr: HerdrServer;
let parent: { workspaceId: string; tabId: string; paneId: string };
let baseSha: string;
let branchCounter = 0;

beforeAll(async () => {
  repo = createTempRepo({ extraCommits: 2, prefix: "phw-herdr-it-" });
  baseSha = repo.run(["rev-parse", "HEAD~1"]);
  herdr = await startHerdr({
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", GIT_CONFIG_NOSYSTEM: "1" },
    shellDelayMs: SHELL_DELAY_MS,
  });
  parent = await herdr.openWorkspace(repo.root, "parent");
});

afterEach(() => {
  if (herdr.kind === "double") herdr.clearFaults();
});

afterAll(async () => {
  // Whatever happened above, production never passed --json to a pane or workspace command (the
  // double's log; the real Herdr would have refused it with a usage error, failing a test above).
  const withJson =
    herdr?.kind === "double"
      ? herdr
          .calls()
          .filter((call) => ["pane", "workspace"].includes(call.argv[0] ?? "") && call.argv.includes("--json"))
      : [];
  await herdr?.kill();
  repo?.cleanup();
  expect(withJson).toEqual([]);
});

/** The backend as a Pi inside the parent pane would build it. */
function backend(
  options: { worktreeTimeoutMs?: number; timeoutMs?: number; lateCompletionMs?: number } = {},
): HerdrMultiplexer {
  return HerdrMultiplexer.fromEnvironment(
    { ...herdr.serverEnv, HERDR_ENV: "1", HERDR_SOCKET_PATH: herdr.socketPath, HERDR_BIN_PATH: herdr.binPath },
    options,
  );
}

function request(name?: string): CreateWorkspaceRequest {
  const branch = name ?? `feat/it-${++branchCounter}`;
  return {
    mainCheckout: repo.root,
    branch,
    baseSha,
    worktreePath: join(repo.dir, "worktrees", branch.replace(/\//g, "-")),
    label: branch,
  };
}

function expectCreated(result: MuxResult<CreatedWorkspace>): { location: HerdrLocation; worktreePath: string } {
  if (!result.ok) throw new Error(`createWorkspace failed: ${result.code}: ${result.message}`);
  if (result.location.kind !== "herdr") throw new Error("expected a Herdr location");
  return { location: result.location, worktreePath: result.worktreePath };
}

function expectFailure(result: MuxResult<unknown>): MuxFailure {
  if (result.ok) throw new Error("expected a failure");
  return result;
}

/** One sentence: one line, starts with a capital or "herdr", ends with one period. */
function expectOneSentence(message: string): void {
  expect(message.includes("\n")).toBe(false);
  expect(message).toMatch(/^(?:[A-Z]|herdr |The )[^\n]*[^.]\.$/);
}

async function workspaceFocused(workspaceId: string): Promise<boolean> {
  return ((await herdr.result(["workspace", "get", workspaceId])).workspace as { focused: boolean }).focused;
}

async function readyShell(mux: HerdrMultiplexer, location: HerdrLocation): Promise<void> {
  const ready = await mux.waitForShell(location, { timeoutMs: 15_000 });
  expect(ready).toEqual({ ok: true });
}

/**
 * Types a line into the pane's shell and waits until it ran: whatever reached that shell before it
 * has run too (a shell reads its input in order).
 */
async function ranInPane(paneId: string): Promise<void> {
  const mark = join(repo.dir, `ran-${paneId.replace(/\W/g, "-")}-${Date.now()}`);
  expect(await herdr.herdr(["pane", "run", paneId, `touch ${shellQuote(mark)}`])).toMatchObject({ exitCode: 0 });
  await waitFor(() => existsSync(mark), { timeoutMs: 10_000, description: `the line typed into ${paneId} to run` });
}

/** A Herdr of its own (the one this run is for) for one test, killed afterwards whatever happens. */
async function withOwnHerdr<T>(options: HerdrServerOptions, body: (own: HerdrServer) => Promise<T>): Promise<T> {
  const own = await startHerdr(options);
  try {
    return await body(own);
  } finally {
    await own.kill();
  }
}

/**
 * The next `worktree create` takes `ms` in the server: on the real Herdr a post-checkout hook that
 * sleeps (git runs it inside `git worktree add`), on the double its `late` fault. Returns the undo.
 */
function slowNextCreate(ms: number): () => void {
  if (herdr.kind === "double") {
    herdr.setFaults({ "worktree create": { late: ms, times: 1 } });
    return () => asDouble(herdr).clearFaults();
  }
  const hook = join(repo.root, ".git", "hooks", "post-checkout");
  writeFileSync(hook, `#!/bin/sh\nsleep ${ms / 1000}\n`, { mode: 0o755 });
  return () => rmSync(hook, { force: true });
}

interface WorkspaceView {
  workspace_id: string;
  label: string;
  focused: boolean;
  worktree?: { checkout_path: string };
}

async function workspaceList(): Promise<WorkspaceView[]> {
  return (await herdr.result(["workspace", "list"])).workspaces as WorkspaceView[];
}

interface HerdrAsSeen {
  workspaces: WorkspaceView[];
  screens: string[];
}

/** What a person sees of Herdr: every workspace (id, label, focus, checkout) and every pane's screen. */
async function herdrAsSeen(): Promise<HerdrAsSeen> {
  const panes = (await herdr.result(["pane", "list"])).panes as { pane_id: string }[];
  const screens: string[] = [];
  for (const pane of panes) screens.push(`${pane.pane_id}\n${await herdr.read(pane.pane_id)}`);
  return { workspaces: await workspaceList(), screens };
}

/**
 * Herdr as seen once every pane's shell has drawn something and two looks 200 ms apart agree (a
 * prompt still being drawn, or a shell slow to start on a loaded machine, is not a change).
 */
async function settledHerdr(): Promise<HerdrAsSeen> {
  let last = await herdrAsSeen();
  return waitFor(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const now = await herdrAsSeen();
      const same = JSON.stringify(now) === JSON.stringify(last);
      last = now;
      const drawn = now.screens.every((screen) => screen.slice(screen.indexOf("\n") + 1).trim().length > 0);
      return same && drawn ? now : undefined;
    },
    { timeoutMs: 10_000, description: "Herdr's screens to settle" },
  );
}

describe(`HerdrMultiplexer against Herdr (${HERDR_TARGET})`, () => {
  it("creates the worktree at the base SHA with an unfocused workspace, through `worktree create --no-focus`", async () => {
    const mux = backend();
    if (herdr.kind === "double") herdr.clearCalls();
    const wanted = request();
    const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
    expect(worktreePath).toBe(realpathSync(wanted.worktreePath));
    expect(location).toMatchObject({ kind: "herdr", socketPath: herdr.socketPath });
    expect(location.workspaceId).toMatch(/^w[0-9A-Z]+$/);
    expect(location.paneId).toBe(`${location.workspaceId}:p1`);
    expect(location.tabId).toBe(`${location.workspaceId}:t1`);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: worktreePath })).toBe(baseSha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktreePath })).toBe(wanted.branch);
    expect(await workspaceFocused(location.workspaceId ?? "")).toBe(false);
    expect(await workspaceFocused(parent.workspaceId)).toBe(true);
    // Herdr made it at the path asked for, with the label asked for, as the worktree's own workspace.
    const made = (await workspaceList()).find((ws) => ws.workspace_id === location.workspaceId);
    expect(made).toMatchObject({ label: wanted.label, worktree: { checkout_path: wanted.worktreePath } });
    // The exact call, from the double's log (0.9.2 there: the trust flag goes with it).
    if (herdr.kind === "double") {
      const create = herdr
        .calls()
        .find((call) => call.argv[0] === "worktree" && call.argv[1] === "create" && !call.argv.includes("--help"));
      expect(create?.argv).toEqual([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        wanted.branch,
        "--base",
        baseSha,
        "--path",
        wanted.worktreePath,
        "--label",
        wanted.label,
        "--no-focus",
        "--trust-repository",
      ]);
    }
  });

  onTheRealHerdrWhenBuilt(() => {
    it("waits for the shell's start-up job, then types a hostile line literally: only the intended command runs", async () => {
      const mux = backend();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(request()));
      const canary = join(worktreePath, "canary");
      const out = join(worktreePath, "out.txt");
      const hostile = `$(touch ${canary}); \`touch ${canary}\` ' " \\ ; touch ${canary} && echo *`;
      const started = Date.now();
      await readyShell(mux, location);
      // The double's start-up job holds the foreground for SHELL_DELAY_MS; readiness came after it.
      expect(Date.now() - started).toBeGreaterThanOrEqual(SHELL_DELAY_MS - 200);
      expect(await mux.run(location, `printf '%s' ${shellQuote(hostile)} > ${shellQuote(out)}`)).toEqual({ ok: true });
      const written = await waitFor(() => (existsSync(out) ? readFileSync(out, "utf8") : undefined), {
        timeoutMs: 10_000,
        description: "the command's output",
      });
      expect(written).toBe(hostile);
      expect(existsSync(canary)).toBe(false);
      // A newline would submit half a line: refused, nothing typed.
      const refused = expectFailure(await mux.run(location, `touch ${canary}\ntouch ${canary}`));
      expect(refused.code).toBe("invalid_command_line");
      expectOneSentence(refused.message);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(existsSync(canary)).toBe(false);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("without the wait, the start-up job swallows the line: the race waitForShell exists for is real", async () => {
      const mux = backend();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(request()));
      const lost = join(worktreePath, "lost");
      expect(await mux.run(location, `touch ${shellQuote(lost)}`)).toEqual({ ok: true });
      await readyShell(mux, location);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(existsSync(lost)).toBe(false);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("probes the pane: the foreground process with its realpath cwd and the handoff marker, by exact pid", async () => {
      const mux = backend();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(request()));
      await readyShell(mux, location);
      expect(await mux.run(location, `env PI_HANDOFF_ID=probe-marker sleep 30`)).toEqual({ ok: true });
      const found = await waitFor(
        async () => {
          const probed = await mux.probe(location);
          if (!probed.ok) throw new Error(probed.message);
          return probed.processes.find((process) => process.name === "sleep");
        },
        { timeoutMs: 10_000, description: "the sleep in the pane" },
      );
      expect(found).toMatchObject({ name: "sleep", cwd: worktreePath, handoffId: "probe-marker" });
      expect(readFileSync(`/proc/${found.pid}/comm`, "utf8").trim()).toBe("sleep");
      const shellOnly = await mux.probe(location);
      if (!shellOnly.ok) throw new Error(shellOnly.message);
      expect(
        shellOnly.processes.filter((process) => process.handoffId === "probe-marker").map((process) => process.pid),
      ).toEqual([found.pid]);
      await herdr.herdr(["pane", "send-keys", location.paneId ?? "", "C-c"]);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("focuses the workspace, and tells whether its pane exists", async () => {
      const mux = backend();
      const { location } = expectCreated(await mux.createWorkspace(request()));
      expect(await mux.exists(location)).toBe(true);
      expect(await mux.focus(location)).toEqual({ ok: true });
      expect(await workspaceFocused(location.workspaceId ?? "")).toBe(true);
      expect(await workspaceFocused(parent.workspaceId)).toBe(false);
      await herdr.result(["workspace", "focus", parent.workspaceId]);
      await herdr.result(["workspace", "close", location.workspaceId ?? ""]);
      expect(await mux.exists(location)).toBe(false);
      expect(
        await mux.exists({ kind: "herdr", socketPath: herdr.socketPath, workspaceId: location.workspaceId ?? "" }),
      ).toBe(false);
      const gone = expectFailure(await mux.focus(location));
      expect(gone).toEqual({
        ok: false,
        code: "workspace_not_found",
        message: `Herdr workspace ${location.workspaceId} no longer exists.`,
      });
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("reopens a closed worktree in a new, unfocused workspace whose shell starts in the checkout", async () => {
      const mux = backend();
      const wanted = request();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
      await herdr.result(["workspace", "close", location.workspaceId ?? ""]);
      const reopened = await mux.reopenWorkspace({
        mainCheckout: repo.root,
        worktreePath,
        branch: wanted.branch,
        label: wanted.label,
        previous: location,
      });
      if (!reopened.ok) throw new Error(reopened.message);
      const again = reopened.location;
      if (again.kind !== "herdr") throw new Error("expected a Herdr location");
      expect(again.workspaceId).not.toBe(location.workspaceId);
      expect(await workspaceFocused(again.workspaceId ?? "")).toBe(false);
      await readyShell(mux, again);
      const probed = await mux.probe(again);
      if (!probed.ok) throw new Error(probed.message);
      expect(probed.processes.map((process) => process.cwd)).toContain(worktreePath);
    });
  });

  it("removes a worktree: refuses a dirty one without force, keeps the branch, reopens a closed workspace first (#4317)", async () => {
    const mux = backend();
    const wanted = request();
    const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
    writeFileSync(join(worktreePath, "notes.txt"), "uncommitted\n");
    const dirty = expectFailure(
      await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false }),
    );
    expect(dirty).toEqual({
      ok: false,
      code: "dirty_worktree",
      message: `The worktree at ${worktreePath} has uncommitted or untracked changes, so it was not removed; commit or discard them, or remove it with force.`,
    });
    expect(readFileSync(join(worktreePath, "notes.txt"), "utf8")).toBe("uncommitted\n");
    expect(await mux.exists(location)).toBe(true);

    // Close the workspace: Herdr alone could not remove the worktree now.
    await herdr.result(["workspace", "close", location.workspaceId ?? ""]);
    if (herdr.kind === "double") herdr.clearCalls();
    const refusedAgain = expectFailure(
      await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false }),
    );
    expect(refusedAgain.code).toBe("dirty_worktree");
    // The workspace opened only to ask is closed again: Herdr is left as it was.
    const workspaces = (await herdr.result(["workspace", "list"])).workspaces as {
      worktree?: { checkout_path: string };
    }[];
    expect(workspaces.filter((ws) => ws.worktree?.checkout_path === worktreePath)).toEqual([]);

    expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true })).toEqual({
      ok: true,
    });
    expect(existsSync(worktreePath)).toBe(false);
    expect(repo.run(["branch", "--list", wanted.branch, "--format=%(refname:short)"])).toBe(wanted.branch);
    // No workspace of the checkout is left, and the parent kept the focus (0.8.2 would move it).
    expect((await workspaceList()).filter((ws) => ws.worktree?.checkout_path === worktreePath)).toEqual([]);
    expect(await workspaceFocused(parent.workspaceId)).toBe(true);
    if (herdr.kind === "double") {
      const calls = herdr.calls().map((call) => call.argv.slice(0, 2).join(" "));
      expect(calls.filter((call) => call.startsWith("worktree "))).toEqual([
        "worktree list",
        "worktree open",
        "worktree remove",
        "worktree list",
        "worktree open",
        "worktree remove",
      ]);
    }
    // Removing what is already gone is done.
    expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false })).toEqual({
      ok: true,
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("waitForShell gives up on a pane that is gone", async () => {
      const mux = backend();
      const missing: HerdrLocation = {
        kind: "herdr",
        socketPath: herdr.socketPath,
        workspaceId: "w99",
        paneId: "w99:p1",
      };
      const gone = expectFailure(await mux.waitForShell(missing, { timeoutMs: 5_000 }));
      expect(gone.code).toBe("pane_not_found");
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("no server: createWorkspace fails with server_not_running, and the detector refuses in one sentence before anything", async () => {
      const socket = join(repo.dir, "stopped", "herdr.sock");
      const env = { ...herdr.serverEnv, HERDR_ENV: "1", HERDR_SOCKET_PATH: socket, HERDR_BIN_PATH: herdr.binPath };
      const failed = expectFailure(await HerdrMultiplexer.fromEnvironment(env).createWorkspace(request()));
      expect(failed.code).toBe("server_not_running");
      const git = new GitCli({ env: repo.env });
      const refused = await selectMultiplexer(undefined, { ...env, PI_HANDOFF_HERDR_PING_TIMEOUT_MS: "30000" }, git);
      expect(refused).toEqual({
        ok: false,
        message: `Herdr's server is not running at ${socket}; start Herdr (or hand off with --mux tmux from a tmux pane), then try again.`,
      });
      const missingBinary = await selectMultiplexer(
        "herdr",
        { ...env, HERDR_BIN_PATH: "", PATH: join(repo.dir, "empty-bin") },
        git,
      );
      expect(missingBinary).toEqual({
        ok: false,
        message:
          "The herdr executable was not found ($HERDR_BIN_PATH is unset and herdr is not on PATH); install Herdr or hand off with --mux tmux.",
      });
    });
  });

  // A pretended version and an untrusted repository, then every fault: the double's own.
  forDoubleOnly(() => {
    it("passes --trust-repository only where `worktree create --help` lists it (probed once)", async () => {
      await withHerdrDouble({ env: herdr.serverEnv, version: "0.8.2" }, async (old) => {
        await old.openWorkspace(repo.root, "parent");
        const mux = HerdrMultiplexer.fromEnvironment({ ...old.clientEnv });
        expectCreated(await mux.createWorkspace(request()));
        expectCreated(await mux.createWorkspace(request()));
        const creates = old
          .calls()
          .filter((call) => call.argv[0] === "worktree" && call.argv[1] === "create" && !call.argv.includes("--help"));
        expect(creates.map((call) => call.argv.includes("--trust-repository"))).toEqual([false, false]);
        expect(old.calls().filter((call) => call.argv.includes("--help"))).toHaveLength(1);
      });
      await withHerdrDouble({ env: herdr.serverEnv, requireTrust: true }, async (strict) => {
        await strict.openWorkspace(repo.root, "parent");
        expectCreated(await HerdrMultiplexer.fromEnvironment({ ...strict.clientEnv }).createWorkspace(request()));
      });
    });

    describe("faults: one sentence and a typed failure each", () => {
      it.each([
        ["invalid_request", "herdr worktree create failed (invalid_request): injected invalid_request."],
        ["workspace_not_found", "Herdr could not find the workspace (injected workspace_not_found); it was closed."],
        ["not_git_worktree", "Herdr refused to create the worktree because {root} is not inside a git work tree."],
        [
          "linked_worktree_source",
          "Herdr refused to create the worktree because {root} is a linked worktree, not the repository's main checkout.",
        ],
        ["worktree_create_failed", "Herdr could not create the worktree at {path}: injected worktree_create_failed."],
        [
          "stale_worktree_operation",
          "Herdr reports a stale worktree operation for {path}; restart Herdr's server, then hand off again.",
        ],
        [
          "server_not_running",
          "The Herdr server is not running: no herdr server is running at {socket}; run `herdr` to start or attach it.",
        ],
      ])("worktree create answering %s", async (code, expected) => {
        asDouble(herdr).setFaults({ "worktree create": { error: code } });
        const wanted = request();
        const failed = expectFailure(await backend().createWorkspace(wanted));
        expect(failed).toEqual({
          ok: false,
          code,
          message: expected
            .replace("{root}", repo.root)
            .replace("{path}", wanted.worktreePath)
            .replace("{socket}", herdr.socketPath),
        });
        expectOneSentence(failed.message);
        expect(existsSync(wanted.worktreePath)).toBe(false);
      });

      it("a hang before anything happened is a timeout, and nothing exists", async () => {
        asDouble(herdr).setFaults({ "worktree create": { hang: true } });
        const wanted = request();
        const failed = expectFailure(
          await backend({ worktreeTimeoutMs: 1_500, lateCompletionMs: 600 }).createWorkspace(wanted),
        );
        expect(failed).toEqual({
          ok: false,
          code: "timeout",
          message: "herdr worktree create did not answer within 1.5 s, and no worktree was created.",
        });
        expect(existsSync(wanted.worktreePath)).toBe(false);
      });

      it.each([
        ["a hang after the work was done", { hang: "after" }, { worktreeTimeoutMs: 2_000, lateCompletionMs: 600 }],
        ["a partial success (worktree_open_failed with the workspace open)", { partial: true }, {}],
        ["unreadable output", { malformed: true }, {}],
      ])("%s is reconciled through worktree list into the created workspace", async (_label, fault, options) => {
        asDouble(herdr).setFaults({ "worktree create": fault });
        asDouble(herdr).clearCalls();
        const wanted = request();
        const { location, worktreePath } = expectCreated(await backend(options).createWorkspace(wanted));
        asDouble(herdr).clearFaults();
        const calls = asDouble(herdr)
          .calls()
          .filter((call) => !call.argv.includes("--help"));
        // `workspace get` proves the listed workspace is the worktree's own, not the repository's (#4293).
        expect(calls.map((call) => call.argv.slice(0, 2).join(" "))).toEqual([
          "worktree create",
          "worktree list",
          "workspace get",
          "pane list",
        ]);
        expect(worktreePath).toBe(realpathSync(wanted.worktreePath));
        const listed = (await herdr.result(["worktree", "list", "--cwd", repo.root])).worktrees as {
          path: string;
          open_workspace_id?: string;
        }[];
        expect(listed.find((entry) => entry.path === wanted.worktreePath)?.open_workspace_id).toBe(
          location.workspaceId,
        );
        expect(location.paneId).toBe(`${location.workspaceId}:p1`);
        expect(await backend().exists(location)).toBe(true);
      });

      it("a checkout without a workspace (worktree_open_failed) fails with the worktree in `partial`", async () => {
        asDouble(herdr).setFaults({
          "worktree create": { error: "worktree_open_failed", message: "pty spawn failed" },
        });
        const wanted = request();
        const failed = expectFailure(await backend().createWorkspace(wanted));
        const worktreePath = realpathSync(wanted.worktreePath);
        expect(failed).toEqual({
          ok: false,
          code: "worktree_open_failed",
          message: `Herdr created the worktree at ${wanted.worktreePath} but could not open a workspace for it (pty spawn failed).`,
          partial: { worktreePath, location: { kind: "herdr", socketPath: herdr.socketPath } },
        });
        expectOneSentence(failed.message);
        expect(repo.run(["rev-parse", "HEAD"], { cwd: worktreePath })).toBe(baseSha);
      });

      it("exit 2 is a usage_error, an in-band error on stdout still decodes, garbage is malformed_output", async () => {
        const mux = backend();
        const location: HerdrLocation = {
          kind: "herdr",
          socketPath: herdr.socketPath,
          workspaceId: parent.workspaceId,
          tabId: parent.tabId,
          paneId: parent.paneId,
        };
        asDouble(herdr).setFaults({ "workspace focus": { usage: "unknown option: --no-such-flag" } });
        const usage = expectFailure(await mux.focus(location));
        expect(usage).toEqual({
          ok: false,
          code: "usage_error",
          message:
            "herdr workspace focus rejected its arguments (unknown option: --no-such-flag); this Herdr version may not support what this package passes.",
        });
        asDouble(herdr).setFaults({ "workspace focus": { error: "workspace_not_found", inband: true } });
        expect(expectFailure(await mux.focus(location)).code).toBe("workspace_not_found");
        asDouble(herdr).setFaults({ "workspace focus": { malformed: true } });
        const malformed = expectFailure(await mux.focus(location));
        expect(malformed.code).toBe("malformed_output");
        expectOneSentence(malformed.message);
        asDouble(herdr).setFaults({ "workspace focus": { hang: true } });
        const hung = expectFailure(await backend({ timeoutMs: 1_000 }).focus(location));
        expect(hung).toEqual({
          ok: false,
          code: "timeout",
          message: "herdr workspace focus did not answer within 1 s.",
        });
        asDouble(herdr).setFaults({ "pane run": { error: "pane_not_found" } });
        const run = expectFailure(await mux.run(location, "true"));
        expect(run.code).toBe("pane_not_found");
        expectOneSentence(run.message);
      });
      it("waitForShell reports a shell that never settles", async () => {
        asDouble(herdr).setFaults({ "pane process-info": { hang: true } });
        const parentLocation: HerdrLocation = { kind: "herdr", socketPath: herdr.socketPath, paneId: parent.paneId };
        const never = expectFailure(
          await backend({ timeoutMs: 500 }).waitForShell(parentLocation, { timeoutMs: 1_500 }),
        );
        expect(never.code).toBe("timeout");
        expect(never.message).toMatch(
          new RegExp(
            `^The shell in Herdr pane ${parent.paneId} did not become ready within 1\\.5 s: herdr pane process-info did not answer within 0\\.5 s\\.$`,
          ),
        );
        // A first poll the deadline cut short (1.5 s of a 5 s call bound) that never answered is
        // still Herdr's timeout: nothing ever said "not ready".
        const unanswered = expectFailure(await backend().waitForShell(parentLocation, { timeoutMs: 1_500 }));
        expect(unanswered.code).toBe("timeout");
        expect(unanswered.message).toMatch(
          new RegExp(
            `^The shell in Herdr pane ${parent.paneId} did not become ready within 1\\.5 s: herdr pane process-info did not answer within 1(?:\\.\\d)? s\\.$`,
          ),
        );
      });
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("detection: --mux first, then HERDR_ENV=1 (even with a leaked $TMUX), then $TMUX; recovery finds the Herdr backend from a location", async () => {
      const git = new GitCli({ env: repo.env });
      const inHerdr = {
        ...herdr.serverEnv,
        HERDR_ENV: "1",
        HERDR_SOCKET_PATH: herdr.socketPath,
        HERDR_BIN_PATH: herdr.binPath,
        TMUX: "/tmp/leaked,1,0",
        TMUX_PANE: "%1",
      };
      // The double's client is a Node script, far slower to start than Herdr's own on a loaded
      // machine: the ping's bound is not what this test is about.
      const chosen = await selectMultiplexer(undefined, { ...inHerdr, PI_HANDOFF_HERDR_PING_TIMEOUT_MS: "30000" }, git);
      expect(chosen.ok ? chosen.mux.kind : chosen.message).toBe("herdr");
      // --mux tmux asks tmux: here the leaked $TMUX names a socket no server listens on.
      const explicit = await selectMultiplexer("tmux", inHerdr, git);
      expect(explicit.ok ? explicit.mux.kind : explicit.message).toBe(
        "No tmux server is running at /tmp/leaked (the socket $TMUX names); start Pi in a pane of a running tmux, then try again.",
      );
      const owner = muxForLocation(
        { kind: "herdr", socketPath: herdr.socketPath, paneId: parent.paneId },
        { env: { PATH: herdr.clientEnv.PATH, HERDR_BIN_PATH: herdr.binPath }, git },
      );
      if (!owner.ok) throw new Error(owner.message);
      expect(owner.mux.kind).toBe("herdr");
      expect(await owner.mux.exists({ kind: "herdr", socketPath: herdr.socketPath, paneId: parent.paneId })).toBe(true);
    });
  });
});

/** The backend as a Pi inside the parent pane would build it, with that pane's own HERDR_* ids. */
function backendInParent(options: { lateCompletionMs?: number; worktreeTimeoutMs?: number } = {}): HerdrMultiplexer {
  return HerdrMultiplexer.fromEnvironment(
    {
      ...herdr.serverEnv,
      HERDR_ENV: "1",
      HERDR_SOCKET_PATH: herdr.socketPath,
      HERDR_BIN_PATH: herdr.binPath,
      HERDR_WORKSPACE_ID: parent.workspaceId,
      HERDR_TAB_ID: parent.tabId,
      HERDR_PANE_ID: parent.paneId,
    },
    options,
  );
}

describe("HerdrMultiplexer as Herdr's source behaves (issue 14, 16.3)", () => {
  it("an id that could be read as an option or split an argument is refused before any call", async () => {
    const mux = backend();
    if (herdr.kind === "double") herdr.clearCalls();
    // Each id is a mangled form of the parent's pane (w1:p1), the pane a lenient reading would reach.
    expect(parent.paneId).toBe("w1:p1");
    const canary = join(repo.dir, "typed-through-a-bad-id");
    for (const paneId of ["--help", "-w1", "w1 :p1", "w1\t", "w1:p1\u0007"]) {
      const refused = expectFailure(
        await mux.run({ kind: "herdr", socketPath: herdr.socketPath, paneId }, `touch ${shellQuote(canary)}`),
      );
      expect(refused).toEqual({
        ok: false,
        code: "invalid_location",
        message: "The Herdr location has no valid pane id.",
      });
    }
    if (herdr.kind === "double") expect(herdr.calls()).toEqual([]);
    // Nothing reached the parent's shell: a line typed after the refusals runs, the canary never did.
    await ranInPane(parent.paneId);
    expect(existsSync(canary)).toBe(false);
  });

  onTheRealHerdrWhenBuilt(() => {
    it("a moved pane is open under its new ids, and the old id still answers through its alias", async () => {
      const mux = backend();
      const { location } = expectCreated(await mux.createWorkspace(request()));
      const moved = (await herdr.result(["pane", "move", location.paneId ?? "", "--new-workspace"])).move_result as {
        pane: { pane_id: string; tab_id: string; workspace_id: string };
      };
      expect(moved.pane.pane_id).not.toBe(location.paneId);
      const state = await mux.workspaceState(location);
      expect(state).toEqual({
        code: "open",
        location: {
          kind: "herdr",
          socketPath: herdr.socketPath,
          workspaceId: moved.pane.workspace_id,
          tabId: moved.pane.tab_id,
          paneId: moved.pane.pane_id,
        },
      });
      expect(await mux.exists(location)).toBe(true);
      if (state.code !== "open" || state.location === undefined) throw new Error("expected the new location");
      expect(await mux.workspaceState(state.location)).toEqual({ code: "open" });
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("never uses this Pi's own workspace, nor the repository's workspace that Herdr names for the worktree (#4293)", async () => {
      const mux = backendInParent();
      const wanted = request();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
      await herdr.result(["workspace", "close", location.workspaceId ?? ""]);
      // The parent's own shell goes into the worktree: Herdr now names the parent's workspace for it.
      const parentPane = parent.paneId;
      await readyShell(mux, { kind: "herdr", socketPath: herdr.socketPath, paneId: parentPane });
      await herdr.herdr(["pane", "run", parentPane, `cd ${shellQuote(worktreePath)}`]);
      await waitFor(
        async () => {
          const opened = await herdr.result(["worktree", "list", "--cwd", repo.root]);
          const entry = (opened.worktrees as { path: string; open_workspace_id?: string }[]).find(
            (candidate) => candidate.path === wanted.worktreePath,
          );
          return entry?.open_workspace_id === parent.workspaceId ? true : undefined;
        },
        { timeoutMs: 10_000, description: "Herdr to name the parent's workspace for the worktree" },
      );
      const before = await settledHerdr();
      if (herdr.kind === "double") herdr.clearCalls();
      const reopened = expectFailure(
        await mux.reopenWorkspace({
          mainCheckout: repo.root,
          worktreePath,
          branch: wanted.branch,
          label: wanted.label,
          previous: location,
        }),
      );
      // Asked to open the worktree, Herdr would take this workspace over: refused before asking.
      expect(reopened).toEqual({
        ok: false,
        code: "workspace_in_worktree",
        message: `Herdr workspace ${parent.workspaceId}, the workspace this Pi runs in, has a shell in the worktree ${worktreePath}, and Herdr would take that workspace over for the worktree if asked to open it, so nothing was opened; close it or cd its panes out of the worktree, then try again.`,
      });
      const other = expectFailure(
        await backend().reopenWorkspace({
          mainCheckout: repo.root,
          worktreePath,
          branch: wanted.branch,
          label: wanted.label,
          previous: location,
        }),
      );
      expect(other.code).toBe("workspace_in_worktree");
      expectOneSentence(other.message);
      const focused = expectFailure(
        await mux.focus({
          kind: "herdr",
          socketPath: herdr.socketPath,
          workspaceId: parent.workspaceId,
          paneId: parentPane,
        }),
      );
      expect(focused.code).toBe("own_workspace");
      const removed = expectFailure(
        await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true }),
      );
      expect(removed.code).toBe("workspace_in_worktree");
      // Nothing was typed into, focused, closed or removed there: every screen, label and the focus
      // are as they were, no workspace came or went, and the worktree is there.
      expect(await settledHerdr()).toEqual(before);
      if (herdr.kind === "double") {
        const touched = herdr
          .calls()
          .filter((call) => ["run", "send-text", "send-keys", "focus", "close", "remove"].includes(call.argv[1] ?? ""));
        expect(touched).toEqual([]);
      }
      expect(existsSync(worktreePath)).toBe(true);
      // Nor taken over: the parent's workspace keeps its label and has no worktree membership.
      const kept = (await herdr.result(["workspace", "get", parent.workspaceId])).workspace as Record<string, unknown>;
      expect(kept).toMatchObject({ workspace_id: parent.workspaceId, label: "parent" });
      expect((kept.worktree as { checkout_path?: string } | undefined)?.checkout_path).not.toBe(worktreePath);
      await herdr.herdr(["pane", "run", parentPane, `cd ${shellQuote(repo.root)}`]);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("an open workspace whose root pane runs a program, not a shell, is not typed into", async () => {
      const mux = backend();
      const wanted = request();
      const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
      await readyShell(mux, location);
      expect(await mux.run(location, "sleep 300")).toEqual({ ok: true });
      const sleepPid = await waitFor(
        async () => {
          const probed = await mux.probe(location);
          return probed.ok ? probed.processes.find((process) => process.name === "sleep")?.pid : undefined;
        },
        { timeoutMs: 10_000, description: "sleep in the pane" },
      );
      const before = await settledHerdr();
      if (herdr.kind === "double") herdr.clearCalls();
      const refused = expectFailure(
        await mux.reopenWorkspace({
          mainCheckout: repo.root,
          worktreePath,
          branch: wanted.branch,
          label: wanted.label,
          previous: location,
        }),
      );
      expect(refused).toEqual({
        ok: false,
        code: "workspace_busy",
        message: `Herdr workspace ${location.workspaceId} for ${worktreePath} is open and its root pane runs sleep, not a shell, so nothing was typed into it.`,
      });
      // As it says: nothing reached the pane (a line typed there would show on its screen, as the
      // terminal echoes it), the same sleep still runs in it, and no workspace came or went.
      expect(await settledHerdr()).toEqual(before);
      const still = await mux.probe(location);
      expect(still.ok && still.processes.filter((process) => process.name === "sleep").map((p) => p.pid)).toEqual([
        sleepPid,
      ]);
      if (herdr.kind === "double")
        expect(herdr.calls().filter((call) => ["run", "send-text", "send-keys"].includes(call.argv[1] ?? ""))).toEqual(
          [],
        );
      await herdr.herdr(["pane", "send-keys", location.paneId ?? "", "C-c"]);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("after a server restart: pane_not_found for a moment is retried, and the Pi Herdr resumes is seen through its agent session", async () => {
      // A `pi` on the panes' PATH stands for the Pi Herdr resumes; it records the arguments it got.
      const bin = join(repo.dir, "restart-bin");
      const argsFile = join(repo.dir, "pi-args");
      mkdirSync(bin, { recursive: true });
      writeFileSync(
        join(bin, "pi"),
        `#!/bin/sh\nprintf '%s\\n' "$@" > ${shellQuote(argsFile)}\nwhile :; do sleep 1; done\n`,
      );
      chmodSync(join(bin, "pi"), 0o755);
      await withOwnHerdr(
        { env: { ...herdr.serverEnv, PATH: `${bin}:${herdr.serverEnv.PATH ?? "/usr/bin:/bin"}` } },
        async (restarting) => {
          await restarting.openWorkspace(repo.root, "parent");
          const mux = HerdrMultiplexer.fromEnvironment({ ...restarting.clientEnv });
          const { location, worktreePath } = expectCreated(await mux.createWorkspace(request()));
          expect(await mux.waitForShell(location, { timeoutMs: 10_000 })).toEqual({ ok: true });
          const sessionFile = join(worktreePath, "child-session.jsonl");
          // Reported while a Pi runs there, as the launcher does once the child confirmed; the server
          // stops with that Pi still running, so Herdr keeps its session to resume.
          await startFakePi(restarting, location.paneId ?? "");
          expect(await mux.reportChildSession(location, sessionFile)).toEqual({ ok: true });
          const reported = await mux.workspaceState(location);
          expect(reported.code === "open" && reported.agent?.sessionFile).toBe(sessionFile);

          // The double is told how long the pane stays without a terminal; the real one waits 750 ms
          // (src/app/mod.rs PENDING_AGENT_RESUME_THEME_WAIT) from its own start, not from here.
          await restarting.restart({ blindMs: 1_800 });
          if (restarting.kind === "double") {
            const blind = await restarting.herdr(["pane", "process-info", "--pane", location.paneId ?? ""]);
            expect(blind.exitCode).toBe(1);
            expect(blind.stderr).toContain('"code":"pane_not_found"');
          }
          // The brief pane_not_found is not final, and a shell is ready only once Herdr had its chance
          // to resume Pi into it: here it did, so nothing may be typed (the shell never settles).
          const waited = expectFailure(await mux.waitForShell(location, { timeoutMs: 4_000 }));
          expect(waited.code).toBe("shell_not_ready");
          // The parent's pane had no agent session: its restarted shell is ready.
          const parentPane = (await restarting.result(["pane", "list"])).panes as {
            pane_id: string;
            workspace_id: string;
          }[];
          const other = parentPane.find((pane) => pane.workspace_id !== location.workspaceId);
          expect(
            await mux.waitForShell(
              { kind: "herdr", socketPath: restarting.socketPath, paneId: other?.pane_id ?? "" },
              { timeoutMs: 10_000 },
            ),
          ).toEqual({ ok: true });
          const probed = await mux.probe(location);
          if (!probed.ok) throw new Error(probed.message);
          const args = await waitFor(() => (existsSync(argsFile) ? readFileSync(argsFile, "utf8") : undefined), {
            timeoutMs: 10_000,
            description: "Herdr's resume to start pi",
          });
          expect(args).toBe(`--session\n${sessionFile}\n`);
          const agent = await waitFor(
            async () => {
              const state = await mux.workspaceState(location);
              return state.code === "open" && state.agent?.status === "idle" ? state.agent : undefined;
            },
            { timeoutMs: 10_000, description: "Herdr to see Pi in the pane" },
          );
          expect(agent.sessionFile).toBe(sessionFile);
          const piPid = (agent.pids ?? []).find((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "pi");
          expect(piPid).toBeDefined();
          expect(readFileSync(`/proc/${piPid}/cmdline`, "utf8").split("\0")).toContain(sessionFile);
        },
      );
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("a create the CLI gave up on completes late in the server: reconciled through worktree list into its workspace", async () => {
      const wanted = request();
      const restore = slowNextCreate(4_000);
      let made: { location: HerdrLocation; worktreePath: string };
      try {
        made = expectCreated(
          await backend({ worktreeTimeoutMs: 2_000, lateCompletionMs: 20_000 }).createWorkspace(wanted),
        );
      } finally {
        restore();
      }
      const { location, worktreePath } = made;
      expect(worktreePath).toBe(realpathSync(wanted.worktreePath));
      const listed = (await herdr.result(["worktree", "list", "--cwd", repo.root])).worktrees as {
        path: string;
        open_workspace_id?: string;
      }[];
      expect(listed.find((entry) => entry.path === wanted.worktreePath)?.open_workspace_id).toBe(location.workspaceId);
      expect(repo.run(["rev-parse", "HEAD"], { cwd: worktreePath })).toBe(baseSha);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("worktree_operation_in_progress means the earlier create still runs: the list is watched until it finishes", async () => {
      const wanted = request();
      // Long enough that the second create reaches the server while the first still runs, on a loaded machine too.
      const restore = slowNextCreate(8_000);
      let made: { location: HerdrLocation; worktreePath: string };
      try {
        // Given up on (as a killed CLI would be) once the server has taken it over, long before it is done.
        const first = expectFailure(
          await backend({ worktreeTimeoutMs: 2_500, lateCompletionMs: 0 }).createWorkspace(wanted),
        );
        expect(first.code).toBe("timeout");
        if (herdr.kind === "double") herdr.clearCalls();
        made = expectCreated(
          await backend({ worktreeTimeoutMs: 20_000, lateCompletionMs: 20_000 }).createWorkspace(wanted),
        );
      } finally {
        restore();
      }
      const { location, worktreePath } = made;
      expect(worktreePath).toBe(realpathSync(wanted.worktreePath));
      if (herdr.kind === "double") {
        const retried = herdr.calls().find((call) => call.argv[1] === "create" && call.argv[2] !== "--help");
        expect(retried?.argv).toContain(wanted.worktreePath);
      }
      // One workspace for the checkout: the late one, recorded; none made twice.
      expect(
        (await workspaceList())
          .filter((ws) => ws.worktree?.checkout_path === wanted.worktreePath)
          .map((ws) => ws.workspace_id),
      ).toEqual([location.workspaceId]);
    });
  });

  onTheRealHerdrWhenBuilt(() => {
    it("this Pi's own workspace is known after its pane was moved (it keeps its launch-time ids): never focused as a child", async () => {
      await withOwnHerdr({ env: herdr.serverEnv }, async (moving) => {
        const own = await moving.openWorkspace(repo.root, "parent");
        const moved = (
          (await moving.result(["pane", "move", own.paneId, "--new-workspace"])).move_result as {
            pane: { workspace_id: string; pane_id: string };
          }
        ).pane;
        // Another workspace has the focus, so a focus of the moved one would show.
        const elsewhere = await moving.openWorkspace(repo.dir, "elsewhere");
        const focusedNow = async () =>
          ((await moving.result(["workspace", "list"])).workspaces as { workspace_id: string; focused: boolean }[])
            .filter((ws) => ws.focused)
            .map((ws) => ws.workspace_id);
        expect(await focusedNow()).toEqual([elsewhere.workspaceId]);
        const mux = HerdrMultiplexer.fromEnvironment({
          ...moving.clientEnv,
          HERDR_WORKSPACE_ID: own.workspaceId,
          HERDR_PANE_ID: own.paneId,
        });
        const refused = expectFailure(
          await mux.focus({
            kind: "herdr",
            socketPath: moving.socketPath,
            workspaceId: moved.workspace_id,
            paneId: moved.pane_id,
          }),
        );
        expect(refused.code).toBe("own_workspace");
        expect(await focusedNow()).toEqual([elsewhere.workspaceId]);
        if (moving.kind === "double") expect(moving.calls().filter((call) => call.argv[1] === "focus")).toEqual([]);
      });
    });
  });

  // Legacy ids, an untrusted repository, injected faults and a server that resumes nothing yet: the double's own.
  forDoubleOnly(() => {
    it("legacy hex ids (Herdr <= 0.6.10): create, wait, type, probe, state, focus and remove all work", async () => {
      await withHerdrDouble({ env: herdr.serverEnv, legacyIds: true }, async (legacy) => {
        await legacy.openWorkspace(repo.root, "parent");
        const mux = HerdrMultiplexer.fromEnvironment({ ...legacy.clientEnv });
        const wanted = request();
        const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
        const workspaceId = location.workspaceId ?? "";
        expect(workspaceId).toMatch(/^w[0-9a-f]{14,}$/);
        expect(location.tabId).toBe(`${workspaceId}:1`);
        expect(location.paneId).toBe(`${workspaceId}-1`);
        expect(await mux.waitForShell(location, { timeoutMs: 10_000 })).toEqual({ ok: true });
        const out = join(repo.dir, "legacy-typed.txt");
        expect(await mux.run(location, `echo legacy > ${shellQuote(out)}`)).toEqual({ ok: true });
        expect(
          await waitFor(() => (existsSync(out) ? readFileSync(out, "utf8") : undefined), {
            timeoutMs: 10_000,
            description: "the typed command",
          }),
        ).toBe("legacy\n");
        const probed = await mux.probe(location);
        expect(
          probed.ok && probed.processes.some((process) => process.name === "bash" && process.cwd === worktreePath),
        ).toBe(true);
        expect(await mux.workspaceState(location)).toEqual({ code: "open" });
        expect(await mux.focus(location)).toEqual({ ok: true });
        expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false })).toEqual({
          ok: true,
        });
        expect(existsSync(worktreePath)).toBe(false);
        expect(await mux.workspaceState(location)).toEqual({ code: "closed" });
      });
    });

    it("--trust-repository goes on worktree list, create, open and remove; an untrusted repository works through all four", async () => {
      await withHerdrDouble({ env: herdr.serverEnv, requireTrust: true }, async (strict) => {
        await strict.openWorkspace(repo.root, "parent");
        const mux = HerdrMultiplexer.fromEnvironment({ ...strict.clientEnv });
        const wanted = request();
        const { location, worktreePath } = expectCreated(await mux.createWorkspace(wanted));
        await strict.result(["workspace", "close", location.workspaceId ?? ""]);
        const reopened = await mux.reopenWorkspace({
          mainCheckout: repo.root,
          worktreePath,
          branch: wanted.branch,
          label: wanted.label,
          previous: location,
        });
        if (!reopened.ok) throw new Error(reopened.message);
        await strict.result([
          "workspace",
          "close",
          reopened.location.kind === "herdr" ? (reopened.location.workspaceId ?? "") : "",
        ]);
        // Closed again: removal lists, reopens (#4317) and removes, each with the flag.
        expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false })).toEqual({
          ok: true,
        });
        expect(existsSync(worktreePath)).toBe(false);
        const worktreeCalls = strict.calls().filter((call) => call.argv[0] === "worktree" && call.argv[2] !== "--help");
        expect(worktreeCalls.map((call) => call.argv[1])).toEqual(["create", "open", "list", "open", "remove"]);
        expect(worktreeCalls.every((call) => call.argv.includes("--trust-repository"))).toBe(true);
        // Without the flag the double answers as an untrusted repository does: git's own text.
        const bare = await strict.herdr(["worktree", "list", "--cwd", repo.root]);
        expect(bare.exitCode).toBe(1);
        expect(bare.stderr).toContain('"code":"worktree_list_failed"');
        expect(bare.stderr).toContain("detected dubious ownership in repository");
      });
    });

    it.each([
      [
        "internal_error (slowly)",
        { error: "internal_error", message: "process table unavailable", delayMs: 400 },
        "herdr pane process-info failed (internal_error): process table unavailable.",
      ],
      [
        "garbage on stdout (slowly)",
        { garbage: "<html>502 Bad Gateway</html>\n", delayMs: 400 },
        'herdr pane process-info printed output this package cannot read: output is not JSON: "<html>502 Bad Gateway</html>".',
      ],
    ])(
      "waitForShell with process-info answering %s names that answer, never a last poll's own timeout",
      async (_label, fault, cause) => {
        asDouble(herdr).setFaults({ "pane process-info": fault });
        const location: HerdrLocation = { kind: "herdr", socketPath: herdr.socketPath, paneId: parent.paneId };
        const failed = expectFailure(await backend().waitForShell(location, { timeoutMs: 1_200 }));
        expect(failed.message).toBe(
          `The shell in Herdr pane ${parent.paneId} did not become ready within 1.2 s: ${cause}`,
        );
        expectOneSentence(failed.message);
      },
    );

    it.each([
      ["hangs", { hang: true }, /did not answer within 1 s\.$/],
      ["fails", { error: "internal_error", message: "boom" }, /failed \(internal_error\): boom\.$/],
      [
        "answers garbage",
        { garbage: "not json\n" },
        /printed output this package cannot read: output is not JSON: "not json"\.$/,
      ],
    ])("every Herdr call that %s says so in one sentence, within its bound", async (_label, fault, cause) => {
      const wanted = request();
      const created = expectCreated(await backend().createWorkspace(wanted));
      // A short bound only where the bound is what is tested: a loaded machine can take a second to start the double.
      const boundMs = "hang" in fault ? 1_000 : 10_000;
      const mux = backend({ timeoutMs: boundMs, worktreeTimeoutMs: boundMs });
      const location: HerdrLocation = {
        kind: "herdr",
        socketPath: herdr.socketPath,
        workspaceId: parent.workspaceId,
        tabId: parent.tabId,
        paneId: parent.paneId,
      };
      asDouble(herdr).setFaults({ "*": fault });
      const failures = [
        await mux.probe(location),
        await mux.focus(location),
        await mux.reopenWorkspace({
          mainCheckout: repo.root,
          worktreePath: created.worktreePath,
          branch: wanted.branch,
          label: wanted.label,
          previous: created.location,
        }),
        await mux.removeWorktree(created.location, {
          mainCheckout: repo.root,
          worktreePath: created.worktreePath,
          force: false,
        }),
        await mux.ping(),
      ].map(expectFailure);
      // Fire-and-forget calls print nothing on success, so garbage on stdout is not their failure.
      if (!("garbage" in fault))
        failures.push(
          expectFailure(await mux.run(location, "true")),
          expectFailure(await mux.reportChildSession(location, "/s/x.jsonl")),
        );
      for (const failure of failures) {
        expectOneSentence(failure.message);
        expect(failure.message).toMatch(cause);
      }
      const state = await mux.workspaceState(location);
      expect(state.code).toBe("unknown");
      if (state.code === "unknown") expect(state.message).toMatch(cause);
    });

    it("a pane Herdr has not restarted yet is reported as such, not as closed", async () => {
      await withHerdrDouble({ env: herdr.serverEnv }, async (waiting) => {
        await waiting.openWorkspace(repo.root, "parent");
        const mux = HerdrMultiplexer.fromEnvironment({ ...waiting.clientEnv });
        const { location } = expectCreated(await mux.createWorkspace(request()));
        await startFakePi(waiting, location.paneId ?? "");
        expect(await mux.reportChildSession(location, join(repo.dir, "waiting.jsonl"))).toEqual({ ok: true });
        // The server stops with that Pi running; its resume is held back past the wait (the double's
        // say: a real 0.8.2 server resumes 750 ms after it started, src/server/headless.rs tick).
        await waiting.restart({ blindMs: 60_000 });
        const failed = expectFailure(await mux.waitForShell(location, { timeoutMs: 10_000 }));
        expect(failed).toEqual({
          ok: false,
          code: "pane_not_started",
          message: `Herdr pane ${location.paneId} exists but its terminal is not running yet (after a restart Herdr starts it when it resumes the agent there, once a Herdr client is attached); try again then.`,
        });
        expect(expectFailure(await mux.probe(location)).code).toBe("pane_not_started");
        expect(await mux.workspaceState(location)).toEqual({
          code: "open",
          agent: { status: "unknown", sessionFile: join(repo.dir, "waiting.jsonl") },
        });
      });
    });
  });
});

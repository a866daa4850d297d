import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import type { GitPort } from "../../src/git/types.ts";
import type { TmuxLocation } from "../../src/manifest/locations.ts";
import { TmuxMultiplexer } from "../../src/mux/tmux/tmux.ts";
import type { CreatedWorkspace, CreateWorkspaceRequest, MuxResult } from "../../src/mux/types.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";

type WorktreeAdder = Pick<GitPort, "addWorktree">;

let server: PrivateTmux;
let dir: string;
let repo: string;
let baseSha: string;
let gitEnv: Record<string, string>;

beforeEach(async () => {
  server = await startPrivateTmux();
  dir = await realpath(await mkdtemp(join(tmpdir(), "phw-tmux-it-")));
  repo = join(dir, "repo");
  await mkdir(join(dir, "home"));
  gitEnv = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(dir, "home"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "Test",
    GIT_AUTHOR_EMAIL: "test@example.com",
    GIT_COMMITTER_NAME: "Test",
    GIT_COMMITTER_EMAIL: "test@example.com",
  };
  await git(["init", "-q", "-b", "main", repo]);
  await writeFile(join(repo, "README.md"), "hello\n");
  await git(["-C", repo, "add", "README.md"]);
  await git(["-C", repo, "commit", "-q", "-m", "initial"]);
  baseSha = (await git(["-C", repo, "rev-parse", "HEAD"])).trim();
});

afterEach(async () => {
  await server.kill();
  await rm(dir, { recursive: true, force: true });
});

async function git(args: string[]): Promise<string> {
  return (await execa("git", args, { env: gitEnv, extendEnv: false, timeout: 10_000 })).stdout;
}

const realGit: WorktreeAdder = {
  async addWorktree(mainCheckout, { path, branch, sha }) {
    await git(["-C", mainCheckout, "worktree", "add", "-q", "-b", branch, "--", path, sha]);
  },
};

function request(branch = "feature-x"): CreateWorkspaceRequest {
  return { mainCheckout: repo, branch, baseSha, worktreePath: join(dir, `wt-${branch}`), label: `handoff-${branch}` };
}

function backend(git: WorktreeAdder = realGit): TmuxMultiplexer {
  return new TmuxMultiplexer({ socketPath: server.socketPath, targetSession: server.sessionId, git });
}

function expectCreated(result: MuxResult<CreatedWorkspace>): TmuxLocation {
  if (!result.ok) throw new Error(`createWorkspace failed: ${result.code}: ${result.message}`);
  if (result.location.kind !== "tmux") throw new Error("expected a tmux location");
  return result.location;
}

async function windowsOf(target: string): Promise<Map<string, { active: string; name: string }>> {
  const out = await server.tmux(["list-windows", "-t", target, "-F", "#{window_id} #{window_active} #{window_name}"]);
  return new Map(
    out.split("\n").map((line) => {
      const [id = "", active = "", name = ""] = line.split(" ");
      return [id, { active, name }];
    }),
  );
}

async function paneFormat(paneId: string, format: string): Promise<string> {
  return (await server.tmux(["display-message", "-p", "-t", paneId, format])).trim();
}

/** Shell single-quoting, so the test states the exact bytes it expects. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

describe("TmuxMultiplexer on a private tmux server", () => {
  it("creates the worktree and an unfocused window in it, then runs, probes, focuses and detects the pane", async () => {
    const originalWindow = (
      await server.tmux(["display-message", "-p", "-t", server.firstPaneId, "#{window_id}"])
    ).trim();
    const mux = backend();
    const req = request();

    const location = expectCreated(await mux.createWorkspace(req));
    expect(location).toEqual({
      kind: "tmux",
      socketPath: server.socketPath,
      sessionId: server.sessionId,
      windowId: expect.stringMatching(/^@\d+$/),
      paneId: expect.stringMatching(/^%\d+$/),
      server: expect.stringMatching(/^\d+:\d+$/),
    });
    const paneId = location.paneId ?? "";
    const windowId = location.windowId ?? "";

    // The worktree exists on the new branch at the base commit.
    expect((await git(["-C", req.worktreePath, "rev-parse", "--abbrev-ref", "HEAD"])).trim()).toBe("feature-x");
    expect((await git(["-C", req.worktreePath, "rev-parse", "HEAD"])).trim()).toBe(baseSha);

    // Focus did not move: the original window is still the active one.
    const windows = await windowsOf(server.sessionId);
    expect(windows.size).toBe(2);
    expect(windows.get(originalWindow)?.active).toBe("1");
    expect(windows.get(windowId)).toEqual({ active: "0", name: "handoff-feature-x" });
    expect(await paneFormat(paneId, "#{pane_current_path}")).toBe(req.worktreePath);

    expect(await mux.waitForShell(location, { timeoutMs: 5_000 })).toEqual({ ok: true });
    expect(await mux.exists(location)).toBe(true);
    // The same pane id on another server (one started again on this socket) is not this window.
    expect(await mux.workspaceState({ ...location, server: `${location.server}1` })).toEqual({ code: "closed" });
    // A location recorded before servers were (an older manifest) is judged by its pane alone.
    const { server: _recorded, ...older } = location;
    expect(await mux.workspaceState(older)).toEqual({ code: "open" });

    // `run` types the line literally: every shell metacharacter reaches printf inside quotes.
    const canaryDir = join(dir, "canaries");
    await mkdir(canaryDir);
    const payload =
      `two  spaces "double" 'single' $(touch ${canaryDir}/subst) \`touch ${canaryDir}/backtick\`; ` +
      `touch ${canaryDir}/semicolon $HOME \\n end`;
    const outFile = join(dir, "out.txt");
    const doneFile = join(dir, "done");
    const runResult = await mux.run(
      location,
      `printf '%s' ${shellQuote(payload)} > ${shellQuote(outFile)}; touch ${shellQuote(doneFile)}`,
    );
    expect(runResult).toEqual({ ok: true });
    await waitFor(() => existsSync(doneFile), { description: "the typed command to finish" });
    expect(await readFile(outFile, "utf8")).toBe(payload);
    expect(await readdir(canaryDir)).toEqual([]);

    // probe sees a process started in the pane, with its cwd and handoff marker.
    await mux.waitForShell(location, { timeoutMs: 5_000 });
    expect(await mux.run(location, "env PI_HANDOFF_ID=abc sleep 300")).toEqual({ ok: true });
    const sleeper = await waitFor(
      async () => {
        const probed = await mux.probe(location);
        if (!probed.ok) throw new Error(probed.message);
        return probed.processes.find((process) => process.name === "sleep");
      },
      { description: "sleep to appear under the pane" },
    );
    expect(sleeper).toEqual({ pid: expect.any(Number), name: "sleep", cwd: req.worktreePath, handoffId: "abc" });
    const panePid = Number(await paneFormat(paneId, "#{pane_pid}"));
    const probed = await mux.probe(location);
    expect(probed.ok && probed.processes.map((process) => process.pid)).not.toContain(panePid);
    process.kill(sleeper.pid, "SIGTERM");

    // focus makes the new window the active one.
    expect(await mux.focus(location)).toEqual({ ok: true });
    const afterFocus = await windowsOf(server.sessionId);
    expect(afterFocus.get(windowId)?.active).toBe("1");
    expect(afterFocus.get(originalWindow)?.active).toBe("0");

    // Once the window is gone, the pane is reported missing everywhere.
    await server.tmux(["kill-window", "-t", windowId]);
    expect(await mux.exists(location)).toBe(false);
    expect(await mux.waitForShell(location, { timeoutMs: 1_000 })).toMatchObject({ ok: false, code: "pane_not_found" });
    expect(await mux.run(location, "true")).toMatchObject({ ok: false, code: "pane_not_found" });
    expect(await mux.probe(location)).toMatchObject({ ok: false, code: "pane_not_found" });
    expect(await mux.focus(location)).toMatchObject({ ok: false, code: "pane_not_found" });
  });

  it("refuses a command line with a control character and types nothing", async () => {
    const location = expectCreated(await backend().createWorkspace(request()));
    expect(await backend().waitForShell(location, { timeoutMs: 5_000 })).toEqual({ ok: true });
    const marker = join(dir, "marker");
    const result = await backend().run(location, `true\ntouch ${marker}`);
    expect(result).toMatchObject({ ok: false, code: "invalid_command_line" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(marker)).toBe(false);
  });

  /**
   * A git that claims the directory, then checks out only once the window's command has shown what
   * it saw there (or fails instead): the window provably opened before the checkout.
   */
  function claimingGit(seen: string, fail?: string): WorktreeAdder {
    return {
      async addWorktree(mainCheckout, options) {
        await mkdir(options.path);
        options.onClaimed?.();
        await waitFor(async () => ((await readFile(seen, "utf8").catch(() => "")).endsWith("\n") ? true : undefined), {
          description: "the window's command to run",
        });
        if (fail !== undefined) {
          await rm(options.path, { recursive: true });
          throw new Error(fail);
        }
        await realGit.addWorktree(mainCheckout, options);
      },
    };
  }
  // Then the shell tmux appends (as `$0 $@`), as the launcher goes on as it: the window stays.
  const showCwd = (seen: string) => [
    "sh",
    "-c",
    `{ ls -A; pwd; } > '${seen}.tmp' && mv '${seen}.tmp' '${seen}'; exec "$0" "$@"`,
  ];

  it("opens the window once git claimed the directory, so its command runs while git checks out", async () => {
    const seen = join(dir, "seen");
    const req = { ...request(), command: showCwd(seen) };
    const location = expectCreated(await backend(claimingGit(seen)).createWorkspace(req));
    // Empty when the command ran, and it ran there; the checkout came after.
    expect(await readFile(seen, "utf8")).toBe(`${req.worktreePath}\n`);
    expect(existsSync(join(req.worktreePath, "README.md"))).toBe(true);
    expect((await windowsOf(server.sessionId)).has(location.windowId ?? "")).toBe(true);
  });

  it("reports worktree_create_failed with the window as partial when git fails after claiming the directory", async () => {
    const seen = join(dir, "seen");
    const req = { ...request(), command: showCwd(seen) };
    const result = await backend(claimingGit(seen, "fatal: disk full")).createWorkspace(req);
    if (result.ok) throw new Error("expected the create to fail");
    expect(result).toMatchObject({
      code: "worktree_create_failed",
      message: `Could not create the worktree at ${req.worktreePath}: fatal: disk full.`,
      partial: { location: { kind: "tmux", socketPath: server.socketPath }, commandStarted: true },
    });
    const windowId = result.partial?.location?.kind === "tmux" ? result.partial.location.windowId : undefined;
    expect((await windowsOf(server.sessionId)).has(windowId ?? "")).toBe(true);
    expect(result.partial?.worktreePath).toBeUndefined();
  });

  it("has a git that fails at once keep its claimed directory until the window is open in it, so removal can close it", async () => {
    const git = new GitCli({ env: gitEnv });
    // A commit that does not exist: git refuses within milliseconds, before tmux has started the pane.
    const req = {
      ...request(),
      baseSha: "0123456789abcdef0123456789abcdef01234567",
      command: ["sh", "-c", 'exec "$0" "$@"'],
    };
    const mux = backend(git);
    const result = await mux.createWorkspace(req);
    if (result.ok) throw new Error("expected the create to fail");
    expect(result.code).toBe("worktree_create_failed");
    const location = result.partial?.location;
    if (location?.kind !== "tmux") throw new Error(`expected the window as partial: ${JSON.stringify(result)}`);
    // The pane started in the claimed directory (gone since), not in tmux's own directory.
    expect(await paneFormat(location.paneId ?? "", "#{pane_current_path}")).toMatch(
      new RegExp(`^${req.worktreePath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}( \\(deleted\\))?\n?$`),
    );
    expect(existsSync(req.worktreePath)).toBe(false);
    expect(await mux.closeWorkspace(location, req.worktreePath)).toEqual({ ok: true, closed: true });
    expect((await windowsOf(server.sessionId)).size).toBe(1);
  });

  it("reports worktree_create_failed and opens no window when git fails before claiming the directory", async () => {
    const failingGit: WorktreeAdder = {
      async addWorktree() {
        throw new Error("fatal: a branch named 'feature-x' already exists");
      },
    };
    const result = await backend(failingGit).createWorkspace(request());
    expect(result).toEqual({
      ok: false,
      code: "worktree_create_failed",
      message: `Could not create the worktree at ${request().worktreePath}: fatal: a branch named 'feature-x' already exists.`,
    });
    expect((await windowsOf(server.sessionId)).size).toBe(1);
  });

  it("reports window_create_failed with the worktree as partial when the window cannot be opened", async () => {
    // A second session keeps the server alive when the target session disappears mid-way.
    await server.tmux(["new-session", "-d", "-s", "other"]);
    const gitThenSessionGone: WorktreeAdder = {
      async addWorktree(mainCheckout, options) {
        await realGit.addWorktree(mainCheckout, options);
        await server.tmux(["kill-session", "-t", server.sessionId]);
      },
    };
    const req = request();
    const result = await backend(gitThenSessionGone).createWorkspace(req);
    expect(result).toMatchObject({
      ok: false,
      code: "window_create_failed",
      partial: { worktreePath: req.worktreePath },
    });
    expect(existsSync(join(req.worktreePath, "README.md"))).toBe(true);
  });

  it("opens the window in the session of the parent's pane when built from $TMUX/$TMUX_PANE", async () => {
    const otherPane = (await server.tmux(["new-session", "-d", "-s", "other", "-P", "-F", "#{pane_id}"])).trim();
    const otherSession = (await paneFormat(otherPane, "#{session_id}")).trim();
    expect(TmuxMultiplexer.fromEnvironment({}, realGit)).toBeUndefined();
    const mux = TmuxMultiplexer.fromEnvironment(
      { TMUX: `${server.socketPath},12345,0`, TMUX_PANE: otherPane },
      realGit,
    );
    expect(mux?.socketPath).toBe(server.socketPath);
    const location = expectCreated(await (mux as TmuxMultiplexer).createWorkspace(request()));
    expect(location.sessionId).toBe(otherSession);
    expect((await windowsOf(otherSession)).size).toBe(2);
    expect((await windowsOf(server.sessionId)).size).toBe(1);
  });

  it("runs a window's command followed by the shell tmux would start there: default-command through default-shell, else a login default-shell", async () => {
    // Asked from the parent's pane (session and shell in one call), as a handoff asks it.
    const fromPane = TmuxMultiplexer.fromEnvironment(
      { TMUX: `${server.socketPath},12345,0`, TMUX_PANE: server.firstPaneId },
      realGit,
    ) as TmuxMultiplexer;
    await server.tmux(["set", "-g", "default-shell", "/bin/sh"]);
    await server.tmux(["set", "-g", "default-command", "exec /bin/sh\necho two-lines"]);
    const withCommand = expectCreated(
      await fromPane.createWorkspace({ ...request("shell-a"), command: ["/bin/sh", "-c", "sleep 30", "launcher"] }),
    );
    expect(withCommand.sessionId).toBe(server.sessionId);
    // tmux shows the argv with words holding a space in double quotes and a newline as \n.
    expect(await paneFormat(withCommand.paneId ?? "", "#{pane_start_command}")).toBe(
      '/bin/sh -c "sleep 30" launcher /bin/sh -c "exec /bin/sh\\necho two-lines"',
    );
    await server.tmux(["set", "-gu", "default-command"]);
    const loginShell = expectCreated(
      await fromPane.createWorkspace({ ...request("shell-b"), command: ["/bin/sh", "-c", "sleep 30", "launcher"] }),
    );
    expect(await paneFormat(loginShell.paneId ?? "", "#{pane_start_command}")).toBe(
      '/bin/sh -c "sleep 30" launcher /bin/sh -l',
    );
    // An unknown pane names itself, and nothing is created.
    const gone = TmuxMultiplexer.fromEnvironment({ TMUX: `${server.socketPath},12345,0`, TMUX_PANE: "%999" }, realGit);
    expect(await (gone as TmuxMultiplexer).createWorkspace({ ...request("shell-c"), command: ["true"] })).toMatchObject(
      {
        ok: false,
      },
    );
    expect(existsSync(request("shell-c").worktreePath)).toBe(false);
  });

  it("reports server_not_running without creating anything when no server listens on the socket", async () => {
    let gitCalled = false;
    const mux = new TmuxMultiplexer({
      socketPath: join(dir, "no-such.sock"),
      targetSession: "$0",
      git: {
        async addWorktree() {
          gitCalled = true;
        },
      },
    });
    expect(await mux.createWorkspace(request())).toEqual({
      ok: false,
      code: "server_not_running",
      message: `No tmux server is running on ${join(dir, "no-such.sock")}.`,
    });
    expect(gitCalled).toBe(false);
    const location: TmuxLocation = {
      kind: "tmux",
      socketPath: join(dir, "no-such.sock"),
      paneId: "%0",
      windowId: "@0",
    };
    expect(await mux.exists(location)).toBe(false);
    expect(await mux.run(location, "true")).toMatchObject({ ok: false, code: "server_not_running" });
    expect(await mux.focus(location)).toMatchObject({ ok: false, code: "server_not_running" });
    expect(await mux.probe(location)).toMatchObject({ ok: false, code: "server_not_running" });

    // A socket file left behind by a server that has exited counts as no server too.
    const stale = new TmuxMultiplexer({ socketPath: server.socketPath, targetSession: server.sessionId, git: realGit });
    await server.tmux(["kill-server"]);
    // kill-server returns before the server has exited; wait until nothing answers on the socket.
    await waitFor(
      () =>
        server.tmux(["list-sessions"]).then(
          () => false,
          () => true,
        ),
      {
        description: "the killed server to stop answering",
      },
    );
    expect(await stale.createWorkspace(request())).toMatchObject({ ok: false, code: "server_not_running" });
  });

  it("reports timeout when tmux does not answer in time", async () => {
    const slowTmux = join(dir, "slow-tmux");
    await writeFile(slowTmux, "#!/bin/sh\nexec sleep 5\n", { mode: 0o755 });
    const mux = new TmuxMultiplexer({
      socketPath: server.socketPath,
      targetSession: server.sessionId,
      git: realGit,
      timeoutMs: 200,
      tmuxBin: slowTmux,
    });
    const started = Date.now();
    expect(await mux.createWorkspace(request())).toMatchObject({ ok: false, code: "timeout" });
    // Stopped at its deadline, not after the stand-in's 5 s.
    expect(Date.now() - started).toBeLessThan(4_500);
  });
});

/**
 * Six ways the real Herdr 0.8.2 could hurt a user of the Herdr backend, each shown on the real Herdr
 * (the herdr-real project) and on the double that now follows it, with the backend's answer:
 * 1. `worktree open` takes over a workspace sitting in the checkout: refused before asking;
 * 2. ids are minted again after a restart: a recorded id naming a stranger's workspace is "closed";
 * 3. a session report without a sequence number is dropped: the child's session is kept;
 * 4. a forced `worktree remove` stops processes before git refuses a locked checkout: refused first;
 * 5. 0.8.2 focuses the repository's workspace after a background removal: the focus is put back;
 * 6. git's refusal in another language is not recognised by Herdr: the backend asks git itself.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import type { HerdrLocation } from "../../src/manifest/locations.ts";
import { HerdrMultiplexer } from "../../src/mux/herdr/herdr.ts";
import type { CreatedWorkspace, CreateWorkspaceRequest, MuxResult } from "../../src/mux/types.ts";
import { createTempRepo, germanGitServerEnv, type TempRepo } from "../support/git-repo.ts";
import { HERDR_TARGET, startFakePi, startHerdr, startHerdrDouble, type HerdrServer } from "../support/herdr.ts";
import { waitFor } from "../support/tmux.ts";

let repo: TempRepo;
let herdr: HerdrServer;
let parent: { workspaceId: string; tabId: string; paneId: string };
let baseSha: string;
let counter = 0;

beforeAll(async () => {
  repo = createTempRepo({ extraCommits: 1, prefix: "phw-herdr-scn-" });
  baseSha = repo.run(["rev-parse", "HEAD"]);
  herdr = await startHerdr({
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", GIT_CONFIG_NOSYSTEM: "1" },
  });
  parent = await herdr.openWorkspace(repo.root, "parent");
});

afterAll(async () => {
  await herdr?.kill();
  repo?.cleanup();
});

/** The backend as the Pi in the parent's pane builds it, with the git port recovery gives it. */
function backend(server: HerdrServer = herdr, paneId = parent.paneId): HerdrMultiplexer {
  return HerdrMultiplexer.fromEnvironment(
    {
      ...server.serverEnv,
      HERDR_ENV: "1",
      HERDR_SOCKET_PATH: server.socketPath,
      HERDR_BIN_PATH: server.binPath,
      HERDR_PANE_ID: paneId,
    },
    { git: new GitCli() },
  );
}

function request(): CreateWorkspaceRequest {
  const branch = `scenario/${++counter}`;
  return {
    mainCheckout: repo.root,
    branch,
    baseSha,
    worktreePath: join(repo.dir, "worktrees", `scenario-${counter}`),
    label: `scenario-${counter}`,
  };
}

function created(result: MuxResult<CreatedWorkspace>): { location: HerdrLocation; worktreePath: string } {
  if (!result.ok) throw new Error(`createWorkspace failed: ${result.code}: ${result.message}`);
  if (result.location.kind !== "herdr") throw new Error("expected a Herdr location");
  return { location: result.location, worktreePath: result.worktreePath };
}

async function workspace(
  server: HerdrServer,
  id: string,
): Promise<{ label: string; worktree?: { checkout_path: string } }> {
  return (await server.result(["workspace", "get", id])).workspace as {
    label: string;
    worktree?: { checkout_path: string };
  };
}

async function focusedWorkspace(server: HerdrServer): Promise<string | undefined> {
  const listed = (await server.result(["workspace", "list"])).workspaces as {
    workspace_id: string;
    focused: boolean;
  }[];
  return listed.find((entry) => entry.focused)?.workspace_id;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `sleep` in the pane and returns its pid: a stand-in for whatever the user runs there. */
async function runSleep(server: HerdrServer, paneId: string, seconds: number): Promise<number> {
  await server.herdr(["pane", "run", paneId, `sleep ${seconds}`]);
  return waitFor(
    async () => {
      const info = (await server.result(["pane", "process-info", "--pane", paneId])).process_info as {
        foreground_processes: { pid: number; name: string }[];
      };
      return info.foreground_processes.find((process) => process.name === "sleep")?.pid;
    },
    { timeoutMs: 10_000, description: `sleep ${seconds} in ${paneId}` },
  );
}

describe(`the Herdr backend where Herdr 0.8.2 could hurt a user (${HERDR_TARGET})`, () => {
  it("1. a workspace sitting in the checkout is never taken over: reopen and remove refuse before asking Herdr", async () => {
    const mux = backend();
    const wanted = request();
    const { location, worktreePath } = created(await mux.createWorkspace(wanted));
    await herdr.result(["workspace", "close", location.workspaceId ?? ""]);
    // The user opens a shell of their own in a subdirectory of the worktree.
    mkdirSync(join(worktreePath, "src"), { recursive: true });
    const users = (
      await herdr.result([
        "workspace",
        "create",
        "--cwd",
        join(worktreePath, "src"),
        "--label",
        "users-shell",
        "--no-focus",
      ])
    ).root_pane as { pane_id: string; workspace_id: string };
    const sleeper = await runSleep(herdr, users.pane_id, 321);

    const reopened = await mux.reopenWorkspace({
      mainCheckout: repo.root,
      worktreePath,
      branch: wanted.branch,
      label: wanted.label,
      previous: location,
    });
    expect(reopened).toEqual({
      ok: false,
      code: "workspace_in_worktree",
      // What holds the pane's foreground is named: the user's sleep, not "a shell".
      message: `Herdr workspace ${users.workspace_id}, workspace "users-shell", has sleep running in the worktree ${worktreePath}, and Herdr would take that workspace over for the worktree if asked to open it, so nothing was opened; quit it, close it or cd its panes out of the worktree, then try again.`,
    });
    const removed = await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true });
    expect(removed).toMatchObject({ ok: false, code: "workspace_in_worktree" });
    // The user's workspace is as it was: its label, no worktree membership, its process alive.
    const after = await workspace(herdr, users.workspace_id);
    expect(after.label).toBe("users-shell");
    expect(after.worktree).toBeUndefined();
    expect(alive(sleeper)).toBe(true);
    expect(existsSync(worktreePath)).toBe(true);
    await herdr.result(["workspace", "close", users.workspace_id]);
  });

  it("2. after a restart a recorded id that names a stranger's workspace is closed, not the handoff's", async () => {
    const own = await startHerdr({ env: herdr.serverEnv });
    try {
      const ownParent = await own.openWorkspace(repo.root, "parent");
      const mux = backend(own, ownParent.paneId);
      const { location, worktreePath } = created(await mux.createWorkspace(request()));
      const owner = { worktreePath };
      expect((await mux.workspaceState(location, owner)).code).toBe("open");
      await own.result(["workspace", "close", location.workspaceId ?? ""]);
      await own.restart();
      // A stranger's workspace, made after the restart, gets the handoff's old id.
      const stranger = (
        await own.result(["workspace", "create", "--cwd", repo.dir, "--label", "stranger", "--no-focus"])
      ).root_pane as { pane_id: string; workspace_id: string };
      expect(stranger.workspace_id).toBe(location.workspaceId);
      expect(stranger.pane_id).toBe(location.paneId);
      expect(await mux.workspaceState(location, owner)).toEqual({ code: "closed" });
      expect(await mux.workspaceState({ ...location, paneId: undefined } as HerdrLocation, owner)).toEqual({
        code: "closed",
      });
    } finally {
      await own.kill();
    }
  });

  it("3. the child's session reaches Herdr: reported with a sequence number and its start, it is kept for the restore", async () => {
    const mux = backend();
    const { location, worktreePath } = created(await mux.createWorkspace(request()));
    const sessionFile = join(worktreePath, "child.jsonl");
    await startFakePi(herdr, location.paneId ?? "");
    expect(await mux.reportChildSession(location, sessionFile)).toEqual({ ok: true });
    const pane = (await herdr.result(["pane", "get", location.paneId ?? ""])).pane as { agent_session?: unknown };
    expect(pane.agent_session).toEqual({ source: "herdr:pi", agent: "pi", kind: "path", value: sessionFile });
    // A second report (a relaunch in the same pane) replaces it too.
    const next = join(worktreePath, "child-2.jsonl");
    expect(await mux.reportChildSession(location, next)).toEqual({ ok: true });
    const again = (await herdr.result(["pane", "get", location.paneId ?? ""])).pane as {
      agent_session?: { value: string };
    };
    expect(again.agent_session?.value).toBe(next);
    await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true });
  });

  it("4. a locked worktree is refused before a forced removal could stop what runs in it", async () => {
    const mux = backend();
    const { location, worktreePath } = created(await mux.createWorkspace(request()));
    const child = await runSleep(herdr, location.paneId ?? "", 654);
    repo.run(["worktree", "lock", worktreePath]);
    const removed = await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true });
    expect(removed).toEqual({
      ok: false,
      code: "worktree_locked",
      message: `The worktree at ${worktreePath} is locked (git worktree lock), so it was not removed and nothing running in it was stopped; unlock it with git worktree unlock ${worktreePath} first.`,
    });
    expect(alive(child)).toBe(true);
    expect((await workspace(herdr, location.workspaceId ?? "")).worktree?.checkout_path).toBe(worktreePath);
    repo.run(["worktree", "unlock", worktreePath]);
    expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: true })).toEqual({
      ok: true,
    });
    expect(existsSync(worktreePath)).toBe(false);
  });

  it("5. a removal leaves the focus where it was, on Herdr 0.8.2 too", async () => {
    // The real Herdr here is 0.8.2; the double is told to be.
    const old = HERDR_TARGET === "real" ? herdr : await startHerdrDouble({ env: herdr.serverEnv, version: "0.8.2" });
    try {
      const oldParent = HERDR_TARGET === "real" ? parent : await old.openWorkspace(repo.root, "parent");
      const mux = backend(old, oldParent.paneId);
      const { location, worktreePath } = created(await mux.createWorkspace(request()));
      const elsewhere = await old.openWorkspace(repo.dir, "elsewhere");
      expect(await focusedWorkspace(old)).toBe(elsewhere.workspaceId);
      expect(await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false })).toEqual({
        ok: true,
      });
      expect(existsSync(worktreePath)).toBe(false);
      expect(await focusedWorkspace(old)).toBe(elsewhere.workspaceId);
      await old.result(["workspace", "close", elsewhere.workspaceId]);
    } finally {
      if (old !== herdr) await old.kill();
    }
  });

  it("6. a dirty worktree is refused in the user's words whatever language git speaks", async () => {
    const german = await startHerdr({ env: { ...herdr.serverEnv, ...(await germanGitServerEnv(repo.dir)) } });
    try {
      const germanParent = await german.openWorkspace(repo.root, "parent");
      const mux = backend(german, germanParent.paneId);
      const { location, worktreePath } = created(await mux.createWorkspace(request()));
      writeFileSync(join(worktreePath, "notes.txt"), "not saved anywhere else\n");
      const removed = await mux.removeWorktree(location, { mainCheckout: repo.root, worktreePath, force: false });
      expect(removed).toEqual({
        ok: false,
        code: "dirty_worktree",
        message: `The worktree at ${worktreePath} has uncommitted or untracked changes, so it was not removed; commit or discard them, or remove it with force.`,
      });
      expect(readFileSync(join(worktreePath, "notes.txt"), "utf8")).toBe("not saved anywhere else\n");
      expect((await workspace(german, location.workspaceId ?? "")).worktree?.checkout_path).toBe(worktreePath);
    } finally {
      await german.kill();
    }
  });
});

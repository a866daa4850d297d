/**
 * Herdr's CLI as the backend relies on it, asserted with the same code on the real Herdr 0.8.2 (the
 * herdr-real vitest project) and on the test double: every success is one compact JSON line on
 * stdout with keys sorted and no null, decoded by the very zod schemas production uses; errors are
 * envelopes on stderr with exit 1; usage errors are plain text with exit 2; fire-and-forget commands
 * print nothing; and the behaviours that hurt users when a double gets them wrong (a workspace taken
 * over by `worktree open`, ids minted again after a restart, session reports dropped, a forced
 * removal stopping processes before git refuses, the focus moved by a removal, git's refusals in
 * another language). If the double drifts from the real Herdr, the two passes disagree here.
 * What only the double can show (its faults, its call log, other versions) is `forDoubleOnly`.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  ErrorEnvelopeSchema,
  OkResultSchema,
  PANE_ID_PATTERN,
  PaneInfoResultSchema,
  PaneListSchema,
  PaneProcessInfoSchema,
  TAB_ID_PATTERN,
  WORKSPACE_ID_PATTERN,
  WorkspaceCreatedSchema,
  WorkspaceInfoResultSchema,
  WorkspaceInfoSchema,
  PaneInfoSchema,
  WorkspaceListSchema,
  WorktreeCreatedSchema,
  WorktreeListSchema,
  WorktreeOpenedSchema,
  WorktreeRemovedSchema,
  AGENT_STATUSES,
} from "../../src/mux/herdr/protocol.ts";
import { createTempRepo, germanGitServerEnv, type TempRepo } from "../support/git-repo.ts";
import {
  asDouble,
  forDoubleOnly,
  HERDR_TARGET,
  startHerdr,
  startFakePi,
  startHerdrDouble,
  stopForeground,
  withHerdrDouble,
  type HerdrRun,
  type HerdrServer,
} from "../support/herdr.ts";
import { waitFor } from "../support/tmux.ts";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `pane move`'s answer, as far as this file reads it (production never moves a pane). */
const PaneMoveSchema = z.object({
  type: z.literal("pane_move"),
  move_result: z.object({
    changed: z.boolean(),
    closed_workspace_id: z.string().optional(),
    created_workspace: WorkspaceInfoSchema,
    focused_pane_id: z.string(),
    pane: PaneInfoSchema,
    previous_pane_id: z.string(),
    previous_tab_id: z.string(),
    previous_workspace_id: z.string(),
  }),
});

/** Today's workspace id shape (src/workspace.rs): `w` and digits of 123456789ABCDEFGHJKMNPQRSTVWXYZ0. */
const CURRENT_WORKSPACE_ID = /^w[1-9A-HJKMNP-TV-Z0]+$/;

function isSortedDeep(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(isSortedDeep);
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    const sorted = [...keys].sort();
    return keys.every((key, i) => key === sorted[i]) && Object.values(value).every(isSortedDeep);
  }
  return true;
}

function hasNull(value: unknown): boolean {
  if (value === null) return true;
  if (typeof value === "object") return Object.values(value as object).some(hasNull);
  return false;
}

/** A success: exit 0, nothing on stderr, exactly one compact JSON line, keys sorted, no null, decoded by `schema`. */
function expectSuccess<T>(run: HerdrRun, id: string, schema: z.ZodType<T>): T {
  expect(run.stderr).toBe("");
  expect(run.exitCode).toBe(0);
  expect(run.stdout.endsWith("\n")).toBe(true);
  const lines = run.stdout.slice(0, -1).split("\n");
  expect(lines).toHaveLength(1);
  const line = lines[0] ?? "";
  const value = JSON.parse(line) as { id: string; result: unknown };
  expect(JSON.stringify(value)).toBe(line); // compact
  expect(isSortedDeep(value)).toBe(true);
  expect(hasNull(value)).toBe(false);
  expect(Object.keys(value)).toEqual(["id", "result"]);
  expect(value.id).toBe(id);
  return schema.parse(value.result);
}

/**
 * An API error: exit 1, empty stdout, one envelope line on stderr, keys sorted (but for the client's
 * own server_not_running envelope, which Herdr writes id first).
 */
function expectApiError(run: HerdrRun, id: string, code: string, options: { idFirst?: boolean } = {}): string {
  expect(run.stdout).toBe("");
  expect(run.exitCode).toBe(1);
  const line = run.stderr.replace(/\n$/, "");
  expect(line.includes("\n")).toBe(false);
  const value = JSON.parse(line) as unknown;
  expect(JSON.stringify(value)).toBe(line);
  const envelope = ErrorEnvelopeSchema.parse(value);
  expect(Object.keys(value as object)).toEqual(options.idFirst === true ? ["id", "error"] : ["error", "id"]);
  expect(isSortedDeep(envelope.error)).toBe(true);
  expect(envelope.id).toBe(id);
  expect(envelope.error.code).toBe(code);
  return envelope.error.message;
}

/** A usage error: exit 2, empty stdout, plain (non-JSON) text on stderr. */
function expectUsageError(run: HerdrRun, text: string): void {
  expect(run.stdout).toBe("");
  expect(run.exitCode).toBe(2);
  expect(run.stderr).toBe(`${text}\n`);
}

describe(`Herdr (${HERDR_TARGET}) follows the CLI contract`, () => {
  let repo: TempRepo;
  let herdr: HerdrServer;
  let parent: { workspaceId: string; tabId: string; paneId: string };
  let baseSha: string;

  beforeAll(async () => {
    repo = createTempRepo({ extraCommits: 2, prefix: "phw-herdr-conf-" });
    baseSha = repo.run(["rev-parse", "HEAD~1"]);
    herdr = await startHerdr({
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", GIT_CONFIG_NOSYSTEM: "1" },
    });
    parent = await herdr.openWorkspace(repo.root, "parent");
  });

  afterAll(async () => {
    await herdr?.kill();
    repo?.cleanup();
  });

  it("reports its version; the worktree create help lists --trust-repository from 0.9 on", async () => {
    const version = await herdr.herdr(["--version"]);
    // The real one is the 0.8.2 built here; the double pretends 0.9.2 unless told otherwise.
    const expected = HERDR_TARGET === "real" ? "0.8.2" : "0.9.2";
    expect(version).toEqual({ exitCode: 0, stdout: `herdr ${expected}\n`, stderr: "" });
    const help = await herdr.herdr(["worktree", "create", "--help"]);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain("Usage: herdr worktree create");
    expect(help.stdout.includes("--trust-repository")).toBe(expected !== "0.8.2");
  });

  it("creates workspaces whose ids use Herdr's alphabet and whose panes get the Herdr environment, not tmux's", async () => {
    expect(parent.workspaceId).toMatch(CURRENT_WORKSPACE_ID);
    expect(parent.tabId).toMatch(new RegExp(`^${parent.workspaceId}:t[1-9A-HJKMNP-TV-Z0]+$`));
    expect(parent.paneId).toMatch(new RegExp(`^${parent.workspaceId}:p[1-9A-HJKMNP-TV-Z0]+$`));
    // Production accepts them (and any id Herdr prints).
    expect(
      [parent.workspaceId, parent.tabId, parent.paneId].every(
        (id) => WORKSPACE_ID_PATTERN.test(id) && TAB_ID_PATTERN.test(id) && PANE_ID_PATTERN.test(id),
      ),
    ).toBe(true);
    const envFile = join(repo.dir, "pane-env.txt");
    const typed = await herdr.herdr(["pane", "run", parent.paneId, `env > ${envFile}`]);
    expect(typed).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    const lines = await waitFor(
      () =>
        existsSync(envFile) && readFileSync(envFile, "utf8").includes("HERDR_ENV")
          ? readFileSync(envFile, "utf8").split("\n")
          : undefined,
      {
        timeoutMs: 10_000,
        description: "the pane's environment",
      },
    );
    expect(lines).toContain("HERDR_ENV=1");
    expect(lines).toContain(`HERDR_PANE_ID=${parent.paneId}`);
    expect(lines).toContain(`HERDR_TAB_ID=${parent.tabId}`);
    expect(lines).toContain(`HERDR_WORKSPACE_ID=${parent.workspaceId}`);
    expect(lines).toContain(`HERDR_SOCKET_PATH=${herdr.socketPath}`);
    expect(lines).toContain(`HERDR_BIN_PATH=${herdr.binPath}`);
    expect(lines.filter((line) => /^TMUX(_PANE)?=/.test(line))).toEqual([]);
    expect(lines.filter((line) => line.startsWith("HERDR_SOCKET=") || line.startsWith("HERDR_DOUBLE"))).toEqual([]);
  });

  it("numbers ids in bijective base 32 over 123456789ABCDEFGHJKMNPQRSTVWXYZ0", async () => {
    // The real one is counted up from w1; the double can start high.
    const fresh =
      HERDR_TARGET === "real"
        ? await startHerdr({ env: herdr.serverEnv })
        : await startHerdrDouble({ env: herdr.serverEnv, firstWorkspaceNumber: 31 });
    try {
      const ids: string[] = [];
      while (!ids.includes("w11")) {
        const made = await fresh.result(["workspace", "create", "--cwd", repo.dir, "--no-focus"]);
        ids.push((made.workspace as { workspace_id: string }).workspace_id);
        expect(ids.length).toBeLessThanOrEqual(33);
      }
      expect(ids.slice(-3)).toEqual(["wZ", "w0", "w11"]);
      if (HERDR_TARGET === "real") expect(ids.slice(0, 3)).toEqual(["w1", "w2", "w3"]);
    } finally {
      await fresh.kill();
    }
  });

  it("worktree create: a real worktree at the base, unfocused, at the slug path by default, decoded by the production schema", async () => {
    const run = await herdr.herdr([
      "worktree",
      "create",
      "--cwd",
      repo.root,
      "--branch",
      "feat/X_y",
      "--base",
      baseSha,
      "--no-focus",
      "--json",
    ]);
    const created = expectSuccess(run, "cli:worktree:create", WorktreeCreatedSchema);
    const expectedPath = join(herdr.home, ".herdr", "worktrees", "repo", "feat-x-y");
    expect(created.worktree).toMatchObject({
      path: expectedPath,
      branch: "feat/X_y",
      is_linked_worktree: true,
      open_workspace_id: created.workspace.workspace_id,
    });
    expect(created.workspace.worktree).toMatchObject({
      checkout_path: expectedPath,
      repo_root: repo.root,
      is_linked_worktree: true,
    });
    expect(created.root_pane).toMatchObject({
      focused: false,
      cwd: expectedPath,
      workspace_id: created.workspace.workspace_id,
    });
    expect(created.workspace.focused).toBe(false);
    expect(AGENT_STATUSES).toContain(created.root_pane.agent_status);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: expectedPath })).toBe(baseSha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: expectedPath })).toBe("feat/X_y");
    // The parent kept the focus.
    const parentInfo = expectSuccess(
      await herdr.herdr(["workspace", "get", parent.workspaceId]),
      "cli:workspace:get",
      WorkspaceInfoResultSchema,
    );
    expect(parentInfo.workspace.focused).toBe(true);
  });

  it("worktree create checks out an existing local branch as it is and ignores --base", async () => {
    const head = repo.run(["rev-parse", "HEAD"]);
    repo.run(["branch", "already-there", baseSha]);
    const path = join(repo.dir, "already-there");
    const created = expectSuccess(
      await herdr.herdr([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "already-there",
        "--base",
        head,
        "--path",
        path,
        "--no-focus",
      ]),
      "cli:worktree:create",
      WorktreeCreatedSchema,
    );
    expect(created.worktree.path).toBe(path);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: path })).toBe(baseSha);
  });

  it("the first create for a repository it has not seen also opens that repository's parent workspace, unreported", async () => {
    const other = createTempRepo({ prefix: "phw-herdr-conf-other-" });
    try {
      const before = expectSuccess(await herdr.herdr(["workspace", "list"]), "cli:workspace:list", WorkspaceListSchema)
        .workspaces.length;
      const created = expectSuccess(
        await herdr.herdr([
          "worktree",
          "create",
          "--cwd",
          other.root,
          "--branch",
          "side",
          "--path",
          join(other.dir, "side"),
        ]),
        "cli:worktree:create",
        WorktreeCreatedSchema,
      );
      const after = expectSuccess(
        await herdr.herdr(["workspace", "list"]),
        "cli:workspace:list",
        WorkspaceListSchema,
      ).workspaces;
      expect(after).toHaveLength(before + 2);
      expect(
        after.filter((ws) => ws.worktree?.checkout_path === other.root).map((ws) => ws.worktree?.is_linked_worktree),
      ).toEqual([false]);
      expect(after.map((ws) => ws.workspace_id)).toContain(created.workspace.workspace_id);
    } finally {
      other.cleanup();
    }
  });

  it("refuses a linked worktree as the source, and a path outside git, with error envelopes on stderr", async () => {
    const linked = join(repo.dir, "linked-source");
    repo.run(["worktree", "add", "-q", "-b", "linked-source", linked]);
    const message = expectApiError(
      await herdr.herdr(["worktree", "create", "--cwd", linked, "--branch", "from-linked"]),
      "cli:worktree:create",
      "linked_worktree_source",
    );
    expect(message).toBe("New and open worktree actions start from the repo parent workspace.");
    expect(repo.run(["branch", "--list", "from-linked"])).toBe("");
    const plain = join(repo.dir, "plain");
    mkdirSync(plain, { recursive: true });
    expectApiError(
      await herdr.herdr(["worktree", "create", "--cwd", plain, "--branch", "x"]),
      "cli:worktree:create",
      "not_git_worktree",
    );
    expectApiError(
      await herdr.herdr(["worktree", "create", "--cwd", repo.root, "--branch", ""]),
      "cli:worktree:create",
      "invalid_request",
    );
    const failed = expectApiError(
      await herdr.herdr([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "bad-base",
        "--base",
        "no-such-ref",
        "--path",
        join(repo.dir, "bad-base"),
      ]),
      "cli:worktree:create",
      "worktree_create_failed",
    );
    expect(failed).toMatch(/no-such-ref/);
    // worktree list accepts a linked worktree as its source.
    const listed = expectSuccess(
      await herdr.herdr(["worktree", "list", "--cwd", linked]),
      "cli:worktree:list",
      WorktreeListSchema,
    );
    expect(listed.source.repo_root).toBe(repo.root);
    expect(listed.worktrees.map((entry) => entry.path)).toContain(linked);
  });

  it("usage errors are plain text with exit 2, and --json is an unknown option on pane and workspace commands only", async () => {
    expectUsageError(
      await herdr.herdr(["worktree", "create", "--workspace", parent.workspaceId, "--cwd", repo.root]),
      "usage: herdr worktree create [--workspace ID | --cwd PATH] [--branch NAME] [--base REF] [--path PATH] [--label TEXT] [--focus] [--no-focus]",
    );
    expectUsageError(await herdr.herdr(["worktree", "create", "--branch"]), "missing value for --branch");
    expectUsageError(await herdr.herdr(["worktree", "create", "--bogus"]), "unknown option: --bogus");
    expectUsageError(
      await herdr.herdr(["worktree", "remove"]),
      "usage: herdr worktree remove --workspace ID [--force]",
    );
    expectUsageError(await herdr.herdr(["pane", "list", "--json"]), "unknown option: --json");
    expectUsageError(
      await herdr.herdr(["pane", "process-info", "--pane", parent.paneId, "--json"]),
      "unknown option: --json",
    );
    // The first word of `pane run` is the pane id, whatever it looks like.
    expect(expectApiError(await herdr.herdr(["pane", "run", "--json", "echo"]), "cli:request", "pane_not_found")).toBe(
      "pane --json not found",
    );
    expectUsageError(await herdr.herdr(["pane", "get", parent.paneId, "--json"]), "usage: herdr pane get <pane_id>");
    expectUsageError(await herdr.herdr(["workspace", "list", "--json"]), "usage: herdr workspace list");
    expectUsageError(
      await herdr.herdr(["workspace", "focus", parent.workspaceId, "--json"]),
      "usage: herdr workspace focus <workspace_id>",
    );
    // ...but a hidden no-op on worktree commands.
    expectSuccess(
      await herdr.herdr(["worktree", "list", "--cwd", repo.root, "--json"]),
      "cli:worktree:list",
      WorktreeListSchema,
    );
    // Usage is checked before the server is asked: no server, still exit 2.
    const env = { ...herdr.clientEnv, HERDR_SOCKET_PATH: join(repo.dir, "no-server", "herdr.sock") };
    const offline = await herdr.herdr(["pane", "list", "--json"], { env });
    expectUsageError(offline, "unknown option: --json");
  });

  it("no server: a server_not_running envelope naming the socket", async () => {
    const socket = join(repo.dir, "no-server", "herdr.sock");
    const run = await herdr.herdr(["workspace", "list"], { env: { ...herdr.clientEnv, HERDR_SOCKET_PATH: socket } });
    const message = expectApiError(run, "cli:workspace:list", "server_not_running", { idFirst: true });
    expect(message).toBe(`no herdr server is running at ${socket}; run \`herdr\` to start or attach it`);
  });

  it("panes: process-info (optional fields omitted), get, list, read; fire-and-forget commands print nothing", async () => {
    const info = await waitFor(
      async () => {
        const run = await herdr.herdr(["pane", "process-info", "--pane", parent.paneId]);
        const decoded = expectSuccess(run, "cli:pane:process_info", PaneProcessInfoSchema).process_info;
        return decoded.shell_pid !== undefined && decoded.shell_pid === decoded.foreground_process_group_id
          ? decoded
          : undefined;
      },
      { timeoutMs: 10_000, description: "the parent pane's shell" },
    );
    expect(info.pane_id).toBe(parent.paneId);
    // Herdr never emits `tty` (shared/reference/herdr-cli.md errata; docs/herdr.md).
    expect(info.tty).toBeUndefined();
    expect(info.foreground_processes.map((process) => process.pid)).toEqual([info.shell_pid]);
    expect(info.foreground_processes[0]?.name).toBe("bash");

    const got = expectSuccess(await herdr.herdr(["pane", "get", parent.paneId]), "cli:pane:get", PaneInfoResultSchema);
    expect(got.pane).toMatchObject({
      pane_id: parent.paneId,
      workspace_id: parent.workspaceId,
      tab_id: parent.tabId,
      cwd: repo.root,
    });
    const listed = expectSuccess(
      await herdr.herdr(["pane", "list", "--workspace", parent.workspaceId]),
      "cli:pane:list",
      PaneListSchema,
    );
    expect(listed.panes.map((pane) => pane.pane_id)).toEqual([parent.paneId]);

    expect(await herdr.herdr(["pane", "send-text", parent.paneId, "echo", "conformance-text"])).toEqual({
      exitCode: 0,
      stdout: "",
      stderr: "",
    });
    expect(await herdr.herdr(["pane", "send-keys", parent.paneId, "Enter"])).toEqual({
      exitCode: 0,
      stdout: "",
      stderr: "",
    });
    const screen = await waitFor(
      async () => {
        const text = await herdr.read(parent.paneId);
        return /^conformance-text$/m.test(text) ? text : undefined;
      },
      { timeoutMs: 10_000, description: "the echoed text" },
    );
    // pane read prints the text itself (as the real client does), not a JSON envelope.
    expect(screen.startsWith("{")).toBe(false);

    expectApiError(await herdr.herdr(["pane", "run", "w9:p9", "true"]), "cli:request", "pane_not_found");
    expectApiError(await herdr.herdr(["pane", "get", "w9:p9"]), "cli:pane:get", "pane_not_found");
    expectApiError(
      await herdr.herdr(["pane", "process-info", "--pane", "w9:p9"]),
      "cli:pane:process_info",
      "pane_not_found",
    );
  });

  it("workspaces: focus answers workspace_info, unknown ids are workspace_not_found, close answers ok", async () => {
    const created = expectSuccess(
      await herdr.herdr(["workspace", "create", "--cwd", repo.dir, "--label", "scratch", "--no-focus"]),
      "cli:workspace:create",
      WorkspaceCreatedSchema,
    );
    expect(created.workspace.focused).toBe(false);
    const focused = expectSuccess(
      await herdr.herdr(["workspace", "focus", created.workspace.workspace_id]),
      "cli:workspace:focus",
      WorkspaceInfoResultSchema,
    );
    expect(focused.workspace.focused).toBe(true);
    expectApiError(await herdr.herdr(["workspace", "focus", "w99"]), "cli:workspace:focus", "workspace_not_found");
    expectApiError(await herdr.herdr(["workspace", "get", "w99"]), "cli:workspace:get", "workspace_not_found");
    expectSuccess(
      await herdr.herdr(["workspace", "close", created.workspace.workspace_id]),
      "cli:workspace:close",
      OkResultSchema,
    );
    expectApiError(
      await herdr.herdr(["workspace", "get", created.workspace.workspace_id]),
      "cli:workspace:get",
      "workspace_not_found",
    );
    expectSuccess(
      await herdr.herdr(["workspace", "focus", parent.workspaceId]),
      "cli:workspace:focus",
      WorkspaceInfoResultSchema,
    );
  });

  it("worktree open gives a closed worktree a new workspace id; remove needs a live workspace, refuses dirt, keeps the branch", async () => {
    const path = join(repo.dir, "lifecycle");
    const created = expectSuccess(
      await herdr.herdr(["worktree", "create", "--cwd", repo.root, "--branch", "lifecycle", "--path", path]),
      "cli:worktree:create",
      WorktreeCreatedSchema,
    );
    const firstId = created.workspace.workspace_id;
    expectSuccess(await herdr.herdr(["workspace", "close", firstId]), "cli:workspace:close", OkResultSchema);
    expect(existsSync(path)).toBe(true);
    // Upstream #4317: a closed workspace cannot be used to remove its worktree.
    expectApiError(
      await herdr.herdr(["worktree", "remove", "--workspace", firstId]),
      "cli:worktree:remove",
      "workspace_not_found",
    );

    const opened = expectSuccess(
      await herdr.herdr(["worktree", "open", "--cwd", repo.root, "--path", path, "--no-focus"]),
      "cli:worktree:open",
      WorktreeOpenedSchema,
    );
    expect(opened.already_open).toBe(false);
    expect(opened.workspace.workspace_id).not.toBe(firstId);
    const again = expectSuccess(
      await herdr.herdr(["worktree", "open", "--cwd", repo.root, "--branch", "lifecycle"]),
      "cli:worktree:open",
      WorktreeOpenedSchema,
    );
    expect(again).toMatchObject({ already_open: true, workspace: { workspace_id: opened.workspace.workspace_id } });
    expectUsageError(
      await herdr.herdr(["worktree", "open", "--cwd", repo.root]),
      "usage: herdr worktree open [--workspace ID | --cwd PATH] (--path PATH | --branch NAME) [--label TEXT] [--focus] [--no-focus]",
    );

    writeFileSync(join(path, "untracked.txt"), "work in progress\n");
    const dirty = expectApiError(
      await herdr.herdr(["worktree", "remove", "--workspace", opened.workspace.workspace_id]),
      "cli:worktree:remove",
      "dirty_worktree_requires_force",
    );
    expect(dirty).toMatch(/contains modified or untracked files, use --force to delete it/);
    expect(existsSync(join(path, "untracked.txt"))).toBe(true);
    expectApiError(
      await herdr.herdr(["worktree", "remove", "--workspace", parent.workspaceId]),
      "cli:worktree:remove",
      "not_linked_worktree",
    );

    const removed = expectSuccess(
      await herdr.herdr(["worktree", "remove", "--workspace", opened.workspace.workspace_id, "--force"]),
      "cli:worktree:remove",
      WorktreeRemovedSchema,
    );
    expect(removed).toEqual({
      type: "worktree_removed",
      workspace_id: opened.workspace.workspace_id,
      path,
      forced: true,
    });
    expect(existsSync(path)).toBe(false);
    expect(repo.run(["branch", "--list", "lifecycle", "--format=%(refname:short)"])).toBe("lifecycle");
    expectApiError(
      await herdr.herdr(["workspace", "get", opened.workspace.workspace_id]),
      "cli:workspace:get",
      "workspace_not_found",
    );
  });

  // Faults, the call log, other versions and legacy ids: the double's own, the real one cannot be made to show them.
  forDoubleOnly(() => {
    describe("faults", () => {
      it("an injected error answers with its code, on stderr or in-band on stdout, for `times` calls only", async () => {
        asDouble(herdr).setFaults({
          "workspace list": { error: "stale_worktree_operation", message: "injected", times: 1 },
        });
        try {
          expectApiError(await herdr.herdr(["workspace", "list"]), "cli:workspace:list", "stale_worktree_operation");
          expectSuccess(await herdr.herdr(["workspace", "list"]), "cli:workspace:list", WorkspaceListSchema);
          asDouble(herdr).setFaults({ "workspace get": { error: "workspace_not_found", inband: true } });
          const inband = await herdr.herdr(["workspace", "get", parent.workspaceId]);
          expect(inband.exitCode).toBe(1);
          expect(inband.stderr).toBe("");
          expect(ErrorEnvelopeSchema.parse(JSON.parse(inband.stdout))).toMatchObject({
            error: { code: "workspace_not_found" },
          });
          asDouble(herdr).setFaults({ "*": { error: "server_not_running" } });
          expectApiError(await herdr.herdr(["pane", "list"]), "cli:pane:list", "server_not_running", { idFirst: true });
          // A faults file named by $HERDR_DOUBLE_FAULTS wins over the server dir's.
          const named = join(repo.dir, "named-faults.json");
          writeFileSync(named, JSON.stringify({ "pane list": { error: "invalid_request" } }));
          expectApiError(
            await herdr.herdr(["pane", "list"], { env: { ...herdr.clientEnv, HERDR_DOUBLE_FAULTS: named } }),
            "cli:pane:list",
            "invalid_request",
          );
        } finally {
          asDouble(herdr).clearFaults();
        }
      });

      it("malformed output is not JSON; a hang never answers; partial success leaves the worktree and its workspace", async () => {
        try {
          asDouble(herdr).setFaults({ "workspace focus": { malformed: true } });
          const malformed = await herdr.herdr(["workspace", "focus", parent.workspaceId]);
          expect(malformed.exitCode).toBe(0);
          expect(() => JSON.parse(malformed.stdout)).toThrow();

          asDouble(herdr).setFaults({ "pane get": { hang: true } });
          const started = Date.now();
          const hung = await execa(herdr.binPath, ["pane", "get", parent.paneId], {
            env: herdr.clientEnv,
            extendEnv: false,
            reject: false,
            timeout: 1_500,
          });
          expect(hung.timedOut).toBe(true);
          expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);

          asDouble(herdr).setFaults({ "worktree create": { partial: true } });
          const path = join(repo.dir, "partial");
          const partial = await herdr.herdr([
            "worktree",
            "create",
            "--cwd",
            repo.root,
            "--branch",
            "partial",
            "--path",
            path,
          ]);
          expectApiError(partial, "cli:worktree:create", "worktree_open_failed");
          asDouble(herdr).clearFaults();
          const listed = expectSuccess(
            await herdr.herdr(["worktree", "list", "--cwd", repo.root]),
            "cli:worktree:list",
            WorktreeListSchema,
          );
          const entry = listed.worktrees.find((candidate) => candidate.path === path);
          expect(entry?.branch).toBe("partial");
          expect(entry?.open_workspace_id).toMatch(WORKSPACE_ID_PATTERN);
        } finally {
          asDouble(herdr).clearFaults();
        }
      });
    });

    it("logs every call's argv in order", async () => {
      asDouble(herdr).clearCalls();
      await herdr.herdr(["workspace", "list"]);
      await herdr.herdr(["pane", "get", parent.paneId]);
      expect(
        asDouble(herdr)
          .calls()
          .map((call) => call.argv),
      ).toEqual([
        ["workspace", "list"],
        ["pane", "get", parent.paneId],
      ]);
    });

    it("a 0.8 double has no --trust-repository", async () => {
      await withHerdrDouble({ env: herdr.serverEnv, version: "0.8.2" }, async (old) => {
        const help = await old.herdr(["worktree", "create", "--help"]);
        expect(help.stdout).not.toContain("--trust-repository");
        expectUsageError(
          await old.herdr(["worktree", "create", "--cwd", repo.root, "--trust-repository"]),
          "unknown option: --trust-repository",
        );
      });
    });

    it("legacy ids (Herdr <= 0.6.10): hex workspace ids, `<ws>:<n>` tabs, `<ws>-<n>` panes, decoded by the production schemas", async () => {
      await withHerdrDouble({ env: herdr.serverEnv, legacyIds: true }, async (legacy) => {
        const ws = await legacy.openWorkspace(repo.dir, "legacy");
        expect(ws.workspaceId).toMatch(/^w[0-9a-f]{14,}$/);
        expect(ws.tabId).toBe(`${ws.workspaceId}:1`);
        expect(ws.paneId).toBe(`${ws.workspaceId}-1`);
        const got = expectSuccess(await legacy.herdr(["pane", "get", ws.paneId]), "cli:pane:get", PaneInfoResultSchema);
        expect(got.pane).toMatchObject({ pane_id: ws.paneId, tab_id: ws.tabId, workspace_id: ws.workspaceId });
        expectSuccess(
          await legacy.herdr(["workspace", "get", ws.workspaceId]),
          "cli:workspace:get",
          WorkspaceInfoResultSchema,
        );
        expectSuccess(
          await legacy.herdr(["pane", "process-info", "--pane", ws.paneId]),
          "cli:pane:process_info",
          PaneProcessInfoSchema,
        );
      });
    });
  });

  it("a pane reports shell_pid from its spawn on, equal to the foreground group", async () => {
    const fresh = await herdr.result(["workspace", "create", "--cwd", repo.dir, "--label", "fresh"]);
    const paneId = (fresh.root_pane as { pane_id: string }).pane_id;
    const info = expectSuccess(
      await herdr.herdr(["pane", "process-info", "--pane", paneId]),
      "cli:pane:process_info",
      PaneProcessInfoSchema,
    ).process_info;
    expect(info.shell_pid).toBeGreaterThan(0);
    expect(info.foreground_process_group_id).toBe(info.shell_pid);
    await herdr.result(["workspace", "close", (fresh.workspace as { workspace_id: string }).workspace_id]);
  });

  it("--help only directly after the subcommand; all four worktree commands list --trust-repository from 0.9 on", async () => {
    const trusts = HERDR_TARGET === "double";
    for (const command of ["list", "create", "open", "remove"]) {
      const help = await herdr.herdr(["worktree", command, "--help"]);
      expect(help.exitCode).toBe(0);
      expect(help.stdout).toContain(`Usage: herdr worktree ${command}`);
      expect(help.stdout.includes("--trust-repository")).toBe(trusts);
    }
    expectUsageError(await herdr.herdr(["worktree", "create", "--no-focus", "--help"]), "unknown option: --help");
    expectUsageError(await herdr.herdr(["worktree", "list", "--cwd", repo.root, "-h"]), "unknown option: -h");
  });

  it("moves a pane to a new workspace: new ids, and the old pane id answers as an alias", async () => {
    const made = await herdr.result(["workspace", "create", "--cwd", repo.dir, "--label", "to-move"]);
    const old = (made.root_pane as { pane_id: string }).pane_id;
    const moved = await herdr.herdr(["pane", "move", old, "--new-workspace"]);
    const result = expectSuccess(moved, "cli:pane:move", PaneMoveSchema).move_result;
    const pane = result.pane;
    expect(pane.pane_id).not.toBe(old);
    expect(result).toMatchObject({
      changed: true,
      previous_pane_id: old,
      closed_workspace_id: (made.workspace as { workspace_id: string }).workspace_id,
      focused_pane_id: pane.pane_id,
      created_workspace: { workspace_id: pane.workspace_id, focused: true },
    });
    // A plain workspace: no worktree membership, a label of its directory, not the one it left.
    expect(result.created_workspace.worktree).toBeUndefined();
    expect(result.created_workspace.label).not.toBe("to-move");
    const viaAlias = expectSuccess(await herdr.herdr(["pane", "get", old]), "cli:pane:get", PaneInfoResultSchema).pane;
    expect(viaAlias).toMatchObject({ pane_id: pane.pane_id, workspace_id: pane.workspace_id, tab_id: pane.tab_id });
    // The workspace it left had no other pane: it closed.
    expectApiError(
      await herdr.herdr(["workspace", "get", (made.workspace as { workspace_id: string }).workspace_id]),
      "cli:workspace:get",
      "workspace_not_found",
    );
    await herdr.result(["workspace", "close", pane.workspace_id]);
  });

  it("report-agent-session prints nothing; of the official source only a sequenced report of a session start is kept, and it counts once Pi runs there", async () => {
    const made = await herdr.result(["workspace", "create", "--cwd", repo.dir, "--label", "agent"]);
    const paneId = (made.root_pane as { pane_id: string }).pane_id;
    const session = async () =>
      expectSuccess(await herdr.herdr(["pane", "get", paneId]), "cli:pane:get", PaneInfoResultSchema).pane
        .agent_session;
    expect(
      await herdr.herdr([
        "pane",
        "report-agent-session",
        paneId,
        "--source",
        "mine",
        "--agent",
        "pi",
        "--agent-session-path",
        "/s/x.jsonl",
      ]),
    ).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    expect(await session()).toBeUndefined();
    // The official source without a sequence number: answered like any other, and dropped.
    expect(await reportSession(herdr, paneId, "/s/x.jsonl")).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    expect(await session()).toBeUndefined();
    await startFakePi(herdr, paneId);
    expect(await reportSession(herdr, paneId, "/s/x.jsonl")).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    expect(await session()).toBeUndefined();
    // Sequenced, with a start Herdr knows: kept while Pi runs.
    await reportSession(herdr, paneId, "/s/x.jsonl", ["--seq", "1000", "--session-start-source", "startup"]);
    expect(await session()).toEqual({ source: "herdr:pi", agent: "pi", kind: "path", value: "/s/x.jsonl" });
    // An older sequence number does not replace it; a newer one does, while Pi runs there.
    await reportSession(herdr, paneId, "/s/older.jsonl", ["--seq", "999", "--session-start-source", "startup"]);
    expect((await session())?.value).toBe("/s/x.jsonl");
    await reportSession(herdr, paneId, "/s/newer.jsonl", ["--seq", "2000"]);
    expect((await session())?.value).toBe("/s/newer.jsonl");
    expectUsageError(
      await herdr.herdr(["pane", "report-agent-session", paneId, "--agent", "pi"]),
      "missing required --source",
    );
    // A sequence number that is not one: plain text and exit 1, as the client's own errors are.
    expect(
      await herdr.herdr([
        "pane",
        "report-agent-session",
        paneId,
        "--source",
        "herdr:pi",
        "--agent",
        "pi",
        "--seq",
        "abc",
      ]),
    ).toEqual({
      exitCode: 1,
      stdout: "",
      stderr: 'Error: Custom { kind: Other, error: "invalid value for --seq: abc" }\n',
    });
    const unknown = await herdr.herdr([
      "pane",
      "report-agent-session",
      "w99:p1",
      "--source",
      "herdr:pi",
      "--agent",
      "pi",
    ]);
    expectApiError(unknown, "cli:request", "pane_not_found");
    await herdr.result(["workspace", "close", (made.workspace as { workspace_id: string }).workspace_id]);
  });

  it("a workspace made without --label is named after its git checkout (else its directory), and follows its root pane", async () => {
    const label = async (id: string) =>
      expectSuccess(await herdr.herdr(["workspace", "get", id]), "cli:workspace:get", WorkspaceInfoResultSchema)
        .workspace.label;
    const path = join(repo.dir, "unlabelled-wt");
    const created = expectSuccess(
      await herdr.herdr([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "label/me",
        "--path",
        path,
        "--no-focus",
      ]),
      "cli:worktree:create",
      WorktreeCreatedSchema,
    );
    // The checkout's directory, not the branch.
    expect(await label(created.workspace.workspace_id)).toBe("unlabelled-wt");
    await herdr.result(["workspace", "close", created.workspace.workspace_id]);
    const opened = expectSuccess(
      await herdr.herdr(["worktree", "open", "--cwd", repo.root, "--path", path, "--no-focus"]),
      "cli:worktree:open",
      WorktreeOpenedSchema,
    );
    expect(await label(opened.workspace.workspace_id)).toBe("unlabelled-wt");
    // A subdirectory of the main checkout: the repository's name; once its shell leaves, the new place's.
    mkdirSync(join(repo.root, "sub"), { recursive: true });
    const made = await herdr.result(["workspace", "create", "--cwd", join(repo.root, "sub"), "--no-focus"]);
    const plain = (made.workspace as { workspace_id: string }).workspace_id;
    expect(await label(plain)).toBe("repo");
    await herdr.herdr(["pane", "run", (made.root_pane as { pane_id: string }).pane_id, `cd ${repo.dir}`]);
    await waitFor(async () => ((await label(plain)) === basename(repo.dir) ? true : undefined), {
      timeoutMs: 10_000,
      description: "the label to follow the root pane's cwd",
    });
    await herdr.result(["workspace", "close", plain]);
    await herdr.result(["worktree", "remove", "--workspace", opened.workspace.workspace_id, "--force"]);
  });

  it("a kept session goes with the Pi that reported it: none once that Pi leaves the pane, and the next Pi's report counts anew", async () => {
    const made = await herdr.result(["workspace", "create", "--cwd", repo.dir, "--label", "agent-exit"]);
    const paneId = (made.root_pane as { pane_id: string }).pane_id;
    const session = async () =>
      expectSuccess(await herdr.herdr(["pane", "get", paneId]), "cli:pane:get", PaneInfoResultSchema).pane
        .agent_session;
    await startFakePi(herdr, paneId);
    await reportSession(herdr, paneId, "/s/first.jsonl", ["--seq", "5000", "--session-start-source", "startup"]);
    expect((await session())?.value).toBe("/s/first.jsonl");
    // Herdr's detection sees that Pi exit (src/terminal/state.rs set_detected_state_with_screen_signals_at).
    await stopForeground(herdr, paneId);
    await waitFor(async () => ((await session()) === undefined ? true : undefined), {
      timeoutMs: 10_000,
      description: "the session to go with its Pi",
    });
    // A new Pi there has no session until it reports one; the old sequence number is forgotten.
    await startFakePi(herdr, paneId);
    expect(await session()).toBeUndefined();
    await reportSession(herdr, paneId, "/s/first.jsonl", ["--seq", "1", "--session-start-source", "startup"]);
    expect((await session())?.value).toBe("/s/first.jsonl");
    await stopForeground(herdr, paneId);
    await herdr.result(["workspace", "close", (made.workspace as { workspace_id: string }).workspace_id]);
  });

  it("a restart: panes come back under their ids, a kept Pi session is typed into a new shell, and closed ids are minted again", async () => {
    // Without the project's bin on PATH, the resumed `pi` is not found: the typed line is what counts.
    const restarting = await startHerdr({ env: { ...herdr.serverEnv, PATH: "/usr/bin:/bin" } });
    try {
      const kept = await restarting.openWorkspace(repo.dir, "kept");
      const gone = await restarting.openWorkspace(repo.dir, "gone");
      const before = expectSuccess(
        await restarting.herdr(["pane", "process-info", "--pane", kept.paneId]),
        "cli:pane:process_info",
        PaneProcessInfoSchema,
      ).process_info;
      const sessionFile = join(repo.dir, "kept-session.jsonl");
      await startFakePi(restarting, kept.paneId);
      await reportSession(restarting, kept.paneId, sessionFile, ["--seq", "1", "--session-start-source", "startup"]);
      await restarting.result(["workspace", "close", gone.workspaceId]);
      await restarting.restart();
      expectSuccess(await restarting.herdr(["pane", "get", kept.paneId]), "cli:pane:get", PaneInfoResultSchema);
      // Until Herdr resumes the agent the pane has no terminal, and pane read answers pane_not_found.
      await waitFor(
        async () => {
          const read = await restarting.herdr(["pane", "read", kept.paneId, "--source", "visible"]);
          return read.exitCode === 0 && read.stdout.includes(`pi --session ${sessionFile}`) ? true : undefined;
        },
        { timeoutMs: 15_000, description: "Herdr's resume typed into the restored pane" },
      );
      const after = expectSuccess(
        await restarting.herdr(["pane", "process-info", "--pane", kept.paneId]),
        "cli:pane:process_info",
        PaneProcessInfoSchema,
      ).process_info;
      expect(after.shell_pid).toBeGreaterThan(0);
      expect(after.shell_pid).not.toBe(before.shell_pid);
      // The counter starts above the highest restored id: the closed one names a stranger now.
      const stranger = await restarting.result(["workspace", "create", "--cwd", repo.dir, "--no-focus"]);
      expect((stranger.workspace as { workspace_id: string }).workspace_id).toBe(gone.workspaceId);
    } finally {
      await restarting.kill();
    }
  });

  it("worktree open takes over a workspace sitting anywhere in the checkout: its membership and label are rewritten", async () => {
    const path = join(repo.dir, "adopted");
    const created = expectSuccess(
      await herdr.herdr([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "adopt/me",
        "--path",
        path,
        "--label",
        "the-child",
        "--no-focus",
      ]),
      "cli:worktree:create",
      WorktreeCreatedSchema,
    );
    await herdr.result(["workspace", "close", created.workspace.workspace_id]);
    mkdirSync(join(path, "sub"));
    const users = (
      await herdr.result(["workspace", "create", "--cwd", join(path, "sub"), "--label", "users-shell", "--no-focus"])
    ).workspace as { workspace_id: string };
    const plain = expectSuccess(
      await herdr.herdr(["workspace", "get", users.workspace_id]),
      "cli:workspace:get",
      WorkspaceInfoResultSchema,
    );
    expect(plain.workspace).toMatchObject({ label: "users-shell" });
    expect(plain.workspace.worktree).toBeUndefined();
    const opened = expectSuccess(
      await herdr.herdr(["worktree", "open", "--cwd", repo.root, "--path", path, "--label", "the-child", "--no-focus"]),
      "cli:worktree:open",
      WorktreeOpenedSchema,
    );
    expect(opened).toMatchObject({
      already_open: true,
      workspace: { workspace_id: users.workspace_id, label: "the-child" },
    });
    const taken = expectSuccess(
      await herdr.herdr(["workspace", "get", users.workspace_id]),
      "cli:workspace:get",
      WorkspaceInfoResultSchema,
    );
    expect(taken.workspace).toMatchObject({
      label: "the-child",
      worktree: { checkout_path: path, is_linked_worktree: true },
    });
    await herdr.result(["worktree", "remove", "--workspace", users.workspace_id, "--force"]);
  });

  it("a forced worktree remove stops the workspace's processes before git runs: a locked worktree stays, its processes and workspace do not", async () => {
    const path = join(repo.dir, "locked-wt");
    const created = expectSuccess(
      await herdr.herdr([
        "worktree",
        "create",
        "--cwd",
        repo.root,
        "--branch",
        "locked/one",
        "--path",
        path,
        "--no-focus",
      ]),
      "cli:worktree:create",
      WorktreeCreatedSchema,
    );
    const paneId = created.root_pane.pane_id;
    await herdr.herdr(["pane", "run", paneId, "sleep 4242"]);
    const pid = await waitFor(
      async () => {
        const info = expectSuccess(
          await herdr.herdr(["pane", "process-info", "--pane", paneId]),
          "cli:pane:process_info",
          PaneProcessInfoSchema,
        );
        return info.process_info.foreground_processes.find((process) => process.name === "sleep")?.pid;
      },
      { timeoutMs: 10_000, description: "sleep in the worktree's pane" },
    );
    repo.run(["worktree", "lock", path]);
    const message = expectApiError(
      await herdr.herdr(["worktree", "remove", "--workspace", created.workspace.workspace_id, "--force"]),
      "cli:worktree:remove",
      "worktree_remove_failed",
    );
    expect(message).toMatch(/cannot remove a locked working tree/);
    expect(existsSync(path)).toBe(true);
    await waitFor(() => (isAlive(pid) ? undefined : true), {
      timeoutMs: 10_000,
      description: "the pane's process to end",
    });
    expectApiError(
      await herdr.herdr(["workspace", "get", created.workspace.workspace_id]),
      "cli:workspace:get",
      "workspace_not_found",
    );
    repo.run(["worktree", "unlock", path]);
    repo.run(["worktree", "remove", "--force", path]);
  });

  it("Herdr 0.8.2 focuses the repository's workspace when a background worktree goes", async () => {
    const old =
      HERDR_TARGET === "real"
        ? await startHerdr({ env: herdr.serverEnv })
        : await startHerdrDouble({ env: herdr.serverEnv, version: "0.8.2" });
    try {
      const own = await old.openWorkspace(repo.root, "the-repo");
      const created = expectSuccess(
        await old.herdr([
          "worktree",
          "create",
          "--cwd",
          repo.root,
          "--branch",
          "focus/gone",
          "--path",
          join(repo.dir, "focus-wt"),
          "--no-focus",
        ]),
        "cli:worktree:create",
        WorktreeCreatedSchema,
      );
      const elsewhere = await old.openWorkspace(repo.dir, "elsewhere");
      const focused = async () =>
        expectSuccess(
          await old.herdr(["workspace", "list"]),
          "cli:workspace:list",
          WorkspaceListSchema,
        ).workspaces.find((workspace) => workspace.focused)?.workspace_id;
      expect(await focused()).toBe(elsewhere.workspaceId);
      await old.result(["worktree", "remove", "--workspace", created.workspace.workspace_id]);
      expect(await focused()).toBe(own.workspaceId);
    } finally {
      await old.kill();
    }
  });

  it("git's refusal of a dirty checkout in another language is a plain worktree_remove_failed", async () => {
    const german = await germanGitServerEnv(repo.dir);
    const speaking = await startHerdr({ env: { ...herdr.serverEnv, ...german } });
    try {
      const path = join(repo.dir, "german-wt");
      const created = expectSuccess(
        await speaking.herdr([
          "worktree",
          "create",
          "--cwd",
          repo.root,
          "--branch",
          "german/one",
          "--path",
          path,
          "--no-focus",
        ]),
        "cli:worktree:create",
        WorktreeCreatedSchema,
      );
      writeFileSync(join(path, "notes.txt"), "unsaved\n");
      const message = expectApiError(
        await speaking.herdr(["worktree", "remove", "--workspace", created.workspace.workspace_id]),
        "cli:worktree:remove",
        "worktree_remove_failed",
      );
      expect(message).toMatch(/enthält geänderte oder nicht versionierte Dateien/);
      expect(readFileSync(join(path, "notes.txt"), "utf8")).toBe("unsaved\n");
      await speaking.result(["worktree", "remove", "--workspace", created.workspace.workspace_id, "--force"]);
    } finally {
      await speaking.kill();
    }
  });

  // The double's blind period after a restart (src/app/mod.rs PENDING_AGENT_RESUME_THEME_WAIT) is
  // longer than the real one's start: told by the double at will, for the backends' grace tests.
  forDoubleOnly(() => {
    it("a restart: a pane with a Pi session answers pane_not_found from process-info until Herdr resumes it in a new shell", async () => {
      await withHerdrDouble({ env: herdr.serverEnv }, async (restarting) => {
        const ws = await restarting.openWorkspace(repo.dir, "restart");
        const before = expectSuccess(
          await restarting.herdr(["pane", "process-info", "--pane", ws.paneId]),
          "cli:pane:process_info",
          PaneProcessInfoSchema,
        ).process_info;
        await startFakePi(restarting, ws.paneId);
        await reportSession(restarting, ws.paneId, join(repo.dir, "s.jsonl"), [
          "--seq",
          "1",
          "--session-start-source",
          "startup",
        ]);
        await restarting.restart({ blindMs: 1_500 });
        expectApiError(
          await restarting.herdr(["pane", "process-info", "--pane", ws.paneId]),
          "cli:pane:process_info",
          "pane_not_found",
        );
        // The pane itself is restored under its id.
        expectSuccess(await restarting.herdr(["pane", "get", ws.paneId]), "cli:pane:get", PaneInfoResultSchema);
        const after = await waitFor(
          async () => {
            const run = await restarting.herdr(["pane", "process-info", "--pane", ws.paneId]);
            return run.exitCode === 0
              ? PaneProcessInfoSchema.parse(JSON.parse(run.stdout).result).process_info
              : undefined;
          },
          { timeoutMs: 10_000, description: "the restarted pane" },
        );
        expect(after.shell_pid).toBeGreaterThan(0);
        expect(after.shell_pid).not.toBe(before.shell_pid);
      });
    });
  });

  it("a create the client gave up on completes later; meanwhile a create of that path is worktree_operation_in_progress", async () => {
    const path = join(repo.dir, "late-wt");
    // The second create must reach the server while the first still runs: 6 s after the first
    // client gave up is room enough for a Node client to start on a loaded machine.
    const restore = slowNextCreate(8_000);
    const args = [
      "worktree",
      "create",
      "--cwd",
      repo.root,
      "--branch",
      "late/one",
      "--base",
      baseSha,
      "--path",
      path,
      "--no-focus",
    ];
    await expect(herdr.herdr(args, { timeoutMs: 2_000 })).rejects.toThrow(/timed out/);
    expectApiError(await herdr.herdr(args), "cli:worktree:create", "worktree_operation_in_progress");
    const listed = await waitFor(
      async () => {
        const list = expectSuccess(
          await herdr.herdr(["worktree", "list", "--cwd", repo.root]),
          "cli:worktree:list",
          WorktreeListSchema,
        );
        const entry = list.worktrees.find((candidate) => candidate.path === path);
        return entry?.open_workspace_id !== undefined ? entry : undefined;
      },
      { timeoutMs: 20_000, description: "the late create" },
    );
    expect(listed.branch).toBe("late/one");
    restore();
    await herdr.result(["worktree", "remove", "--workspace", listed.open_workspace_id ?? "", "--force"]);
  });

  /**
   * The next `worktree create` takes `ms` in the server: on the real Herdr a post-checkout hook that
   * sleeps (git runs it inside `git worktree add`), on the double its `late` fault.
   */
  function slowNextCreate(ms: number): () => void {
    if (HERDR_TARGET === "double") {
      asDouble(herdr).setFaults({ "worktree create": { late: ms, times: 1 } });
      return () => asDouble(herdr).clearFaults();
    }
    const hook = join(repo.root, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\nsleep ${ms / 1000}\n`, { mode: 0o755 });
    return () => rmSync(hook, { force: true });
  }

  function reportSession(server: HerdrServer, paneId: string, path: string, extra: string[] = []): Promise<HerdrRun> {
    return server.herdr([
      "pane",
      "report-agent-session",
      paneId,
      "--source",
      "herdr:pi",
      "--agent",
      "pi",
      "--agent-session-path",
      path,
      ...extra,
    ]);
  }

  it("process-info without --pane is the focused pane, not $HERDR_PANE_ID; --current is $HERDR_PANE_ID", async () => {
    const made = await herdr.result(["workspace", "create", "--cwd", repo.dir, "--label", "unfocused", "--no-focus"]);
    const other = (made.root_pane as { pane_id: string }).pane_id;
    const env = { ...herdr.clientEnv, HERDR_PANE_ID: other };
    const focused = expectSuccess(
      await herdr.herdr(["pane", "process-info"], { env }),
      "cli:pane:process_info",
      PaneProcessInfoSchema,
    );
    expect(focused.process_info.pane_id).not.toBe(other);
    const current = expectSuccess(
      await herdr.herdr(["pane", "process-info", "--current"], { env }),
      "cli:pane:process_info",
      PaneProcessInfoSchema,
    );
    expect(current.process_info.pane_id).toBe(other);
    await herdr.result(["workspace", "close", (made.workspace as { workspace_id: string }).workspace_id]);
  });
});

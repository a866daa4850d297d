/**
 * Representative hostile input through the real Pi (print mode, the real command, a real child Pi
 * in a private tmux server), in a repository whose directory name holds `$()`, `#()`, quotes and
 * spaces: a branch tmux would format-expand, and a task with terminal escapes and secrets, are
 * handed off with nothing executed, the label made safe, the escapes dropped and the secrets
 * redacted; a branch name the file system cannot store is refused in one sentence, leaving nothing.
 * The rest of the corpus goes through the same transaction in test/integration/hostile-corpus.test.ts.
 */
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { muxLabel } from "../../src/mux/label.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  PROJECT_ROOT,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { killAndWait } from "../support/recovery-rig.ts";
import { runProcess } from "../support/reliability.ts";
import { startPrivateTmux, waitFor, type PrivateTmux, paneEnv } from "../support/tmux.ts";

const CANARY = `CANARY-${randomBytes(4).toString("hex")}`;
const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

function canaries(roots: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.name === CANARY) found.push(join(dir, entry.name));
      else if (entry.isDirectory() && depth > 0 && entry.name !== "node_modules")
        walk(join(dir, entry.name), depth - 1);
    }
  };
  for (const root of roots) walk(root, 10);
  for (const shallow of [PROJECT_ROOT, tmpdir(), "/"]) walk(shallow, 0);
  return found;
}

describe("hostile input through the real Pi", () => {
  let sandbox: PiSandbox;
  let tmux: PrivateTmux;
  let repoRoot: string;
  let parentFile: string;
  let env: Record<string, string>;
  let store: ManifestStore;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-hostile-pi-");
    const dir = join(sandbox.dir, `$(touch ${CANARY}) it's "q" #(touch ${CANARY}) repo`);
    mkdirSync(dir);
    const git = (args: string[]) =>
      execFileSync("git", args, { cwd: dir, env: sandbox.env, timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
    git(["init", "--quiet"]);
    writeFileSync(join(dir, "README.md"), "# hostile\n");
    git(["add", "README.md"]);
    git(["commit", "--quiet", "--no-verify", "-m", "initial"]);
    repoRoot = realpathSync(dir);
    tmux = await startPrivateTmux({ env: sandbox.env });
    env = {
      ...sandbox.env,
      ...(await paneEnv(tmux)),
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000",
    };
    runPiPrint(sandbox, repoRoot, ["--model", FAUX_MODEL, "first question"]);
    parentFile = onlySessionFile(sandbox, repoRoot);
    store = ManifestStore.forAgentDir(sandbox.agentDir);
  });

  afterAll(async () => {
    await tmux?.kill();
    sandbox?.cleanup();
  });

  function handoff(args: string) {
    return runProcess(
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
        `/handoff-worktree ${args}`,
      ],
      {
        env,
        cwd: repoRoot,
        timeoutMs: 90_000,
      },
    );
  }

  it("hands off a tmux-format branch with an escape-laden, secret-bearing task: nothing runs, nothing leaks", async () => {
    const canaryPath = join(sandbox.dir, CANARY);
    const branch = `tmux#(touch\${IFS}${canaryPath})#{pane_id}`;
    const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    const task = `\u001b]0;pwned\u0007\u001b[2Jfix it; token ${secret} and DATABASE_PASSWORD=hunter2hunter2 $(touch ${canaryPath})`;
    const parentBefore = sha256(parentFile);

    const run = await handoff(`${branch} -- ${task}`);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toContain(`Handed off to branch ${branch}`);
    const [entry] = await store.list();
    if (entry === undefined || !entry.ok) throw new Error("no manifest");
    const manifest: Manifest = entry.manifest;
    expect(manifest.state).toBe("running");
    expect(manifest.branch).toBe(branch);
    expect(manifest.repo.root).toBe(repoRoot);
    expect(
      execFileSync("git", ["symbolic-ref", "HEAD"], {
        cwd: manifest.worktree.path,
        env: sandbox.env,
        encoding: "utf8",
      }).trim(),
    ).toBe(`refs/heads/${branch}`);

    // The window: labelled safely, opened in the worktree (the path with #() taken literally).
    const paneId = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
    const [name, cwd] = (
      await tmux.tmux(["display-message", "-p", "-t", paneId, "#{window_name}\t#{pane_current_path}"])
    )
      .replace(/\n$/, "")
      .split("\t");
    expect(name).toBe(muxLabel(branch));
    expect(cwd).toBe(manifest.worktree.path);

    // The task: escapes dropped, secrets redacted, in the manifest and in the child's session.
    expect(manifest.task).toBe(
      `fix it; token [REDACTED:github-token] and DATABASE_PASSWORD=[REDACTED:credential] $(touch ${canaryPath})`,
    );
    const childFile = manifest.child.sessionFile ?? "";
    // The child starts on the task by itself: one kickoff, then an answer.
    await waitFor(
      () => {
        const entries = readEntries(childFile);
        const kickoff = entries.findIndex(
          (e) => e.type === "custom_message" && e.customType === "handoff-worktree-kickoff",
        );
        return (
          kickoff !== -1 && entries.slice(kickoff).some((e) => e.type === "message" && e.message.role === "assistant")
        );
      },
      { timeoutMs: 30_000, description: "the child's first answer on the task" },
    );
    const session = readFileSync(childFile, "utf8");
    const manifestText = readFileSync(store.pathFor(manifest.id), "utf8");
    for (const leaked of [secret, "hunter2hunter2", "\\u001b", "\\u0007", "pwned"]) {
      expect(session).not.toContain(leaked);
      expect(manifestText).not.toContain(leaked);
    }
    expect(canaries([sandbox.dir, tmux.rootDir])).toEqual([]);
    expect(existsSync(canaryPath)).toBe(false);
    expect(sha256(parentFile)).toBe(parentBefore);
    await waitFor(() => !existsSync(`${store.pathFor(manifest.id)}.lock`), { description: "the child's lock" });
    await killAndWait(manifest.child.pid ?? 0);
  });

  it("refuses a branch name the file system cannot store, in one sentence, leaving nothing", async () => {
    const before = {
      manifests: (await store.list()).length,
      branches: execFileSync("git", ["for-each-ref", "refs/heads"], {
        cwd: repoRoot,
        env: sandbox.env,
        encoding: "utf8",
      }),
      windows: await tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"]),
    };
    const run = await handoff(`long/${"x".repeat(300)}`);
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split("\n").at(-1)).toBe(
      `The branch name "long/${"x".repeat(35)}"... (305 characters) has a part of 300 bytes, but git stores each part between slashes as a file name of at most 250 bytes; pick a shorter name.`,
    );
    expect({
      manifests: (await store.list()).length,
      branches: execFileSync("git", ["for-each-ref", "refs/heads"], {
        cwd: repoRoot,
        env: sandbox.env,
        encoding: "utf8",
      }),
      windows: await tmux.tmux(["list-windows", "-a", "-F", "#{window_id}"]),
    }).toEqual(before);
    expect(canaries([sandbox.dir, tmux.rootDir])).toEqual([]);
  });
});

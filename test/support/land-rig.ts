/**
 * A rig for landing tests: a real repository with a real linked worktree on a handoff branch, and
 * a manifest for it in a temp agent dir (state `running`, no window: removal goes through git
 * alone). Plus a byte-level snapshot of everything a landing could change (refs, HEADs, index
 * files, the checkouts' files), so a refusal can be shown to change nothing.
 *
 * Invariants: everything lives in one temp dir, removed by `cleanup()`; a stand-in `pi` process
 * started by `startLivePi` is killed there too.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createLandDeps } from "../../src/cli/deps.ts";
import type { LandDeps } from "../../src/land/land.ts";
import { createTempRepo, type TempRepo } from "./git-repo.ts";
import { NODE_BIN, outsideShellEnv } from "./pi.ts";
import { waitFor } from "./tmux.ts";

export interface LandRig {
  repo: TempRepo;
  agentDir: string;
  store: ManifestStore;
  env: Record<string, string>;
  worktree: string;
  branch: string;
  id: string;
  parentSessionFile: string;
  childSessionFile: string;
  /** Commits `file` in the handoff's worktree. */
  commitInWorktree(file: string, content: string, message: string): string;
  /** One more handoff of the same repository and parent (a sibling), on `branch` from main's tip. */
  addHandoff(branch: string): Promise<{ id: string; worktree: string }>;
  deps(): LandDeps;
  read(): Promise<Manifest>;
  /** A process named `pi` working in the worktree (what recovery counts as the child's live Pi). */
  startLivePi(): Promise<ChildProcess>;
  /** Refs, HEADs, index files and every file of both checkouts, hashed. */
  snapshot(): Record<string, string>;
  cleanup(): void;
}

let counter = 0;

export async function createLandRig(options: { branch?: string } = {}): Promise<LandRig> {
  const repo = createTempRepo({ prefix: "phw-land-", extraCommits: 1 });
  // commit-tree (merge, squash, rebase) needs a committer: the repository's own config, as a user's would be.
  repo.run(["config", "user.name", "Land Test"]);
  repo.run(["config", "user.email", "land-test@example.invalid"]);
  const agentDir = join(repo.dir, "agent");
  mkdirSync(agentDir, { recursive: true });
  const env = outsideShellEnv(repo, agentDir);
  const branch = options.branch ?? "feat/land";
  const store = ManifestStore.forAgentDir(agentDir);
  const parentSessionFile = join(repo.dir, "parent.jsonl");
  writeFileSync(
    parentSessionFile,
    `${JSON.stringify({ type: "session", version: 3, id: "parent", timestamp: new Date().toISOString(), cwd: repo.root })}\n`,
  );
  const addHandoff = async (
    name: string,
    worktree: string,
    childSessionFile: string,
  ): Promise<{ id: string; worktree: string }> => {
    const base = repo.run(["rev-parse", "HEAD"]);
    repo.run(["worktree", "add", "--quiet", "-b", name, worktree, base]);
    const handoffId = `land-test-${process.pid}-${(counter += 1)}`;
    const manifest = newManifest({
      id: handoffId,
      now: new Date(),
      branch: name,
      base: { ref: "main", sha: base },
      repo: { root: repo.root, commonDir: join(repo.root, ".git") },
      parent: { sessionFile: parentSessionFile, sessionId: "parent", leafId: null, cwd: repo.root },
      worktree: { path: worktree },
      mux: { kind: "tmux" },
    });
    await store.create(manifest);
    for (const state of ["provisioned", "forked", "launching", "running"] as const)
      await store.transition(handoffId, state);
    await store.update(handoffId, (m) => {
      m.child.sessionFile = childSessionFile;
    });
    return { id: handoffId, worktree };
  };
  const worktree = join(repo.dir, "worktree");
  const childSessionFile = join(repo.dir, "child.jsonl");
  const { id } = await addHandoff(branch, worktree, childSessionFile);
  const children: ChildProcess[] = [];

  return {
    repo,
    agentDir,
    store,
    env,
    worktree,
    branch,
    id,
    parentSessionFile,
    childSessionFile,
    commitInWorktree: (file, content, message) => repo.commitFile(file, content, message, { cwd: worktree }),
    addHandoff: (name) => {
      const slug = name.replace(/[^a-z0-9]+/gi, "-");
      return addHandoff(name, join(repo.dir, `worktree-${slug}`), join(repo.dir, `child-${slug}.jsonl`));
    },
    deps: () => createLandDeps(env),
    read: async () => {
      const read = await store.read(id);
      if (!read.ok) throw new Error(read.message);
      return read.manifest;
    },
    startLivePi: async () => {
      const child = spawn(NODE_BIN, ["-e", "process.title = 'pi'; setInterval(() => {}, 1000);"], {
        cwd: worktree,
        env: { ...env, PI_HANDOFF_ID: id },
        stdio: "ignore",
      });
      children.push(child);
      const pid = child.pid ?? 0;
      await waitFor(() => safeRead(`/proc/${pid}/comm`).trim() === "pi", {
        timeoutMs: 10_000,
        description: "the stand-in pi to set its title",
      });
      return child;
    },
    snapshot: () => snapshotOf(repo, worktree),
    cleanup: () => {
      for (const child of children) child.kill("SIGKILL");
      repo.cleanup();
    },
  };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function snapshotOf(repo: TempRepo, worktree: string): Record<string, string> {
  const result: Record<string, string> = {};
  result.refs = repo.run(["for-each-ref", "--format=%(refname) %(objectname)"]);
  result["main HEAD"] = readFileSync(join(repo.root, ".git", "HEAD"), "utf8");
  const hash = (file: string): string => createHash("sha256").update(readFileSync(file)).digest("hex");
  result["main index"] = hash(join(repo.root, ".git", "index"));
  for (const name of readdirSync(join(repo.root, ".git", "worktrees"))) {
    const dir = join(repo.root, ".git", "worktrees", name);
    result[`worktree ${name} HEAD`] = readFileSync(join(dir, "HEAD"), "utf8");
    result[`worktree ${name} index`] = hash(join(dir, "index"));
  }
  for (const root of [repo.root, worktree]) {
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (name === ".git") continue;
        if (statSync(path).isDirectory()) walk(path);
        else result[`file ${relative(repo.dir, path)}`] = hash(path);
      }
    };
    walk(root);
  }
  return result;
}

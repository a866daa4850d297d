/**
 * Benchmark (e): `pi-handoff list --json` over many manifests, as a user runs it (a new process,
 * the inventory classifying every handoff against git, the file system and processes).
 *
 * Half of the handoffs have a real worktree of one repository, half a worktree that is gone; every
 * child pid is dead and every tmux server absent, so each handoff takes the full classification.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));

export interface ListBenchResult {
  manifests: number;
  withWorktree: number;
  ms: number[];
}

export async function measureList(options: { runs: number; manifests: number }): Promise<ListBenchResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-list-")));
  const env = {
    ...process.env,
    HOME: join(root, "home"),
    XDG_CONFIG_HOME: join(root, "home", ".config"),
    PI_CODING_AGENT_DIR: join(root, "agent"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Bench",
    GIT_AUTHOR_EMAIL: "bench@example.invalid",
    GIT_COMMITTER_NAME: "Bench",
    GIT_COMMITTER_EMAIL: "bench@example.invalid",
    TMUX: "",
    TMUX_PANE: "",
    HERDR_ENV: "",
  };
  const git = (args: string[], cwd: string) =>
    execFileSync("git", args, { cwd, env, encoding: "utf8", timeout: 60_000 });
  try {
    const repo = join(root, "repo");
    mkdirSync(repo, { recursive: true });
    mkdirSync(env.HOME, { recursive: true });
    git(["init", "-q", "-b", "main"], repo);
    writeFileSync(join(repo, "README.md"), "bench\n");
    git(["add", "-A"], repo);
    git(["commit", "-q", "-m", "bench"], repo);
    const sha = git(["rev-parse", "HEAD"], repo).trim();
    const store = ManifestStore.forAgentDir(env.PI_CODING_AGENT_DIR);
    let withWorktree = 0;
    for (let i = 0; i < options.manifests; i++) {
      const branch = `bench/list-${i}`;
      const path = join(root, "repo.worktrees", `list-${i}`);
      if (i % 2 === 0) {
        git(["worktree", "add", "-q", "-b", branch, path, sha], repo);
        withWorktree++;
      }
      const manifest = newManifest({
        id: store.newId(branch),
        now: new Date(Date.now() - 3_600_000),
        branch,
        base: { ref: "main", sha },
        repo: { root: repo, commonDir: join(repo, ".git") },
        parent: { sessionFile: join(root, "parent.jsonl"), sessionId: "parent", leafId: "abcd1234", cwd: repo },
        worktree: { path },
        mux: {
          kind: "tmux",
          socketPath: join(root, "no-tmux.sock"),
          sessionId: "$1",
          windowId: `@${i}`,
          paneId: `%${i}`,
        },
      });
      const created = await store.create({
        ...manifest,
        state: "running",
        history: [...manifest.history, { state: "running", at: manifest.createdAt }],
        child: {
          sessionFile: join(root, `child-${i}.jsonl`),
          sessionId: `child-${i}`,
          pid: 4_000_000,
          ackAt: manifest.createdAt,
          confirmedBy: "ack",
        },
      });
      if (!created.ok) throw new Error(created.message);
    }
    const ms: number[] = [];
    for (let run = 0; run < options.runs; run++) {
      const started = performance.now();
      const out = execFileSync(process.execPath, [join(PROJECT, "bin", "pi-handoff.mjs"), "list", "--all", "--json"], {
        env,
        encoding: "utf8",
        timeout: 120_000,
      });
      ms.push(performance.now() - started);
      const listed = (JSON.parse(out) as { handoffs: unknown[] }).handoffs.length;
      if (listed !== options.manifests)
        throw new Error(`pi-handoff list showed ${listed} of ${options.manifests} handoffs.`);
    }
    return { manifests: options.manifests, withWorktree, ms };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

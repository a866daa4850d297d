/**
 * Benchmark (l): `pi-handoff tree --json` over a tree of many large sessions, as a user runs it (a
 * new process: the manifests, the inventory of every handoff, each session's usage), cold (no usage
 * cache: every session file read) and warm (the cache: one stat per session), and after some
 * sessions grew (read from where the last read stopped). Also the usage reading alone, in process.
 *
 * The sessions: one generated conversation (session-generator.ts) copied once per node, each copy
 * but the root's followed by its handoff message and a few entries of its own; a ternary tree of
 * manifests joins them. Worktrees do not exist (the inventory's git work stays small: this
 * measures the tree and its usage). "Cold" is the cache's cold, not the OS's: the files were just
 * written, so their pages are in memory.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { SessionUsageCache, usageCacheFile } from "../../src/session/usage.ts";
import { benchEnv } from "./bench-env.ts";
import { generateSession } from "./session-generator.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));

export interface TreeBenchResult {
  sessions: number;
  sessionBytes: number;
  cliColdMs: number[];
  cliWarmMs: number[];
  /** After `grown` sessions each got one more entry. */
  cliGrownMs: number[];
  grown: number;
  usageColdMs: number[];
  usageWarmMs: number[];
}

const ownEntry = (id: string) =>
  `${JSON.stringify({
    type: "message",
    id,
    parentId: null,
    timestamp: "2026-12-01T00:00:00.000Z",
    message: {
      role: "assistant",
      content: [{ type: "text", text: "own work" }],
      usage: {
        input: 5,
        output: 7,
        cacheRead: 11,
        cacheWrite: 13,
        totalTokens: 36,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.001 },
      },
      stopReason: "stop",
      timestamp: 1,
    },
  })}\n`;

export async function measureTreeUsage(options: {
  runs: number;
  sessions: number;
  sessionBytes: number;
}): Promise<TreeBenchResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-tree-")));
  const agentDir = join(root, "agent");
  const env = benchEnv(
    PROJECT,
    { root, home: join(root, "home"), agentDir },
    { TMUX: "", TMUX_PANE: "", HERDR_ENV: "" },
  );
  const git = (args: string[], cwd: string) =>
    execFileSync("git", args, { cwd, env, encoding: "utf8", timeout: 60_000 });
  try {
    const repo = join(root, "repo");
    mkdirSync(repo, { recursive: true });
    mkdirSync(join(root, "home"), { recursive: true });
    git(["init", "-q", "-b", "main"], repo);
    writeFileSync(join(repo, "README.md"), "bench\n");
    git(["add", "-A"], repo);
    git(["commit", "-q", "-m", "bench"], repo);
    const sha = git(["rev-parse", "HEAD"], repo).trim();
    const sessions = join(root, "sessions");
    mkdirSync(sessions, { recursive: true });
    const base = await generateSession({
      file: join(root, "base.jsonl"),
      cwd: repo,
      entries: Math.max(50, Math.round(options.sessionBytes / 2_000)),
      targetBytes: options.sessionBytes,
    });
    const files = Array.from({ length: options.sessions }, (_, i) => join(sessions, `s-${i}.jsonl`));
    const store = ManifestStore.forAgentDir(agentDir);
    for (const [i, file] of files.entries()) {
      copyFileSync(base.file, file);
      if (i === 0) continue;
      const parent = Math.floor((i - 1) / 3);
      const branch = `bench/tree-${i}`;
      const manifest = newManifest({
        id: store.newId(branch),
        now: new Date(Date.now() - 3_600_000 + i),
        branch,
        base: { ref: "main", sha },
        repo: { root: repo, commonDir: join(repo, ".git") },
        parent: { sessionFile: files[parent] ?? "", sessionId: `s-${parent}`, leafId: "abcd1234", cwd: repo },
        worktree: { path: join(root, "repo.worktrees", `tree-${i}`) },
        mux: {
          kind: "tmux",
          socketPath: join(root, "no-tmux.sock"),
          sessionId: "$1",
          windowId: `@${i}`,
          paneId: `%${i}`,
        },
      });
      appendFileSync(
        file,
        `${JSON.stringify({ type: "custom_message", customType: HANDOFF_MESSAGE_TYPE, content: "handoff", display: true, details: { handoffId: manifest.id }, id: "h0000000", parentId: null, timestamp: "2026-12-01T00:00:00.000Z" })}\n${ownEntry("o0000001")}${ownEntry("o0000002")}`,
      );
      const created = await store.create({
        ...manifest,
        state: "running",
        history: [...manifest.history, { state: "running", at: manifest.createdAt }],
        child: {
          sessionFile: file,
          sessionId: `s-${i}`,
          pid: 4_000_000,
          ackAt: manifest.createdAt,
          confirmedBy: "ack",
        },
      });
      if (!created.ok) throw new Error(created.message);
    }
    const tree = (): number => {
      const started = performance.now();
      const out = execFileSync(process.execPath, [join(PROJECT, "bin", "pi-handoff.mjs"), "tree", "--json"], {
        cwd: repo,
        env,
        encoding: "utf8",
        timeout: 300_000,
        maxBuffer: 256 * 1024 * 1024,
      });
      const ms = performance.now() - started;
      const nodes = (node: { children: unknown[] }): number =>
        1 + node.children.reduce<number>((sum, child) => sum + nodes(child as { children: unknown[] }), 0);
      const shown = (JSON.parse(out) as { roots: { children: unknown[] }[] }).roots.reduce((n, r) => n + nodes(r), 0);
      if (shown !== options.sessions)
        throw new Error(`pi-handoff tree showed ${shown} of ${options.sessions} sessions.`);
      return ms;
    };
    const result: TreeBenchResult = {
      sessions: options.sessions,
      sessionBytes: base.bytes,
      cliColdMs: [],
      cliWarmMs: [],
      cliGrownMs: [],
      grown: Math.ceil(options.sessions / 10),
      usageColdMs: [],
      usageWarmMs: [],
    };
    for (let run = 0; run < options.runs; run++) {
      rmSync(usageCacheFile(agentDir), { force: true });
      result.cliColdMs.push(tree());
      result.cliWarmMs.push(tree());
      for (const file of files.slice(-result.grown)) appendFileSync(file, ownEntry(`g${run}`.padEnd(8, "0")));
      result.cliGrownMs.push(tree());
      // The usage alone: every session read (no cache), then each one stat'ed (the cache in memory).
      const cache = new SessionUsageCache(undefined);
      let started = performance.now();
      for (const file of files) await cache.usageOf(file);
      result.usageColdMs.push(performance.now() - started);
      started = performance.now();
      for (const file of files) await cache.usageOf(file);
      result.usageWarmMs.push(performance.now() - started);
    }
    return result;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

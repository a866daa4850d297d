/**
 * Benchmark (i): the conflict forecast (`forecastHandoffs`, src/forecast/forecast.ts) over 10
 * handoffs of a 5,000-file repository, against its baseline: one `git merge-tree --write-tree`
 * call of one handoff into main. The forecast makes 10 merges into the target and 45 between
 * siblings (in two merge-tree processes), and one ahead-behind count; the ratio says what the 55
 * merges cost in units of one. `warmMs`: the same forecast answered from its cache (no tip moved),
 * what each widget refresh of idle children costs.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GitCli } from "../../src/git/git.ts";
import { LandGit } from "../../src/git/land.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ForecastCache, forecastHandoffs } from "../../src/forecast/forecast.ts";

export interface ForecastBenchResult {
  files: number;
  handoffs: number;
  merges: number;
  forecastMs: number[];
  warmMs: number[];
  oneMergeTreeMs: number[];
  /** Median forecast over median single merge-tree. */
  ratio: number;
  conflicts: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export async function measureForecast(options: {
  runs: number;
  files: number;
  handoffs: number;
}): Promise<ForecastBenchResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-forecast-")));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    XDG_CONFIG_HOME: join(root, "home", ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Bench",
    GIT_AUTHOR_EMAIL: "bench@example.invalid",
    GIT_COMMITTER_NAME: "Bench",
    GIT_COMMITTER_EMAIL: "bench@example.invalid",
  };
  const repo = join(root, "repo");
  const git = (args: string[], input?: string): string =>
    execFileSync("git", args, {
      cwd: repo,
      env,
      encoding: "utf8",
      timeout: 120_000,
      ...(input === undefined ? {} : { input }),
    });
  try {
    mkdirSync(env.HOME ?? root, { recursive: true });
    mkdirSync(repo, { recursive: true });
    git(["init", "-q", "-b", "main"]);
    for (let index = 0; index < options.files; index += 1) {
      const dir = join(repo, `src/m${index % 50}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `f${index}.ts`), `export const value${index} = ${index};\n`.repeat(20));
    }
    git(["add", "-A"]);
    git(["commit", "-q", "-m", "5,000 files"]);
    const base = git(["rev-parse", "HEAD"]).trim();
    // Each handoff changes a few files of its own and one shared with its neighbour (some conflicts).
    const manifests: Manifest[] = [];
    for (let handoff = 0; handoff < options.handoffs; handoff += 1) {
      const branch = `bench/forecast-${handoff}`;
      git(["checkout", "-q", "-b", branch, base]);
      for (const file of [handoff * 7, handoff * 7 + 1, handoff * 7 + 2, (handoff * 7 + 7) % options.files]) {
        writeFileSync(join(repo, `src/m${file % 50}`, `f${file}.ts`), `export const value${file} = "${branch}";\n`);
      }
      git(["commit", "-q", "-am", `work of ${branch}`]);
      manifests.push(
        newManifest({
          id: `bench-forecast-${handoff}`,
          now: new Date(),
          branch,
          base: { ref: "main", sha: base },
          repo: { root: repo, commonDir: join(repo, ".git") },
          parent: { sessionFile: join(root, "parent.jsonl"), sessionId: "parent", leafId: null, cwd: repo },
          worktree: { path: join(root, `wt-${handoff}`) },
          mux: { kind: "tmux" },
        }),
      );
    }
    git(["checkout", "-q", "main"]);
    writeFileSync(join(repo, "src/m0", "f0.ts"), "export const value0 = 'main';\n");
    git(["commit", "-q", "-am", "main moves"]);
    const main = git(["rev-parse", "HEAD"]).trim();
    const first = git(["rev-parse", "bench/forecast-1"]).trim();
    const deps = { git: new GitCli({ env }), landGit: new LandGit({ env }) };
    const forecastMs: number[] = [];
    const warmMs: number[] = [];
    const oneMergeTreeMs: number[] = [];
    let conflicts = 0;
    for (let run = 0; run < options.runs; run += 1) {
      // Interleaved, so a slow spell of the machine hits both alike.
      let started = performance.now();
      git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", main, first]);
      oneMergeTreeMs.push(performance.now() - started);
      const cache = new ForecastCache();
      started = performance.now();
      const forecast = await forecastHandoffs(deps, manifests, cache);
      forecastMs.push(performance.now() - started);
      conflicts = forecast.entries.reduce(
        (sum, entry) =>
          entry.code !== "to-land"
            ? sum
            : sum + entry.conflicts.length + entry.siblings.filter((s) => s.conflicts.length > 0).length,
        0,
      );
      started = performance.now();
      await forecastHandoffs(deps, manifests, cache);
      warmMs.push(performance.now() - started);
    }
    const round = (values: number[]) => values.map((value) => Math.round(value * 10) / 10);
    return {
      files: options.files,
      handoffs: options.handoffs,
      merges: options.handoffs + (options.handoffs * (options.handoffs - 1)) / 2,
      forecastMs: round(forecastMs),
      warmMs: round(warmMs),
      oneMergeTreeMs: round(oneMergeTreeMs),
      ratio: Math.round((median(forecastMs) / median(oneMergeTreeMs)) * 100) / 100,
      conflicts,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

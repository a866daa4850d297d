/**
 * Benchmark (m): landing 8 children through the merge queue, against the same work by hand.
 * The queue: one `pi-handoff land --all --approve-repo-code` with a trivial check (`true`). By
 * hand, for each child in turn: `pi-handoff forecast`, then the check (`true`, in its worktree),
 * then `pi-handoff land <id>` (by rebase once main has moved on). Each child changes a file of its
 * own, so all 8 land either way. Reported: both wall times, the checks' own time (8 runs of
 * `true`), the queue's overhead beyond the checks per child, their ratio, and how many children
 * each way landed without a person typing a command for it.
 *
 * Invariants: everything lives in one temp dir (repository, agent dir, HOME); each timed command
 * is the real CLI as a person runs it; both ways start from the same state, built afresh per run.
 * Run alone: `node scripts/bench/land-queue.ts [runs]`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { benchEnv } from "./bench-env.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const NODE_BIN = process.execPath;
const CLI = join(PROJECT, "bin", "pi-handoff.mjs");

export interface LandQueueBenchResult {
  handoffs: number;
  /** `land --all`, from the command to its report. */
  queueMs: number[];
  /** forecast, check and land per child, one after another, in all. */
  byHandMs: number[];
  /** The 8 checks alone (`true` in each worktree). */
  checksMs: number[];
  /** Median queue over median by hand. */
  ratio: number;
  /** The queue's median time beyond its checks, per child. */
  overheadPerChildMs: number;
  /** Children landed by one command (the queue), and by hand (each needed its own commands). */
  landedWithoutPerson: { queue: number; byHand: number };
  /** Commands a person types: the queue's one against forecast, the check and land per child. */
  commands: { queue: number; byHand: number };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export interface Fleet {
  root: string;
  repo: string;
  env: Record<string, string>;
  children: { id: string; worktree: string }[];
  git: (args: string[], cwd?: string) => string;
}

/** A repository on main, a parent session, and `handoffs` children each with one commit of its own. */
export async function makeFleet(scratch: string, name: string, handoffs: number): Promise<Fleet> {
  const root = join(scratch, name);
  const repo = join(root, "repo");
  const agentDir = join(root, "agent");
  const home = join(root, "home");
  for (const dir of [repo, agentDir, home]) mkdirSync(dir, { recursive: true });
  const env = benchEnv(PROJECT, { root, home, agentDir });
  const git = (args: string[], cwd = repo): string =>
    execFileSync("git", args, { cwd, env, encoding: "utf8", timeout: 60_000 }).trim();
  git(["init", "-q", "-b", "main"]);
  for (let file = 0; file < 50; file += 1) writeFileSync(join(repo, `f${file}.txt`), `file ${file}\n`);
  mkdirSync(join(repo, ".pi"), { recursive: true });
  writeFileSync(join(repo, ".pi", "handoff-worktree.json"), JSON.stringify({ check: ["true"] }));
  git(["add", "-A"]);
  git(["commit", "-q", "-m", "start"]);
  const base = git(["rev-parse", "HEAD"]);
  const parentSessionFile = join(root, "parent.jsonl");
  writeFileSync(
    parentSessionFile,
    `${JSON.stringify({ type: "session", version: 3, id: "parent", timestamp: new Date().toISOString(), cwd: repo })}\n`,
  );
  const store = ManifestStore.forAgentDir(agentDir);
  const children: Fleet["children"] = [];
  for (let index = 0; index < handoffs; index += 1) {
    const branch = `bench/child-${index}`;
    const worktree = join(root, `worktree-${index}`);
    git(["worktree", "add", "--quiet", "-b", branch, worktree, base]);
    writeFileSync(join(worktree, `child-${index}.txt`), `child ${index}\n`);
    git(["add", "-A"], worktree);
    git(["commit", "-q", "-m", `child ${index}`], worktree);
    const id = `bench-queue-${index}-${process.pid}`;
    await store.create(
      newManifest({
        id,
        // Made one second apart: the queue's order among children that do not clash is by creation.
        now: new Date(Date.now() - (handoffs - index) * 1000),
        branch,
        base: { ref: "main", sha: base },
        repo: { root: repo, commonDir: join(repo, ".git") },
        parent: { sessionFile: parentSessionFile, sessionId: "parent", leafId: null, cwd: repo },
        worktree: { path: worktree },
        mux: { kind: "tmux" },
      }),
    );
    for (const state of ["provisioned", "forked", "launching", "running"] as const) await store.transition(id, state);
    await store.update(id, (manifest) => {
      manifest.child.sessionFile = join(root, `child-${index}.jsonl`);
    });
    children.push({ id, worktree });
  }
  return { root, repo, env, children, git };
}

/** The real CLI; a refusal (exit 1 of a land that sent a child back) is data for the caller. */
function cli(fleet: Fleet, args: string[]): { status: number; stdout: string } {
  try {
    const stdout = execFileSync(NODE_BIN, [CLI, ...args], {
      cwd: fleet.repo,
      env: fleet.env,
      encoding: "utf8",
      timeout: 300_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: 0, stdout };
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    throw new Error(`pi-handoff ${args.join(" ")} failed (${failed.status}): ${failed.stderr ?? ""}`);
  }
}

function landedCount(fleet: Fleet): number {
  return Number(fleet.git(["rev-list", "--count", "main"])) - 1;
}

export async function measureLandQueue(options: { runs: number; handoffs: number }): Promise<LandQueueBenchResult> {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-queue-")));
  const queueMs: number[] = [];
  const byHandMs: number[] = [];
  const checksMs: number[] = [];
  let landedByQueue = 0;
  let landedByHand = 0;
  try {
    for (let run = 0; run < options.runs; run += 1) {
      const queued = await makeFleet(scratch, `queue-${run}`, options.handoffs);
      let started = performance.now();
      cli(queued, ["land", "--all", "--approve-repo-code"]);
      queueMs.push(performance.now() - started);
      landedByQueue = landedCount(queued);

      const byHand = await makeFleet(scratch, `hand-${run}`, options.handoffs);
      started = performance.now();
      for (const [index, child] of byHand.children.entries()) {
        cli(byHand, ["forecast"]);
        execFileSync("true", [], { cwd: child.worktree, env: byHand.env, timeout: 60_000 });
        // The first lands by fast-forward; then main has moved on, so each lands by rebase.
        cli(byHand, ["land", child.id, ...(index === 0 ? [] : ["--strategy", "rebase"])]);
      }
      byHandMs.push(performance.now() - started);
      landedByHand = landedCount(byHand);

      started = performance.now();
      for (const child of byHand.children) execFileSync("true", [], { cwd: child.worktree, timeout: 60_000 });
      checksMs.push(performance.now() - started);
      rmSync(queued.root, { recursive: true, force: true });
      rmSync(byHand.root, { recursive: true, force: true });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  if (landedByQueue !== options.handoffs || landedByHand !== options.handoffs)
    throw new Error(`Landed ${landedByQueue} by the queue and ${landedByHand} by hand, not ${options.handoffs} each.`);
  const queue = median(queueMs);
  return {
    handoffs: options.handoffs,
    queueMs,
    byHandMs,
    checksMs,
    ratio: Math.round((queue / median(byHandMs)) * 100) / 100,
    overheadPerChildMs: Math.round((queue - median(checksMs)) / options.handoffs),
    landedWithoutPerson: { queue: landedByQueue, byHand: 0 },
    commands: { queue: 1, byHand: 3 * options.handoffs },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const runs = Number(process.argv[2] ?? 3);
  console.log(JSON.stringify(await measureLandQueue({ runs, handoffs: 8 }), null, 2));
}

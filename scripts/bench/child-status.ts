/**
 * Benchmark (f): the parent's view of many own handoffs (src/watch/watch.ts).
 *
 * 1. A refresh (`ownHandoffStatuses`) over 50 handoffs, each with a large child session: wall time
 *    and the longest event-loop stall during it (`perf_hooks.monitorEventLoopDelay`, 1 ms
 *    resolution); the goal is no stall over 50 ms. Children that publish their state
 *    (child/child-state.ts, what this version's children do): the state file and the lease are
 *    read, never the session; cold (every state file read) and warm (the watch's `ChildStates`
 *    kept, none changed: one stat each). The baseline, named `legacy`: the same children
 *    publishing nothing (older versions, and every child before this change), read from their
 *    session tails, cold and warm (the watch's `SessionTails` kept, no session changed).
 * 2. The change-to-widget delay over a scripted run: a child process (the stand-in
 *    test/support/fixtures/state-writer.ts, the project's own publisher on 50 leased sessions)
 *    makes scripted changes, one every `spacingMs`, round-robin over the children; a
 *    `HandoffWatch` here, with real directory watching and no poll at all, tells each change; the
 *    delay is from the writer's file in place to the watch's `onChange` showing it (what the
 *    widget is drawn from, before Pi's own render). Median, 95th percentile and worst, with the
 *    longest event-loop stall of the whole run.
 *
 * Every child pid is a live process (this one, or the writer), so liveness is judged for real.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ChildStatePublisher, ChildStates } from "../../src/child/child-state.ts";
import { acquireSessionLease } from "../../src/child/lease.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { HandoffWatch, ownHandoffStatuses, type OwnHandoff, type WatchDeps } from "../../src/watch/watch.ts";
import { SessionTails } from "../../src/session/tail.ts";

const WRITER = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "test",
  "support",
  "fixtures",
  "state-writer.ts",
);

export interface ChildStatusBenchResult {
  handoffs: number;
  sessionBytes: number;
  /** Children that publish their state: a refresh's wall time and longest stall, ms. */
  ms: number[];
  maxEventLoopDelayMs: number[];
  /** The baseline: the same children publishing nothing, read from their session tails (cold, then warm). */
  legacyMs: number[];
  legacyMaxEventLoopDelayMs: number[];
  warmMs: number[];
  warmMaxEventLoopDelayMs: number[];
  /** Publishing children, warm (their state files unchanged since the watch's last refresh). */
  ownWarmMs: number[];
  ownWarmMaxEventLoopDelayMs: number[];
  /** Median refresh time of publishing children over the baseline's, warm and cold. */
  ratioToLegacyWarm: number;
  ratioToLegacyCold: number;
  changeToWidget: ChangeToWidgetResult;
}

export interface ChangeToWidgetResult {
  changes: number;
  spacingMs: number;
  /** Changes the watch showed (the others are `missed`). */
  shown: number;
  missed: number;
  medianMs: number;
  p95Ms: number;
  worstMs: number;
  maxEventLoopDelayMs: number;
}

function sessionText(targetBytes: number): string {
  const header = JSON.stringify({
    type: "session",
    version: 3,
    id: "bench",
    timestamp: new Date().toISOString(),
    cwd: "/bench",
  });
  const filler = JSON.stringify({
    type: "message",
    id: "00000000",
    parentId: null,
    timestamp: new Date().toISOString(),
    message: { role: "user", content: "x".repeat(2000) },
  });
  const last = JSON.stringify({
    type: "message",
    id: "00000001",
    parentId: "00000000",
    timestamp: new Date().toISOString(),
    message: { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" },
  });
  const count = Math.max(1, Math.floor(targetBytes / (filler.length + 1)));
  return `${header}\n${Array.from({ length: count }, () => filler).join("\n")}\n${last}\n`;
}

const round = (ms: number): number => Math.round(ms * 10) / 10;

function ratio(ours: readonly { ms: number }[], baseline: readonly { ms: number }[]): number {
  const of = (runs: readonly { ms: number }[]) =>
    percentile(
      runs.map((run) => run.ms),
      50,
    );
  return Math.round((of(ours) / of(baseline)) * 100) / 100;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface World {
  root: string;
  agentDir: string;
  store: ManifestStore;
  parent: { sessionFile: string; sessionId: string };
  files: string[];
  manifests: Manifest[];
}

async function makeWorld(name: string, handoffs: number, text: string, pid: number): Promise<World> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `phw-bench-status-${name}-`)));
  const agentDir = join(root, "agent");
  const store = ManifestStore.forAgentDir(agentDir);
  const parent = { sessionFile: join(root, "parent.jsonl"), sessionId: "bench-parent" };
  mkdirSync(join(root, "sessions"), { recursive: true });
  const files: string[] = [];
  const manifests: Manifest[] = [];
  for (let i = 0; i < handoffs; i++) {
    const branch = `bench/status-${i}`;
    const childFile = join(root, "sessions", `child-${i}.jsonl`);
    writeFileSync(childFile, text);
    const manifest = newManifest({
      id: store.newId(branch),
      now: new Date(),
      branch,
      base: { ref: "main", sha: "0".repeat(40) },
      repo: { root: join(root, "repo"), commonDir: join(root, "repo", ".git") },
      parent: { ...parent, leafId: null, cwd: join(root, "repo") },
      worktree: { path: join(root, "worktrees", String(i)) },
      mux: { kind: "tmux" },
    });
    manifest.state = "running";
    manifest.child = { sessionFile: childFile, pid, ackAt: new Date().toISOString() };
    await store.create(manifest);
    files.push(childFile);
    manifests.push(manifest);
  }
  return { root, agentDir, store, parent, files, manifests };
}

async function timedRefresh(
  deps: WatchDeps,
  world: World,
  expected: number,
): Promise<{ ms: number; maxDelayMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const started = performance.now();
  const statuses = await ownHandoffStatuses(deps, world.parent);
  const ms = round(performance.now() - started);
  histogram.disable();
  if (statuses.length !== expected) throw new Error(`expected ${expected} statuses, got ${statuses.length}`);
  return { ms, maxDelayMs: round(histogram.max / 1e6) };
}

export async function measureChildStatus(options: {
  runs: number;
  handoffs: number;
  sessionBytes: number;
  changes?: number;
  spacingMs?: number;
}): Promise<ChildStatusBenchResult> {
  const text = sessionText(options.sessionBytes);
  // 1. Refreshes: the baseline (tails) and children that publish (this process holds their leases and speaks for them).
  const legacy = await makeWorld("legacy", options.handoffs, text, process.pid);
  const published = await makeWorld("published", options.handoffs, text, process.pid);
  try {
    for (const file of published.files) {
      const lease = await acquireSessionLease({ agentDir: published.agentDir, sessionFile: file });
      if (!lease.ok) throw new Error(lease.message);
      const publisher = new ChildStatePublisher({ agentDir: published.agentDir });
      publisher.begin(file);
      publisher.setHolding(true);
      publisher.apply({ type: "ready" });
      await publisher.flush();
    }
    const legacyDeps: WatchDeps = { store: legacy.store, now: () => new Date(), agentDir: legacy.agentDir };
    const publishedDeps: WatchDeps = { store: published.store, now: () => new Date(), agentDir: published.agentDir };
    const cold = [];
    const own = [];
    for (let run = 0; run < options.runs; run++) {
      // Interleaved, so a slow spell of the machine hits both alike.
      cold.push(await timedRefresh({ ...legacyDeps, tails: new SessionTails() }, legacy, options.handoffs));
      own.push(
        await timedRefresh(
          { ...publishedDeps, childStates: new ChildStates(published.agentDir) },
          published,
          options.handoffs,
        ),
      );
    }
    // Warm: what every later poll of a watch costs (nothing changed since its last refresh).
    const kept = new SessionTails();
    const keptStates = new ChildStates(published.agentDir);
    await timedRefresh({ ...legacyDeps, tails: kept }, legacy, options.handoffs);
    await timedRefresh({ ...publishedDeps, childStates: keptStates }, published, options.handoffs);
    const warm = [];
    const ownWarm = [];
    for (let run = 0; run < options.runs; run++) {
      warm.push(await timedRefresh({ ...legacyDeps, tails: kept }, legacy, options.handoffs));
      ownWarm.push(await timedRefresh({ ...publishedDeps, childStates: keptStates }, published, options.handoffs));
    }
    const changeToWidget = await measureChangeToWidget({
      handoffs: options.handoffs,
      text,
      changes: options.changes ?? 300,
      spacingMs: options.spacingMs ?? 20,
    });
    return {
      handoffs: options.handoffs,
      sessionBytes: text.length,
      ms: own.map((r) => r.ms),
      maxEventLoopDelayMs: own.map((r) => r.maxDelayMs),
      legacyMs: cold.map((r) => r.ms),
      legacyMaxEventLoopDelayMs: cold.map((r) => r.maxDelayMs),
      warmMs: warm.map((r) => r.ms),
      warmMaxEventLoopDelayMs: warm.map((r) => r.maxDelayMs),
      ownWarmMs: ownWarm.map((r) => r.ms),
      ownWarmMaxEventLoopDelayMs: ownWarm.map((r) => r.maxDelayMs),
      ratioToLegacyWarm: ratio(ownWarm, warm),
      ratioToLegacyCold: ratio(own, cold),
      changeToWidget,
    };
  } finally {
    rmSync(legacy.root, { recursive: true, force: true });
    rmSync(published.root, { recursive: true, force: true });
  }
}

/** 2. The scripted run (see the header). */
async function measureChangeToWidget(options: {
  handoffs: number;
  text: string;
  changes: number;
  spacingMs: number;
}): Promise<ChangeToWidgetResult> {
  // The writer's pid is not known before it starts: the manifests are written once it has taken its leases.
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-widget-")));
  const agentDir = join(root, "agent");
  const files = Array.from({ length: options.handoffs }, (_, i) => join(root, "sessions", `child-${i}.jsonl`));
  mkdirSync(join(root, "sessions"), { recursive: true });
  for (const file of files) writeFileSync(file, options.text);
  const writer = spawn(process.execPath, [WRITER, agentDir, ...files], { stdio: ["pipe", "pipe", "inherit"] });
  const writtenAt = new Map<string, number>();
  let ready: () => void = () => {};
  const readyNow = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: writer.stdout }).on("line", (line) => {
    const said = JSON.parse(line) as { ready?: boolean; i?: number; state?: string; seq?: number; at?: number };
    if (said.ready === true) ready();
    else if (said.i !== undefined && said.at !== undefined) writtenAt.set(`${said.i} ${said.seq}`, said.at);
  });
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let watch: HandoffWatch | undefined;
  try {
    await readyNow;
    const store = ManifestStore.forAgentDir(agentDir);
    const parent = { sessionFile: join(root, "parent.jsonl"), sessionId: "bench-parent" };
    const idOf: string[] = [];
    for (const [i, file] of files.entries()) {
      const branch = `bench/widget-${i}`;
      const manifest = newManifest({
        id: store.newId(branch),
        now: new Date(),
        branch,
        base: { ref: "main", sha: "0".repeat(40) },
        repo: { root: join(root, "repo"), commonDir: join(root, "repo", ".git") },
        parent: { ...parent, leafId: null, cwd: join(root, "repo") },
        worktree: { path: join(root, "worktrees", String(i)) },
        mux: { kind: "tmux" },
      });
      manifest.state = "running";
      manifest.child = { sessionFile: file, pid: writer.pid ?? 0, ackAt: new Date().toISOString() };
      await store.create(manifest);
      idOf.push(manifest.id);
    }
    // What each child must show next, and when the watch first showed it.
    const expecting = new Map<number, { state: string; seq: number; shownAt?: number }>();
    const delays: number[] = [];
    const onChange = (own: OwnHandoff[]): void => {
      const now = Date.now();
      for (const handoff of own) {
        const i = idOf.indexOf(handoff.id);
        const wanted = expecting.get(i);
        if (wanted === undefined || wanted.shownAt !== undefined || handoff.status.state !== wanted.state) continue;
        wanted.shownAt = now;
      }
    };
    watch = new HandoffWatch({ deps: { store, now: () => new Date(), agentDir }, parent, onChange });
    const first = await watch.refresh();
    if (first.length !== options.handoffs)
      throw new Error(`expected ${options.handoffs} children, saw ${first.length}`);
    histogram.enable();
    // Each child's writes so far: starting, idle (seq 1, 2); its next change is seq 3.
    const seqs = files.map(() => 2);
    const settled = files.map(() => true);
    const pending: { i: number; seq: number; wanted: { state: string; seq: number; shownAt?: number } }[] = [];
    for (let change = 0; change < options.changes; change++) {
      const i = change % options.handoffs;
      const working = settled[i] === true;
      settled[i] = !working;
      const seq = (seqs[i] ?? 2) + 1;
      seqs[i] = seq;
      const wanted = { state: working ? "working" : "idle", seq };
      expecting.set(i, wanted);
      pending.push({ i, seq, wanted });
      writer.stdin.write(`${JSON.stringify({ i, event: { type: working ? "agent_start" : "agent_settled" } })}\n`);
      await new Promise((resolve) => setTimeout(resolve, options.spacingMs));
    }
    // The last changes: a moment to show.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    histogram.disable();
    let missed = 0;
    for (const { i, seq, wanted } of pending) {
      const at = writtenAt.get(`${i} ${seq}`);
      if (at === undefined || wanted.shownAt === undefined) missed += 1;
      else delays.push(Math.max(0, wanted.shownAt - at));
    }
    return {
      changes: options.changes,
      spacingMs: options.spacingMs,
      shown: delays.length,
      missed,
      medianMs: percentile(delays, 50),
      p95Ms: percentile(delays, 95),
      worstMs: Math.max(...delays),
      maxEventLoopDelayMs: round(histogram.max / 1e6),
    };
  } finally {
    watch?.stop();
    writer.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * Benchmark (f): the parent's widget refresh (`ownHandoffStatuses`, src/recovery/watch.ts) over
 * many own handoffs, each with a large child session: wall time and the longest event-loop stall
 * during a refresh (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution). The goal is no stall over
 * 50 ms with 50 handoffs; the reads are bounded by the session tails, whatever the sessions' size.
 * Cold: every tail read (a watch's first refresh); warm: the watch's `SessionTails` kept across
 * refreshes, with no session changed since (what every later 2 s refresh of idle children does).
 *
 * Every child pid is this process's own (alive, but not a `pi`), so the process probe runs fully.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { ownHandoffStatuses, type WatchDeps } from "../../src/recovery/watch.ts";
import { SessionTails } from "../../src/session/tail.ts";

export interface ChildStatusBenchResult {
  handoffs: number;
  sessionBytes: number;
  ms: number[];
  maxEventLoopDelayMs: number[];
  warmMs: number[];
  warmMaxEventLoopDelayMs: number[];
}

function sessionText(targetBytes: number): string {
  const header = JSON.stringify({ type: "session", version: 3, id: "bench", timestamp: new Date().toISOString(), cwd: "/bench" });
  const filler = JSON.stringify({ type: "message", id: "00000000", parentId: null, timestamp: new Date().toISOString(), message: { role: "user", content: "x".repeat(2000) } });
  const last = JSON.stringify({ type: "message", id: "00000001", parentId: "00000000", timestamp: new Date().toISOString(), message: { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" } });
  const count = Math.max(1, Math.floor(targetBytes / (filler.length + 1)));
  return `${header}\n${Array.from({ length: count }, () => filler).join("\n")}\n${last}\n`;
}

export async function measureChildStatus(options: { runs: number; handoffs: number; sessionBytes: number }): Promise<ChildStatusBenchResult> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-status-")));
  try {
    const store = ManifestStore.forAgentDir(join(root, "agent"));
    const parentFile = join(root, "parent.jsonl");
    const text = sessionText(options.sessionBytes);
    mkdirSync(join(root, "sessions"), { recursive: true });
    for (let i = 0; i < options.handoffs; i++) {
      const branch = `bench/status-${i}`;
      const childFile = join(root, "sessions", `child-${i}.jsonl`);
      writeFileSync(childFile, text);
      const manifest = newManifest({
        id: store.newId(branch),
        now: new Date(),
        branch,
        base: { ref: "main", sha: "0".repeat(40) },
        repo: { root: join(root, "repo"), commonDir: join(root, "repo", ".git") },
        parent: { sessionFile: parentFile, sessionId: "bench-parent", leafId: null, cwd: join(root, "repo") },
        worktree: { path: join(root, "worktrees", String(i)) },
        mux: { kind: "tmux" },
      });
      manifest.state = "running";
      manifest.child = { sessionFile: childFile, pid: process.pid, ackAt: new Date().toISOString() };
      await store.create(manifest);
    }
    const deps: WatchDeps = { store, now: () => new Date(), agentDir: join(root, "agent") };
    const parent = { sessionFile: parentFile, sessionId: "bench-parent" };
    const refresh = async (tails: SessionTails): Promise<{ ms: number; maxDelayMs: number }> => {
      const histogram = monitorEventLoopDelay({ resolution: 1 });
      histogram.enable();
      const started = performance.now();
      const statuses = await ownHandoffStatuses({ ...deps, tails }, parent);
      const ms = Math.round((performance.now() - started) * 10) / 10;
      histogram.disable();
      if (statuses.length !== options.handoffs) throw new Error(`expected ${options.handoffs} statuses, got ${statuses.length}`);
      return { ms, maxDelayMs: Math.round((histogram.max / 1e6) * 10) / 10 };
    };
    const cold = [];
    for (let run = 0; run < options.runs; run++) cold.push(await refresh(new SessionTails()));
    const kept = new SessionTails();
    await refresh(kept);
    const warm = [];
    for (let run = 0; run < options.runs; run++) warm.push(await refresh(kept));
    return {
      handoffs: options.handoffs,
      sessionBytes: text.length,
      ms: cold.map((r) => r.ms),
      maxEventLoopDelayMs: cold.map((r) => r.maxDelayMs),
      warmMs: warm.map((r) => r.ms),
      warmMaxEventLoopDelayMs: warm.map((r) => r.maxDelayMs),
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

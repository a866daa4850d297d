/**
 * How the lineage scan scales with the size of the pi-subagents store: the same lineage (a child,
 * its parent, and three runs of the parent) scanned next to 20 unrelated runs and next to 10,000,
 * as the ratio of median wall times. Unrelated runs are finished runs of other sessions (what 30
 * days of retention accumulate), written by pi-subagents' own writer code.
 *
 * `node scripts/bench/lineage-scan.ts [--quick]` prints a small table; `measureLineageScan()` is
 * the entry point for `npm run bench`. Nothing here is asserted by the test suite.
 *
 * Invariants: everything is written under one temp dir, removed at the end; the scan reads only.
 */
import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { installTypeScriptLoader } from "../../bin/native-loader.mjs";
import { walkLineage } from "../../src/adoption/ancestry.ts";
import { scanSources } from "../../src/adoption/scan.ts";
import { piSubagentsSource } from "../../src/adoption/sources/pi-subagents.ts";
import type { ScanContext } from "../../src/adoption/types.ts";
import {
  loadPiSubagentsWriters,
  PiSubagentsFixture,
  type ModuleImporter,
} from "../../test/support/pi-subagents-fixtures.ts";

export interface ScanTiming {
  unrelatedRuns: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** Runs the scan adopted (the same lineage in both stores: must be equal). */
  adopted: number;
}

export interface LineageScanBenchResult {
  small: ScanTiming;
  large: ScanTiming;
  /** large.medianMs / small.medianMs */
  ratio: number;
  repeats: number;
}

export interface LineageScanBenchOptions {
  unrelatedSmall?: number;
  unrelatedLarge?: number;
  /** Timed scans per store (at least 5 for a median worth reading). */
  repeats?: number;
  /** How the package's writer modules are loaded (by default through bin/native-loader.mjs). */
  importModule?: ModuleImporter;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function headerFile(path: string, id: string, timestamp: string, parentSession?: string): void {
  writeFileSync(
    path,
    `${JSON.stringify({ type: "session", version: 3, id, timestamp, cwd: "/bench", ...(parentSession === undefined ? {} : { parentSession }) })}\n`,
  );
}

/** One store: the lineage's own three runs plus `unrelated` finished runs of 1 in 10 other sessions. */
function fillStore(
  fixture: PiSubagentsFixture,
  parentFile: string,
  forkedAt: number,
  unrelated: number,
  sessionsDir: string,
): void {
  // The lineage's runs: running (this process stands in for the runner), finished and never
  // delivered, and delivered before the fork (skipped).
  fixture.startRun({
    runId: "lineage-active",
    sessionId: parentFile,
    agents: ["scout", "worker"],
    mode: "chain",
    pid: process.pid,
  });
  fixture.startRun({ runId: "lineage-finished", sessionId: parentFile, pid: process.pid, startedAt: forkedAt - 5_000 });
  fixture.finishRun("lineage-finished", { endedAt: forkedAt - 4_000, summary: "done" });
  fixture.startRun({
    runId: "lineage-delivered",
    sessionId: parentFile,
    pid: process.pid,
    startedAt: forkedAt - 5_000,
  });
  fixture.finishRun("lineage-delivered", { endedAt: forkedAt - 4_000, delivery: "removed" });
  for (let i = 0; i < unrelated; i += 1) {
    const owner = join(sessionsDir, `2026-01-01T00-00-00-000Z_other-${Math.floor(i / 10)}.jsonl`);
    const runId = `other-${String(i).padStart(6, "0")}`;
    fixture.startRun({ runId, sessionId: owner, pid: process.pid, startedAt: forkedAt - 100_000 });
    // One in ten still has its result waiting for its owner; the rest were delivered, and a
    // delivered result leaves no file behind, so none is written for them (same end state, faster).
    fixture.finishRun(runId, { endedAt: forkedAt - 90_000, ...(i % 10 === 0 ? {} : { noResult: true }) });
  }
}

/**
 * Alternates the two stores scan by scan, so warm-up and background load fall on both alike;
 * one untimed scan of each first warms the file-system cache, as a second start of Pi finds it.
 */
async function timeScans(
  context: ScanContext,
  roots: readonly string[],
  repeats: number,
): Promise<Array<{ times: number[]; adopted: number }>> {
  const sources = roots.map((root) => [piSubagentsSource({ roots: [root] })]);
  const results = [];
  for (const source of sources)
    results.push({ times: [] as number[], adopted: (await scanSources(source, context)).runs.length });
  for (let i = 0; i < repeats; i += 1) {
    for (const [index, source] of sources.entries()) {
      const started = performance.now();
      await scanSources(source, context);
      results[index]?.times.push(performance.now() - started);
    }
  }
  return results;
}

/**
 * Plain Node refuses to strip types under node_modules, where pi-subagents' TypeScript lives: the
 * package's own loader hooks (bin/native-loader.mjs) strip them for that package's root too.
 */
function nativeImporter(): ModuleImporter {
  const root = realpathSync(fileURLToPath(new URL("../../node_modules/pi-subagents/", import.meta.url)));
  if (!installTypeScriptLoader(pathToFileURL(`${root}/`).href, undefined))
    throw new Error("This Node has no module.registerHooks to load pi-subagents' TypeScript with.");
  return (path) => import(pathToFileURL(path).href);
}

export async function measureLineageScan(options: LineageScanBenchOptions = {}): Promise<LineageScanBenchResult> {
  const unrelatedSmall = options.unrelatedSmall ?? 20;
  const unrelatedLarge = options.unrelatedLarge ?? 10_000;
  const repeats = Math.max(1, options.repeats ?? 7);
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-lineage-")));
  try {
    const writers = await loadPiSubagentsWriters(options.importModule ?? nativeImporter());
    const sessions = join(dir, "sessions");
    mkdirSync(sessions, { recursive: true });
    const parentFile = join(sessions, "2026-01-01T00-00-00-000Z_parent.jsonl");
    const childFile = join(sessions, "2026-01-01T01-00-00-000Z_child.jsonl");
    const forkedAt = Date.now() - 1_000;
    headerFile(parentFile, "parent", new Date(forkedAt - 3_600_000).toISOString());
    headerFile(childFile, "child", new Date(forkedAt).toISOString(), parentFile);
    const context: ScanContext = {
      lineage: walkLineage({
        sessionFile: childFile,
        sessionId: "child",
        parentSession: parentFile,
        timestamp: new Date(forkedAt).toISOString(),
      }),
      branch: [],
      env: {},
      agentDir: join(dir, "agent"),
      now: Date.now(),
    };
    const sizes = [unrelatedSmall, unrelatedLarge];
    const roots = sizes.map((unrelated) => join(dir, `store-${unrelated}`));
    sizes.forEach((unrelated, i) =>
      fillStore(
        new PiSubagentsFixture(roots[i] ?? "", writers),
        parentFile,
        forkedAt,
        unrelated,
        join(dir, "other-sessions"),
      ),
    );
    const measured = await timeScans(context, roots, repeats);
    const timings: ScanTiming[] = measured.map(({ times, adopted }, i) => ({
      unrelatedRuns: sizes[i] ?? 0,
      medianMs: median(times),
      minMs: Math.min(...times),
      maxMs: Math.max(...times),
      adopted,
    }));
    const [small, large] = timings as [ScanTiming, ScanTiming];
    return { small, large, ratio: small.medianMs > 0 ? large.medianMs / small.medianMs : Number.NaN, repeats };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function formatTable(result: LineageScanBenchResult): string {
  const row = (label: string, t: ScanTiming) =>
    `${label.padEnd(8)} ${String(t.unrelatedRuns).padStart(8)} ${t.medianMs.toFixed(2).padStart(10)} ${t.minMs.toFixed(2).padStart(9)} ${t.maxMs.toFixed(2).padStart(9)} ${String(t.adopted).padStart(8)}`;
  return [
    `lineage scan, median of ${result.repeats} runs (wall time, ms)`,
    `${"store".padEnd(8)} ${"unrelated".padStart(8)} ${"median".padStart(10)} ${"min".padStart(9)} ${"max".padStart(9)} ${"adopted".padStart(8)}`,
    row("small", result.small),
    row("large", result.large),
    `ratio large/small: ${result.ratio.toFixed(2)}`,
  ].join("\n");
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes("--quick");
  const result = await measureLineageScan(quick ? { unrelatedLarge: 500, repeats: 5 } : {});
  process.stdout.write(`${formatTable(result)}\n`);
}

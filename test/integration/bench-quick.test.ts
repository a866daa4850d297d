/**
 * `npm run bench -- --quick` still runs end to end and writes every section. Only the shape is
 * checked: timings are never asserted in the test suite.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";

const out = mkdtempSync(join(tmpdir(), "bench-quick-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

it("writes results for every benchmark in quick mode", () => {
  execFileSync(NODE_BIN, [join(PROJECT_ROOT, "scripts", "bench.ts"), "--quick", "--out", out], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    timeout: 240_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const results = JSON.parse(readFileSync(join(out, "results.json"), "utf8"));
  expect(results.quick).toBe(true);
  for (const method of ["oursWarm", "ours", "forkFrom", "branchedMain"]) {
    const m = results.fork.methods[method];
    expect(m.ms.runs).toBe(2);
    expect(m.ms.median).toBeGreaterThan(0);
    expect(Number.isFinite(m.extraRssMB.median)).toBe(true);
    expect(Number.isFinite(m.maxEventLoopDelayMs.median)).toBe(true);
  }
  expect(results.fork.session.entries).toBe(600);
  expect(results.overhead.ours.runs).toBe(1);
  expect(results.overhead.baseline.runs).toBe(1);
  expect(Number.isFinite(results.overhead.ratio)).toBe(true);
  for (const key of ["forkVsForkFrom", "coldForkVsForkFrom", "extraRssVsFile", "maxDelayMs"]) {
    expect(Number.isFinite(results.ratios[key])).toBe(true);
  }
  expect(results.lineage).toBeTypeOf("object");
  expect(results.list).toBeTypeOf("object");
  expect(results.childStatus.handoffs).toBe(50);
  expect(results.childStatus.ms).toHaveLength(2);
  expect(results.childStatus.maxEventLoopDelayMs).toHaveLength(2);
  expect(results.childStatus.warmMs).toHaveLength(2);
  expect(results.childStatus.warmMaxEventLoopDelayMs).toHaveLength(2);
}, 300_000);

/**
 * The order test files start in, across the vitest projects (default, portable, herdr-real).
 *
 * Vitest's own order runs the projects one after another, each longest first. The suite is CPU-bound
 * on two cores, and the last project's files (long e2e scenarios) then ran with too few others
 * beside them to fill the cores. Here every file of every project is one queue, longest first: by
 * the last run's duration where vitest's cache has it, else by the durations below, read from a
 * run of the whole suite here (a clean clone, as CI's, has no cache), else by size, end-to-end files
 * weighing most. Failed files still go first.
 *
 * Invariants: it only orders; every file given is returned once, and a stale figure costs only order.
 */
import { stat } from "node:fs/promises";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The files that ran 25 s or more in a run of the suite here (2 cores), by project and path: ms. */
const MEASURED_MS: Record<string, number> = {
  "default test/e2e/registry-install.test.ts": 95_000,
  "herdr-real test/integration/recovery-herdr.test.ts": 82_000,
  "default test/e2e/return-trip.test.ts": 72_000,
  "default test/integration/bench-quick.test.ts": 63_000,
  "default test/integration/pi-handoff-cli.test.ts": 56_000,
  "default test/e2e/crash-points.test.ts": 56_000,
  "default test/integration/concurrency.test.ts": 55_000,
  "default test/integration/herdr-conformance.test.ts": 54_000,
  "herdr-real test/integration/herdr.test.ts": 52_000,
  "default test/integration/herdr.test.ts": 49_000,
  "default test/integration/launch-verified.test.ts": 48_000,
  "default test/e2e/handoff-print.test.ts": 48_000,
  "herdr-real test/e2e/reboot-restore-herdr.test.ts": 40_000,
  "herdr-real test/e2e/child-status.test.ts": 40_000,
  "default test/e2e/handoff-zellij.test.ts": 40_000,
  "herdr-real test/e2e/return-trip.test.ts": 36_000,
  "default test/e2e/child-status.test.ts": 36_000,
  "herdr-real test/integration/herdr-conformance.test.ts": 35_000,
  "default test/integration/hostile-corpus.test.ts": 35_000,
  "portable test/e2e/reboot-restore.test.ts": 34_000,
  "default test/integration/recovery-herdr.test.ts": 33_000,
  "default test/e2e/handoff-setup-print.test.ts": 33_000,
  "default test/e2e/reboot-restore.test.ts": 30_000,
  "portable test/e2e/handoff-tmux.test.ts": 29_000,
  "default test/integration/rebase.test.ts": 29_000,
  "default test/integration/land.test.ts": 28_000,
  "default test/e2e/handoff-tmux.test.ts": 28_000,
};

/** Without a figure: ms per byte of the file, by folder (real Pi and real terminals weigh most). */
const MS_PER_BYTE: Record<string, number> = { e2e: 1, integration: 0.4, unit: 0.1 };

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const estimates = new Map<TestSpecification, { failed: boolean; ms: number }>();
    const root = this.ctx.config.root;
    await Promise.all(
      files.map(async (spec) => {
        const cached = this.ctx.cache.getTestSpecificationResult(spec);
        if (cached !== undefined) {
          estimates.set(spec, { failed: cached.failed, ms: cached.duration });
          return;
        }
        const path = relative(root, spec.moduleId);
        const measured = MEASURED_MS[`${spec.project.name} ${path}`];
        if (measured !== undefined) {
          estimates.set(spec, { failed: false, ms: measured });
          return;
        }
        const folder = /^test\/([^/]+)\//.exec(path)?.[1] ?? "unit";
        const bytes = await stat(spec.moduleId).then(
          (info) => info.size,
          () => 0,
        );
        estimates.set(spec, { failed: false, ms: bytes * (MS_PER_BYTE[folder] ?? 0.1) });
      }),
    );
    const estimate = (spec: TestSpecification) => estimates.get(spec) ?? { failed: false, ms: 0 };
    return [...files].sort((a, b) => {
      const [ea, eb] = [estimate(a), estimate(b)];
      if (ea.failed !== eb.failed) return ea.failed ? -1 : 1;
      return eb.ms - ea.ms;
    });
  }
}

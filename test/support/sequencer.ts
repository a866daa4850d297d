/**
 * The order test files start in, across the vitest projects (default, portable, herdr-real).
 *
 * Vitest's own order runs the projects one after another, each longest first. The suite is CPU-bound
 * on two cores, and the last project's files (long e2e scenarios) then ran with too few others
 * beside them to fill the cores. Here every file of every project is one queue, longest first:
 * by the last run's duration where the cache has it, else end-to-end files before the others and
 * larger before smaller (a clean clone, as CI's, has no cache). Failed files still go first.
 */
import { stat } from "node:fs/promises";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** How much longer a file of each folder runs per byte than a unit test, roughly: real Pi, real terminals. */
const FOLDER_WEIGHT: Record<string, number> = { e2e: 8, integration: 3, unit: 1 };

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const estimates = new Map<TestSpecification, { failed: boolean; ms: number }>();
    await Promise.all(
      files.map(async (spec) => {
        const cached = this.ctx.cache.getTestSpecificationResult(spec);
        if (cached !== undefined) {
          estimates.set(spec, { failed: cached.failed, ms: cached.duration });
          return;
        }
        const folder = /\/test\/([^/]+)\//.exec(spec.moduleId)?.[1] ?? "unit";
        const bytes = await stat(spec.moduleId).then(
          (info) => info.size,
          () => 0,
        );
        // A byte of an e2e file stands for about a millisecond of its run here.
        estimates.set(spec, { failed: false, ms: (bytes * (FOLDER_WEIGHT[folder] ?? 1)) / 8 });
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

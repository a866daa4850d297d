/**
 * The lineage-scan benchmark still runs and measures the right thing: both stores hold the same
 * lineage, and the scan adopts exactly its two runs from each. No timing is asserted.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { measureLineageScan } from "../../scripts/bench/lineage-scan.ts";

describe("scripts/bench/lineage-scan.ts", () => {
  it("scans both stores and adopts the same two runs from each", async () => {
    const result = await measureLineageScan({
      unrelatedSmall: 3,
      unrelatedLarge: 40,
      repeats: 1,
      importModule: (path) => import(/* @vite-ignore */ pathToFileURL(path).href),
    });
    expect(result.repeats).toBe(1);
    expect([result.small.unrelatedRuns, result.large.unrelatedRuns]).toEqual([3, 40]);
    expect([result.small.adopted, result.large.adopted]).toEqual([2, 2]);
    expect(Number.isFinite(result.ratio)).toBe(true);
  });
});

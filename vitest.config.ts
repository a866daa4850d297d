import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";
import LongestFirstSequencer from "./test/support/sequencer.ts";

/**
 * The suites that exercise process facts end to end (shell wait, probes, recovery's writer check,
 * owners, lineage liveness) run twice: once with the implementation this system picks (/proc on
 * Linux) and once with the portable ps/lsof one forced, with the same assertions (issue 15).
 */
const PORTABLE_PASS = [
  "test/e2e/handoff-tmux.test.ts",
  "test/e2e/handoff-herdr.test.ts",
  "test/e2e/launch-herdr-swallow.test.ts",
  "test/e2e/recovery-relaunch.test.ts",
  "test/e2e/reboot-restore.test.ts",
  "test/e2e/lineage-adoption.test.ts",
  "test/integration/recovery-tmux.test.ts",
];

/**
 * The Herdr scenarios, run a second time against the real Herdr 0.8.2 (built by
 * scripts/tools/herdr.sh) with the same test code: `startHerdr` and the Herdr rig pick the real one
 * when PI_HANDOFF_TEST_HERDR=real. What only the double can show (its faults, its call log) is
 * registered for the double alone (`test/support/herdr.ts` `forDoubleOnly`).
 */
const HERDR_REAL_PASS = [
  "test/e2e/handoff-herdr.test.ts",
  "test/e2e/launch-herdr-swallow.test.ts",
  "test/e2e/return-trip.test.ts",
  "test/e2e/child-status.test.ts",
  "test/e2e/reboot-restore-herdr.test.ts",
  "test/integration/herdr-conformance.test.ts",
  "test/integration/herdr-scenarios.test.ts",
  "test/integration/herdr.test.ts",
  "test/integration/parent-watch-herdr.test.ts",
  "test/integration/recovery-herdr.test.ts",
  "test/integration/handoff-setup.test.ts",
];

/**
 * The Herdr files whose every scenario both Herdrs show: where the real one is built, they run on
 * it alone. In the files that also hold what only the double can show, each shared scenario is
 * registered through `onTheRealHerdrWhenBuilt` (test/support/herdr.ts) instead.
 */
const HERDR_SHARED_ONLY = [
  "test/e2e/launch-herdr-swallow.test.ts",
  "test/e2e/reboot-restore-herdr.test.ts",
  "test/integration/herdr-scenarios.test.ts",
  "test/integration/parent-watch-herdr.test.ts",
];

/**
 * Every Node process the tests start (the CLI, the drivers, the stand-in child, the Herdr double)
 * reuses the modules compiled before, as Pi does for itself: less CPU on two cores.
 */
const COMPILE_CACHE = { NODE_COMPILE_CACHE: join(tmpdir(), "pi-handoff-test-compile-cache") };

/** The real herdr when it is built here (only locating, never building: that is scripts/tools/herdr.sh). */
function locateRealHerdr(): string | undefined {
  try {
    return execFileSync("bash", ["scripts/tools/herdr.sh", "--locate"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

const realHerdr = process.env.PI_HANDOFF_HERDR_BIN || locateRealHerdr();
if (realHerdr === undefined && process.env.CI === "true") {
  throw new Error(
    "CI runs every Herdr scenario against the real Herdr, and none is built: run bash scripts/tools/herdr.sh first.",
  );
}

/** The real zellij (only locating, never building: that is scripts/tools/zellij.sh); its tests fail without it. */
function locateRealZellij(): string | undefined {
  try {
    return execFileSync("bash", ["scripts/tools/zellij.sh", "--locate"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

const realZellij = process.env.PI_HANDOFF_ZELLIJ_BIN || locateRealZellij();
if (realZellij === undefined && process.env.CI === "true") {
  throw new Error(
    "CI runs the zellij scenarios against the real zellij, and none is built: run bash scripts/tools/zellij.sh first.",
  );
}
const ZELLIJ_BIN = realZellij === undefined ? {} : { PI_HANDOFF_ZELLIJ_BIN: realZellij };

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Pi processes and tmux servers and mostly wait on them (the suite keeps
    // about one core busy): three at once on two cores, not more.
    maxWorkers: 3,
    fileParallelism: true,
    // One queue of every project's files, longest first (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: "default",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...(realHerdr === undefined ? [] : HERDR_SHARED_ONLY)],
          env: {
            ...COMPILE_CACHE,
            ...ZELLIJ_BIN,
            ...(realHerdr === undefined ? {} : { PI_HANDOFF_TEST_HERDR_REAL_PASS: "1" }),
          },
        },
      },
      {
        extends: true,
        test: {
          name: "portable",
          include: PORTABLE_PASS,
          // Its Herdr scenarios run on the real Herdr where it is built, as every shared scenario does.
          env: {
            ...COMPILE_CACHE,
            PI_HANDOFF_PROCESS_INFO: "portable",
            ...(realHerdr === undefined ? {} : { PI_HANDOFF_TEST_HERDR: "real", PI_HANDOFF_HERDR_BIN: realHerdr }),
          },
        },
      },
      ...(realHerdr === undefined
        ? []
        : [
            {
              extends: true as const,
              test: {
                name: "herdr-real",
                include: HERDR_REAL_PASS,
                env: { ...COMPILE_CACHE, PI_HANDOFF_TEST_HERDR: "real", PI_HANDOFF_HERDR_BIN: realHerdr },
              },
            },
          ]),
    ],
  },
});

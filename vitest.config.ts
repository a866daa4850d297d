import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

/**
 * The suites that exercise process facts end to end (shell wait, probes, recovery's writer check,
 * owners, lineage liveness) run twice: once with the implementation this system picks (/proc on
 * Linux) and once with the portable ps/lsof one forced, with the same assertions (issue 15).
 */
const PORTABLE_PASS = [
  "test/e2e/handoff-tmux.test.ts",
  "test/e2e/handoff-herdr.test.ts",
  "test/e2e/recovery-relaunch.test.ts",
  "test/e2e/lineage-adoption.test.ts",
  "test/integration/recovery-tmux.test.ts",
];

/**
 * Every Node process the tests start (the CLI, the drivers, the stand-in child, the Herdr double)
 * reuses the modules compiled before, as Pi does for itself: less CPU on two cores.
 */
const COMPILE_CACHE = { NODE_COMPILE_CACHE: join(tmpdir(), "pi-handoff-test-compile-cache") };

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Pi processes and tmux servers and mostly wait on them (the suite keeps
    // about one core busy): three at once on two cores, not more.
    maxWorkers: 3,
    fileParallelism: true,
    projects: [
      { extends: true, test: { name: "default", include: ["test/**/*.test.ts"], env: COMPILE_CACHE } },
      { extends: true, test: { name: "portable", include: PORTABLE_PASS, env: { ...COMPILE_CACHE, PI_HANDOFF_PROCESS_INFO: "portable" } } },
    ],
  },
});

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

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Pi processes and tmux servers and mostly wait on them (the suite keeps
    // about one core busy): three at once on two cores, not more.
    maxWorkers: 3,
    fileParallelism: true,
    projects: [
      { extends: true, test: { name: "default", include: ["test/**/*.test.ts"] } },
      { extends: true, test: { name: "portable", include: PORTABLE_PASS, env: { PI_HANDOFF_PROCESS_INFO: "portable" } } },
    ],
  },
});

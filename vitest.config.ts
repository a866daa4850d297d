import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Pi processes and tmux servers; two cores cannot run many at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});

/**
 * One fork measurement in a fresh process (so peak RSS is this fork's alone):
 * `node scripts/bench/fork-probe.ts <ours|oursWarm|forkFrom|branchedMain> <session> <leaf> <workDir>`.
 * Prints one JSON line: wall time, RSS before, peak RSS, and the largest event-loop delay seen.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { CURRENT_SESSION_VERSION, getPackageDir, SessionManager } from "@earendil-works/pi-coding-agent";
import { ForkWorker, locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";

const [method, session, leaf, workDir] = process.argv.slice(2);
if (method === undefined || session === undefined || leaf === undefined || workDir === undefined) {
  console.error("usage: fork-probe.ts <ours|oursWarm|forkFrom|branchedMain> <session> <leaf> <workDir>");
  process.exit(2);
}
const childDir = join(workDir, "child-sessions");
const childCwd = join(workDir, "worktree");
mkdirSync(childDir, { recursive: true });
const message = buildHandoffMessage({
  handoffId: "20261130-000000-bench-abcd",
  manifestPath: join(workDir, "m.json"),
  branch: "bench",
  baseRef: "HEAD",
  baseSha: "a".repeat(40),
  worktreePath: childCwd,
  mainCheckout: workDir,
  parentSessionFile: session,
});

const sessionModulePath = locatePiSessionModule(getPackageDir());
// "oursWarm" is the fork as a handoff runs it: the worker starts while the worktree is created.
const warmWorker =
  method === "oursWarm" && sessionModulePath !== undefined
    ? ForkWorker.start(sessionModulePath, CURRENT_SESSION_VERSION)
    : undefined;
// Let start-up settle, so the baseline is the process at rest.
await new Promise((resolve) => setTimeout(resolve, warmWorker !== undefined ? 600 : 200));
const rssBefore = process.memoryUsage().rss;
// The event loop's responsiveness as a TUI feels it: the longest gap between 5 ms ticks.
const TICK_MS = 5;
let lastTick = performance.now();
let maxDelayMs = 0;
const ticker = setInterval(() => {
  const now = performance.now();
  maxDelayMs = Math.max(maxDelayMs, now - lastTick - TICK_MS);
  lastTick = now;
}, TICK_MS);
const started = performance.now();
if (method === "ours" || method === "oursWarm") {
  await runFork(
    { parentSessionFile: session, leafId: leaf, childCwd, childSessionDir: childDir, message },
    { worker: warmWorker, sessionModulePath, host: { SessionManager, CURRENT_SESSION_VERSION } },
  );
} else if (method === "forkFrom") {
  SessionManager.forkFrom(session, childCwd, childDir);
} else if (method === "branchedMain") {
  const manager = SessionManager.open(session, childDir, childCwd);
  manager.createBranchedSession(leaf);
  manager.appendCustomMessageEntry(message.customType, message.content, true, message.details);
} else {
  console.error(`unknown method ${method}`);
  process.exit(2);
}
const ms = performance.now() - started;
// One more tick so a blocked loop registers its delay.
await new Promise((resolve) => setTimeout(resolve, 3 * TICK_MS));
clearInterval(ticker);
const peakRss = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ method, ms, rssBefore, peakRss, maxDelayMs }));

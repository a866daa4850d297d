/**
 * Crash points for tests: `PI_HANDOFF_FAULT=kill-after:<point>` makes the process running a handoff
 * kill itself with SIGKILL right after that point, so no `catch`, `finally`, exit handler or flush
 * runs: what a power cut, an OOM kill or `kill -9` of the parent Pi leaves behind. Recovery must
 * cope with every one of them (test/e2e/crash-points.test.ts).
 *
 * Points, in order (each after the named step recorded its state in the manifest):
 * - `manifest`:  the `provisioning` record exists, nothing else;
 * - `worktree`:  `provisioned`: worktree, branch and window exist;
 * - `fork`:      `forked`: the child session exists;
 * - `launching`: `launching` is recorded, nothing typed yet (mid-step: the launch's own record);
 * - `launch`:    the command was typed: the child Pi is starting;
 * - `confirm`:   the child acknowledged (`running`), focus not yet done;
 * - `focus`:     focus recorded: only the transaction's return is missing.
 *
 * Without the variable (or with another value) nothing here does anything.
 */
export const KILL_POINTS = ["manifest", "worktree", "fork", "launching", "launch", "confirm", "focus"] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

const PREFIX = "kill-after:";

/** The crash point `PI_HANDOFF_FAULT` names, if it names one. */
export function killPointFromEnv(env: NodeJS.ProcessEnv): KillPoint | undefined {
  const value = env.PI_HANDOFF_FAULT;
  if (value === undefined || !value.startsWith(PREFIX)) return undefined;
  const point = value.slice(PREFIX.length);
  return KILL_POINTS.find((candidate) => candidate === point);
}

/** Dies at once when `point` is the configured crash point. */
export function crashAt(configured: KillPoint | undefined, point: KillPoint): void {
  if (configured === point) process.kill(process.pid, "SIGKILL");
}

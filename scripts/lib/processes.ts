/**
 * Making sure nothing the demo started outlives it. A demo process is recognised by its
 * environment (`PI_CODING_AGENT_DIR=<scratch agent dir>`, read from /proc) or, where there is no
 * /proc, by the pids the demo recorded (pane pids, the manifest's child pid).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { sleep } from "./wait.ts";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function environOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return []; // gone, or not ours to read
  }
}

/** Live processes (other than this one) that belong to the demo. */
export function findDemoProcesses(agentDir: string, recordedPids: readonly number[]): number[] {
  if (!existsSync("/proc/self/environ")) {
    return [...new Set(recordedPids)].filter((pid) => pid > 0 && pid !== process.pid && isAlive(pid));
  }
  const marker = `PI_CODING_AGENT_DIR=${agentDir}`;
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== process.pid && environOf(pid).includes(marker));
}

async function waitUntilGone(agentDir: string, recordedPids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  const never = new AbortController().signal;
  for (;;) {
    const left = findDemoProcesses(agentDir, recordedPids);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(100, never);
  }
}

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Recorded pids that have exited but are not reaped yet (zombies, state Z in /proc/<pid>/stat). */
function unreaped(pids: readonly number[]): number[] {
  return pids.filter((pid) => {
    try {
      // `pid (comm) S ...`: the state follows the last ")" (comm may contain spaces or parentheses).
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
    } catch {
      return false;
    }
  });
}

/**
 * Exited demo processes stay in the process table (as `<defunct>`) until their new parent, init,
 * reaps them; some inits take a few seconds. Waits for that, so `pgrep pi` right after the demo
 * shows nothing of it; returns the pids still unreaped at the deadline.
 */
export async function waitForReaping(recordedPids: readonly number[], timeoutMs = 5_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  const never = new AbortController().signal;
  for (;;) {
    const left = unreaped(recordedPids);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(100, never);
  }
}

/**
 * After the tmux server is gone (its panes got SIGHUP): waits for demo processes to exit, then
 * sends SIGTERM and finally SIGKILL to any left. Returns what had to be signalled and what survived.
 */
export async function stopDemoProcesses(
  agentDir: string,
  recordedPids: readonly number[],
): Promise<{ signalled: number[]; survivors: number[] }> {
  const lingering = await waitUntilGone(agentDir, recordedPids, 5_000);
  if (lingering.length === 0) return { signalled: [], survivors: [] };
  signalAll(lingering, "SIGTERM");
  const stubborn = await waitUntilGone(agentDir, recordedPids, 3_000);
  signalAll(stubborn, "SIGKILL");
  const survivors = await waitUntilGone(agentDir, recordedPids, 2_000);
  return { signalled: lingering, survivors };
}

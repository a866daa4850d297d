/**
 * Is the process that runs a piece of background work still there?
 *
 * Invariants:
 * - Judged by the pid (`kill(pid, 0)`, which sends nothing), never by how recently a status
 *   file was updated: a quiet run is not a dead run.
 * - A pid that now belongs to a process started after the run began is a reused pid, not the
 *   run's process (checked on Linux through /proc; elsewhere the pid alone decides).
 * - Never throws, never signals.
 */
import { readFileSync } from "node:fs";

export type PidLiveness = "alive" | "dead" | "unknown";

/** Slack for /proc's clock-tick resolution and for a status written a moment before the process is visible. */
const START_TIME_SLACK_MS = 5_000;
/** Linux reports process start in clock ticks; USER_HZ is 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

let bootTimeMs: number | undefined;

function readBootTimeMs(): number | undefined {
  if (bootTimeMs !== undefined) return bootTimeMs;
  try {
    const line = readFileSync("/proc/stat", "utf8")
      .split("\n")
      .find((l) => l.startsWith("btime "));
    const seconds = line === undefined ? NaN : Number(line.slice("btime ".length));
    if (Number.isFinite(seconds)) bootTimeMs = seconds * 1000;
  } catch {
    // Not Linux, or no /proc: start times are not available.
  }
  return bootTimeMs;
}

/** When the process with this pid started (ms since the epoch), where /proc says so. */
export function processStartTimeMs(pid: number): number | undefined {
  const boot = readBootTimeMs();
  if (boot === undefined) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[19]);
  return Number.isFinite(ticks) ? boot + (ticks * 1000) / CLOCK_TICKS_PER_SECOND : undefined;
}

export function pidLiveness(pid: number | undefined, runStartedAtMs?: number): PidLiveness {
  if (pid === undefined || !Number.isSafeInteger(pid) || pid <= 0) return "unknown";
  try {
    process.kill(pid, 0);
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? (error as { code: unknown }).code : undefined;
    // EPERM: the process exists but belongs to someone else; it is alive.
    if (code !== "EPERM") return code === "ESRCH" ? "dead" : "unknown";
  }
  if (runStartedAtMs !== undefined) {
    const started = processStartTimeMs(pid);
    if (started !== undefined && started > runStartedAtMs + START_TIME_SLACK_MS) return "dead";
  }
  return "alive";
}

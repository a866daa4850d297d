/**
 * Is the process that runs a piece of background work still there?
 *
 * Invariants:
 * - Judged by the pid (`kill(pid, 0)`, which sends nothing), never by how recently a status
 *   file was updated: a quiet run is not a dead run.
 * - A pid that now belongs to a process started after the run began is a reused pid, not the
 *   run's process (start times through src/process/; where one cannot be read, the pid alone decides).
 * - Never throws, never signals.
 */
import { processFacts, type ProcessFacts } from "../process/facts.ts";

export type PidLiveness = "alive" | "dead" | "unknown";

/** Slack for the start time's resolution (clock ticks, or whole seconds from ps) and for a status written a moment before the process is visible. */
const START_TIME_SLACK_MS = 5_000;

export async function pidLiveness(
  pid: number | undefined,
  runStartedAtMs?: number,
  facts: ProcessFacts = processFacts(),
): Promise<PidLiveness> {
  if (pid === undefined || !Number.isSafeInteger(pid) || pid <= 0) return "unknown";
  try {
    process.kill(pid, 0);
  } catch (error) {
    const code =
      typeof error === "object" && error !== null && "code" in error ? (error as { code: unknown }).code : undefined;
    // EPERM: the process exists but belongs to someone else; it is alive.
    if (code !== "EPERM") return code === "ESRCH" ? "dead" : "unknown";
  }
  if (runStartedAtMs !== undefined) {
    const started = await facts.startTimeMs(pid);
    if (started !== undefined && started > runStartedAtMs + START_TIME_SLACK_MS) return "dead";
  }
  return "alive";
}

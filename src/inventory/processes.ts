/**
 * The live `pi` processes on this machine, as recovery needs them to find a session's writer (the
 * second opinion after the session lease, see child/lease.ts).
 *
 * Invariants:
 * - Read-only, through the process-facts port (src/process/); signals nothing.
 * - A process that exits or cannot be read while we look is skipped, never a throw; zombies are
 *   not alive (they cannot write anything).
 * - Only processes named `pi` are looked at closely (cwd, environment): Pi sets its process title
 *   to `pi`, and reading every process's environment would be slow and intrusive.
 * - When the table (or a kind of fact in it) could not be read, the scan says so in `problem`
 *   rather than claiming no Pi runs; relaunch then refuses (an unknown writer).
 */
import { describePaneProcess } from "../process/pane-process.ts";
import { processFacts, type ProcessFacts } from "../process/facts.ts";
import type { DescribedProcess } from "../process/facts.ts";

const PI_PROCESS_NAME = "pi";

export interface ProcessScan {
  /** Every live process named `pi` that could be read. */
  piProcesses: DescribedProcess[];
  /** Set when the scan could not look: a caller must not conclude that no Pi runs. */
  problem?: string;
}

/** Reads the process table once. */
export async function scanPiProcesses(facts: ProcessFacts = processFacts()): Promise<ProcessScan> {
  const found = await facts.findByName(PI_PROCESS_NAME);
  return { piProcesses: found.processes, ...(found.problem === undefined ? {} : { problem: found.problem }) };
}

/** The processes listening on TCP `port` that this user can see, described (in `piProcesses`, whatever their names). */
export async function portListeners(port: number, facts: ProcessFacts = processFacts()): Promise<ProcessScan> {
  const found = await facts.listeners(port);
  if (found.problem !== undefined) return { piProcesses: [], problem: found.problem };
  if (found.pids.length === 0) return { piProcesses: [] };
  const described = await facts.describe(found.pids);
  return {
    piProcesses: described.processes,
    ...(described.problem === undefined ? {} : { problem: described.problem }),
  };
}

/** The process `pid` names now, if it is alive (not a zombie) and readable. */
export async function describeProcess(
  pid: number,
  facts: ProcessFacts = processFacts(),
): Promise<DescribedProcess | undefined> {
  if (!(await facts.isAlive(pid))) return undefined;
  return describePaneProcess(pid, facts);
}

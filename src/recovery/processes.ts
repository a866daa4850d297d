/**
 * The live `pi` processes on this machine, as recovery needs them to find a session's writer.
 *
 * Invariants:
 * - Read-only, through procfs (`/proc/<pid>/{stat,comm,cwd,environ}`); signals nothing.
 * - A process that exits or cannot be read while we look is skipped, never a throw; zombies are
 *   not alive (they cannot write anything).
 * - Only processes named `pi` are looked at closely (cwd, environment): Pi sets its process title
 *   to `pi`, and reading every process's environment would be slow and intrusive.
 * - Without procfs (not Linux) the scan finds nothing and says so, rather than claiming no Pi runs.
 */
import { access, readdir } from "node:fs/promises";
import { describePaneProcess } from "../process/pane-process.ts";
import { isAlive, readComm } from "../process/procfs.ts";
import type { ProcessInfo } from "./classify.ts";

const PROC_ROOT = "/proc";
const PI_PROCESS_NAME = "pi";

export interface ProcessScan {
  /** Every live process named `pi` that could be read. */
  piProcesses: ProcessInfo[];
  /** Set when the scan could not look (no procfs): a caller must not conclude that no Pi runs. */
  problem?: string;
}

/** Reads the process table once. */
export async function scanPiProcesses(): Promise<ProcessScan> {
  let names: string[];
  try {
    await access(`${PROC_ROOT}/self/stat`);
    names = await readdir(PROC_ROOT);
  } catch {
    return { piProcesses: [], problem: "This system has no /proc, so running Pi processes could not be looked for." };
  }
  const pids = names.filter((name) => /^\d+$/.test(name)).map(Number);
  const described = await Promise.all(
    pids.map(async (pid) => ((await readComm(pid)) === PI_PROCESS_NAME ? describeProcess(pid) : undefined)),
  );
  return { piProcesses: described.filter((process): process is ProcessInfo => process !== undefined) };
}

/** The process `pid` names now, if it is alive (not a zombie) and readable. */
export async function describeProcess(pid: number): Promise<ProcessInfo | undefined> {
  if (!(await isAlive(pid))) return undefined;
  return describePaneProcess(pid);
}

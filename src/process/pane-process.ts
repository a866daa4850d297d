/**
 * A process as the handoff looks at it: its name, its realpath cwd and the handoff marker in its
 * environment, read through the process-facts port. Shared by both backends' probes and by recovery.
 *
 * Invariant: read-only; a process that exits while it is read is left out.
 */
import { processFacts, type DescribedProcess, type ProcessFacts } from "./facts.ts";

export async function describePaneProcess(
  pid: number,
  facts: ProcessFacts = processFacts(),
): Promise<DescribedProcess | undefined> {
  return (await facts.describe([pid])).processes[0];
}

/** The live processes among `pids`, described; vanished ones are left out. */
export async function describePaneProcesses(
  pids: readonly number[],
  facts: ProcessFacts = processFacts(),
): Promise<DescribedProcess[]> {
  return (await facts.describe(pids)).processes;
}

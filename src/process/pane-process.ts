/**
 * A process as the handoff looks at it: its name, its realpath cwd and the handoff marker in its
 * environment, read from procfs. Shared by both backends' probes and by recovery.
 *
 * Invariant: read-only; a process that exits while it is read yields `undefined`.
 */
import { readComm, readCwd, readEnvironValue } from "./procfs.ts";
import { HANDOFF_ID_ENV, type PaneProcess } from "../mux/types.ts";

export async function describePaneProcess(pid: number): Promise<PaneProcess | undefined> {
  const [name, cwd, handoffId] = await Promise.all([readComm(pid), readCwd(pid), readEnvironValue(pid, HANDOFF_ID_ENV)]);
  // No name means the process exited while we looked.
  if (name === undefined) return undefined;
  return { pid, name, ...(cwd === undefined ? {} : { cwd }), ...(handoffId === undefined ? {} : { handoffId }) };
}

/**
 * The pid file: a lock held by a shell script (the launcher of a handoff's child Pi,
 * child/launcher-file.ts), created with `set -C` (an exclusive create) and holding the pid of its
 * holder, which is the launcher and then, where the launcher execs it, Pi itself. The sh code that
 * takes and releases it is written here, beside what TypeScript reads of it.
 *
 * Invariants:
 * - Taken atomically: of two launchers exactly one creates the file; the other finds a holder.
 * - In sh, the liveness rule (liveness.ts) is applied as far as sh can without the process table:
 *   `kill -0` says whether the pid exists. Two differences, both covered on the TypeScript side:
 *   sh cannot read a start time, so a pid reused by another process counts as alive there (the
 *   launch step drops a pid file whose pid is no longer the handoff's launcher or Pi before each
 *   launch, child/launcher.ts `dropForeignLock`), and a zombie counts as alive (the launch step's
 *   own reading, `pidFileLiveness`, calls it dead). The file records no machine: the launcher runs
 *   in the handoff's pane, and only that machine's launchers and launch step read it.
 * - A holder removes the file only while it still names it; a dead holder's file is removed and
 *   the exclusive create tried once more (a second loser is told another launcher just started).
 */
import { readTextIfPresent } from "../fs/probe.ts";
import { unlinkIfPresent } from "../fs/unlink.ts";
import type { ProcessFacts } from "../process/facts.ts";
import { holderLiveness, type Liveness } from "./liveness.ts";

/**
 * sh lines that take the pid file named by `$<variable>` for this shell (`$$`). A live holder's pid
 * is in `$holder` when `held` runs; `raced` runs when another taker won the retry. Both must end
 * the caller (`return`), so the lines after are reached only by the holder. Indented by two spaces.
 */
export function shTakePidFile(variable: string, held: readonly string[], raced: string): string[] {
  const file = `"$${variable}"`;
  const create = `(set -C; printf '%s\\n' "$$" > ${file}) 2>/dev/null`;
  return [
    `  if ! ${create}; then`,
    `    holder=$(cat ${file} 2>/dev/null)`,
    '    if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then',
    ...held.map((line) => `      ${line}`),
    "    fi",
    `    rm -f ${file}`,
    `    if ! ${create}; then ${raced}; fi`,
    "  fi",
  ];
}

/** The sh function `<name>` that removes the pid file `$<variable>` while it still names this shell. */
export function shReleasePidFile(name: string, variable: string): string {
  return `${name}() { if [ "$(cat "$${variable}" 2>/dev/null)" = "$$" ]; then rm -f "$${variable}"; fi; }`;
}

/** The pid in the pid file at `path`, if there is one. */
export async function readPidFile(path: string): Promise<number | undefined> {
  const text = await readTextIfPresent(path);
  if (text === undefined) return undefined;
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Removes the pid file at `path` if it still names `pid` (a holder the caller judged is not its own). */
export async function dropPidFile(path: string, pid: number): Promise<void> {
  if ((await readPidFile(path)) === pid) await unlinkIfPresent(path);
}

/** The liveness of a pid file's holder by the rule: a pid alone (no start, no heartbeat, this machine). */
export function pidFileLiveness(pid: number, facts: ProcessFacts): Promise<Liveness> {
  return holderLiveness({ pid }, facts, new Date());
}

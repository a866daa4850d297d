/**
 * What both process-facts implementations share: process-table arithmetic, and the one check that
 * a pid exists (signal 0).
 *
 * Invariants: the arithmetic is pure; a table read while processes come and go may hold cycles (a
 * reused pid), which never loop. `signalFinds` sends nothing (signal 0 only asks).
 */

/** Whether signal 0 finds `pid`; EPERM means it exists but belongs to someone else. */
export function signalFinds(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The descendants of `rootPid` in a process table given as pid/ppid pairs, breadth-first. */
export function descendantsOf(rootPid: number, table: readonly { pid: number; ppid: number }[]): number[] {
  const childrenByParent = new Map<number, number[]>();
  for (const stat of table) {
    const siblings = childrenByParent.get(stat.ppid) ?? [];
    siblings.push(stat.pid);
    childrenByParent.set(stat.ppid, siblings);
  }
  const descendants: number[] = [];
  const seen = new Set<number>([rootPid]);
  const queue = [rootPid];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of childrenByParent.get(next) ?? []) {
      // A pid read mid-reuse could form a cycle; never visit twice.
      if (seen.has(child)) continue;
      seen.add(child);
      descendants.push(child);
      queue.push(child);
    }
  }
  return descendants;
}

/**
 * Process-table arithmetic shared by both process-facts implementations.
 *
 * Invariant: pure; a table read while processes come and go may hold cycles (a reused pid), which
 * never loop.
 */

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

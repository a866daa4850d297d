/**
 * Bounded concurrency: run an async function over many items with at most `limit` in flight,
 * keeping file descriptors and child processes bounded (recovery's inventory, lineage scans).
 *
 * Invariants: results keep the items' order; the first rejection rejects the whole map (the
 * items already started still finish in the background).
 */

/** `fn` over `items` with at most `limit` in flight; results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let index = next++; index < items.length; index = next++) {
      results[index] = await fn(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * What the adapter loads when it is first needed rather than with Pi: a command's modules, or
 * those a session start needs only after this Pi acknowledged its handoff and drew its screen.
 *
 * Invariants: one load per process, shared by every caller; a load that failed is tried again by
 * the next caller (its error reaches the caller that asked).
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}

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

/**
 * One feature's part of each session start that loads something first: the events after it
 * (`agent_settled`, ...) wait for it (`settled`), so none overtakes it, and a start that a session
 * end or a newer start made stale sees so (`current`) and leaves nothing running.
 */
export class OrderedStart {
  #generation = 0;
  #starting: Promise<void> = Promise.resolve();

  /** A session starts: `run` is told, after each of its awaits, whether it is still the current one. */
  begin(run: (current: () => boolean) => Promise<void>): Promise<void> {
    const mine = ++this.#generation;
    const started = run(() => mine === this.#generation);
    // A start that failed says so once, as its own handler's error; later events go on without it.
    this.#starting = started.catch(() => undefined);
    return started;
  }

  /** The current start, done (never rejects). */
  settled(): Promise<void> {
    return this.#starting;
  }

  /** The session ended: a start still loading is stale. */
  end(): void {
    this.#generation += 1;
  }
}

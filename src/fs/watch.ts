/**
 * Watching a directory for files that change, cheaply: one `fs.watch` per directory (inotify on
 * Linux, FSEvents/kqueue on macOS), telling the caller which file name changed.
 *
 * Invariants:
 * - Never throws: a directory that cannot be watched (cannot be made, no inotify watches left, a
 *   file system without events) answers `watching: false`, and an error later closes the watch
 *   quietly (`onLost`), so the caller keeps its poll as the fallback.
 * - Events are hints, not facts: a name may be missing, repeated or coalesced, and a rename shows
 *   under both names; the caller re-reads what it cares about. `undefined` means "something in the
 *   directory changed".
 * - The watcher is unref'd: it never keeps a process alive.
 * - `directoryWakeups` is the same watch as wake-ups to await (a poll's back-off races `next()`): a
 *   change that came between two waits is not lost, and where nothing can be watched `next()` never
 *   resolves, so the caller's own timer decides.
 */
import { mkdirSync, watch, type FSWatcher } from "node:fs";

export interface DirectoryWatch {
  /** Whether events come (false: the caller must poll). */
  readonly watching: boolean;
  close(): void;
}

export function watchDirectory(
  dir: string,
  onChange: (name: string | undefined) => void,
  options: { create?: boolean; onLost?: () => void } = {},
): DirectoryWatch {
  let watcher: FSWatcher | undefined;
  try {
    if (options.create === true) mkdirSync(dir, { recursive: true });
    watcher = watch(dir, { persistent: false }, (_event, name) => {
      onChange(typeof name === "string" ? name : undefined);
    });
    watcher.unref();
  } catch {
    return { watching: false, close: () => {} };
  }
  let closed = false;
  const state = {
    watching: true,
    close: () => {
      if (closed) return;
      closed = true;
      state.watching = false;
      watcher?.close();
    },
  };
  watcher.on("error", () => {
    state.close();
    options.onLost?.();
  });
  return state;
}

/** A directory's changes as wake-ups to await, for a poll that backs off (see the header). */
export interface DirectoryWakeups {
  /** Resolves at the next change, or at once when one came since the last wake-up. */
  next(): Promise<void>;
  close(): void;
}

export function directoryWakeups(dir: string): DirectoryWakeups {
  let pending = false;
  let waiting: Array<() => void> = [];
  const watch = watchDirectory(dir, () => {
    pending = true;
    if (waiting.length === 0) return;
    pending = false;
    for (const wake of waiting.splice(0)) wake();
  });
  return {
    next: () => {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    close: () => {
      watch.close();
      waiting = [];
    },
  };
}

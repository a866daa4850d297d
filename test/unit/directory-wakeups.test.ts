/**
 * The directory watch as wake-ups (src/fs/watch.ts, `directoryWakeups`, which the launcher's poll
 * races its back-off against), on a real directory: a write wakes a waiting `next()`, a change
 * that came between two waits is not lost, and a directory that cannot be watched never wakes.
 */
import { mkdtempSync, rmSync, unlinkSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { directoryWakeups, type DirectoryWakeups } from "../../src/fs/watch.ts";

let dir: string;
let wakeups: DirectoryWakeups | undefined;
afterEach(() => {
  wakeups?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Whether `promise` has settled once the event loop has had a full turn (timers, I/O, immediates). */
async function settledSoon(promise: Promise<void>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setTimeout(resolve, 0));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("directory wake-ups", () => {
  it("wakes a waiting next() at a write, and keeps a change that came between two waits", async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-wakeups-"));
    writeFileSync(join(dir, "note"), "x");
    wakeups = directoryWakeups(dir);
    const woken = wakeups.next();
    writeFileSync(join(dir, "manifest.json"), "{}");
    await woken;
    // Nothing waits while the next change, one event, comes (a second watch shows it came): it is
    // kept for the next wait.
    const seen = new Promise<void>((resolve) => {
      const other = watch(dir, { persistent: false }, () => {
        other.close();
        resolve();
      });
    });
    unlinkSync(join(dir, "note"));
    await seen;
    // Past the poll phase that delivered it to both watches: next() has nothing left to wait for.
    await new Promise((resolve) => setImmediate(resolve));
    const next = wakeups.next();
    let settled = false;
    void next.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(true);
  });

  it("never wakes for a directory that cannot be watched, and closes quietly", async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-wakeups-"));
    wakeups = directoryWakeups(join(dir, "missing"));
    expect(await settledSoon(wakeups.next())).toBe(false);
    wakeups.close();
  });
});

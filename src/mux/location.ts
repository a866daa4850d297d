/**
 * The one check every terminal makes of a recorded location before it acts on it: is a pane's
 * working directory inside the worktree. (The locations themselves are defined with the manifest
 * that records them, src/manifest/locations.ts.)
 *
 * Invariants: pure; no outside call, no file read.
 */

/**
 * Whether a pane's working directory, as a terminal shows it (Linux's " (deleted)" suffix on a
 * directory that is gone), is `dir` or inside it: the check every backend makes before it acts on
 * a recorded window.
 */
export function paneCwdInside(path: string | null | undefined, dir: string): boolean {
  if (path === undefined || path === null) return false;
  const shown = path.replace(/ \(deleted\)$/, "");
  return shown === dir || shown.startsWith(`${dir}/`);
}

/**
 * Which systems this package runs on: POSIX systems with a process table it can read (Linux
 * through /proc, macOS and the BSDs through ps and lsof), with tmux, Herdr or zellij.
 *
 * Invariant: the one place that decides; the handoff, `/handoffs` and `pi-handoff` refuse with
 * its one sentence before doing anything.
 */

/** One sentence refusing an unsupported system, or undefined where the package runs. */
export function unsupportedPlatform(platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform === "win32") {
    return "pi-handoff-worktree does not run on Windows (it needs Linux or macOS with tmux, Herdr or zellij); run Pi inside WSL to use it there.";
  }
  return undefined;
}

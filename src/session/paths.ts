/**
 * Where Pi keeps sessions, computed the way Pi 1.6 computes it, so `pi -c` in a worktree finds
 * the child session.
 *
 * Invariant: pure path arithmetic; creates nothing.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export function expandHome(path: string, home = homedir()): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return path;
}

/** `$PI_CODING_AGENT_DIR`, else `~/.pi/agent` (as Pi's `getAgentDir`). */
export function agentDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
  const configured = env.PI_CODING_AGENT_DIR;
  if (configured && configured.length > 0) return resolve(expandHome(configured, home));
  return join(home, ".pi", "agent");
}

/** Pi's default session directory for a cwd: `<agentDir>/sessions/--<cwd, separators as ->--`. */
export function defaultSessionDir(cwd: string, agentDir: string): string {
  const safe = `--${resolve(cwd)
    .replace(/^[/\\]/, "")
    .replace(/[/\\:]/g, "-")}--`;
  return join(resolve(agentDir), "sessions", safe);
}

/**
 * The child's session directory: Pi's default for the worktree when the parent uses Pi's default
 * for its own cwd; otherwise the parent's (custom) directory, so custom layouts are kept.
 */
export function childSessionDir(input: {
  parentSessionDir: string;
  parentCwd: string;
  worktreePath: string;
  agentDir: string;
}): { dir: string; custom: boolean } {
  const parentDefault = defaultSessionDir(input.parentCwd, input.agentDir);
  if (resolve(input.parentSessionDir) === parentDefault) {
    return { dir: defaultSessionDir(input.worktreePath, input.agentDir), custom: false };
  }
  return { dir: resolve(input.parentSessionDir), custom: true };
}

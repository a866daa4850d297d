/**
 * The one environment every bench process runs in (git, tmux, Herdr, each Pi): isolated in the
 * bench's own temp dir, offline, without the machine's git config or pi-subagents runs.
 */
import { join } from "node:path";

export function benchEnv(
  project: string,
  paths: { root: string; home: string; agentDir: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: `${join(project, "node_modules", ".bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: paths.home,
    XDG_CONFIG_HOME: join(paths.home, ".config"),
    PI_CODING_AGENT_DIR: paths.agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    // Lineage adoption reads pi-subagents' runs from here: never the machine's own.
    PI_SUBAGENTS_TEMP_ROOT: join(paths.root, "pi-subagents"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Bench",
    GIT_AUTHOR_EMAIL: "bench@example.invalid",
    GIT_COMMITTER_NAME: "Bench",
    GIT_COMMITTER_EMAIL: "bench@example.invalid",
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    ...extra,
  };
}

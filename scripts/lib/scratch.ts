/**
 * The demo's scratch directory and the isolated environment every demo process runs in.
 *
 * Invariants:
 * - Everything lives in `<project>/.scratch/demo-<yyyymmdd-hhmmss>/` (gitignored), or in the new or
 *   empty directory the caller names (its paths show in the screenshot), and is kept
 *   afterwards for inspection; only a socket directory under os.tmpdir() (used when the scratch
 *   path is too long for a unix socket) is removed.
 * - The environment is built from nothing but PATH: HOME, XDG config and Pi's agent dir point into
 *   the scratch dir, git reads no system or user config, and Pi stays offline. PATH starts with the
 *   scratch dir's `bin/`, holding `pi-handoff` (this checkout's), as an installed package has it.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Unix socket paths are limited to ~107 bytes; stay well below. */
const MAX_SOCKET_PATH_BYTES = 100;

export interface Scratch {
  root: string;
  home: string;
  agentDir: string;
  /** The scratch git repository (created by `createScratchRepo`). */
  repo: string;
  socketPath: string;
  /** A directory under os.tmpdir() holding the socket, when the scratch path was too long; remove it afterwards. */
  socketDirOutsideScratch?: string;
  /** The environment of git, tmux and every pane. */
  env: Record<string, string>;
}

/** `dir`, made if missing, as its real path; refused when it holds anything (nothing of it is overwritten). */
function emptyDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0) throw new Error(`${dir} is not empty; name a new or empty directory for the demo.`);
  return realpathSync(dir);
}

/** Local time as `yyyymmdd-hhmmss`. */
export function timestamp(date: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}${two(date.getMonth() + 1)}${two(date.getDate())}-` +
    `${two(date.getHours())}${two(date.getMinutes())}${two(date.getSeconds())}`
  );
}

/** A new, empty `demo-<stamp>` directory (with a `-2`, `-3`, … suffix if two runs share a second). */
function makeUniqueDemoDir(parent: string, stamp: string): string {
  mkdirSync(parent, { recursive: true });
  for (let n = 1; n < 100; n++) {
    const candidate = join(parent, n === 1 ? `demo-${stamp}` : `demo-${stamp}-${n}`);
    if (existsSync(candidate)) continue;
    mkdirSync(candidate);
    return realpathSync(candidate);
  }
  throw new Error(`Could not find a free demo directory under ${parent}.`);
}

function chooseSocketPath(root: string): { socketPath: string; socketDirOutsideScratch?: string } {
  const inScratch = join(root, "tmux.sock");
  if (Buffer.byteLength(inScratch) <= MAX_SOCKET_PATH_BYTES) return { socketPath: inScratch };
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "phw-demo-")));
  return { socketPath: join(dir, "sock"), socketDirOutsideScratch: dir };
}

function isolatedEnv(projectRoot: string, home: string, agentDir: string, bin: string): Record<string, string> {
  return {
    PATH: `${bin}:${join(projectRoot, "node_modules", ".bin")}:${process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    SHELL: "/bin/bash",
    PS1: "$ ",
    HISTFILE: join(home, ".bash_history"),
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Demo Author",
    GIT_AUTHOR_EMAIL: "demo@example.invalid",
    GIT_COMMITTER_NAME: "Demo Author",
    GIT_COMMITTER_EMAIL: "demo@example.invalid",
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    // Lineage adoption reads pi-subagents' store in every Pi: the demo's stays in its scratch dir.
    PI_SUBAGENTS_TEMP_ROOT: join(home, "pi-subagents"),
  };
}

/**
 * Creates `home/`, `agent/extensions/faux-provider.ts` (the offline model every demo Pi loads) and
 * picks the tmux socket path. The repository itself is made by `createScratchRepo`.
 */
export function createScratch(
  projectRoot: string,
  fauxProviderFile: string,
  options: { now?: Date; dir?: string } = {},
): Scratch {
  const root =
    options.dir === undefined
      ? makeUniqueDemoDir(join(projectRoot, ".scratch"), timestamp(options.now ?? new Date()))
      : emptyDir(options.dir);
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  mkdirSync(join(home, ".config"), { recursive: true });
  mkdirSync(join(agentDir, "extensions"), { recursive: true });
  copyFileSync(fauxProviderFile, join(agentDir, "extensions", "faux-provider.ts"));
  // `pi-handoff` on PATH, as every install route of the README puts it: the notices name it so.
  const bin = join(root, "bin");
  mkdirSync(bin);
  symlinkSync(join(projectRoot, "bin", "pi-handoff.mjs"), join(bin, "pi-handoff"));
  return {
    root,
    home,
    agentDir,
    repo: join(root, "repo"),
    ...chooseSocketPath(root),
    env: isolatedEnv(projectRoot, home, agentDir, bin),
  };
}

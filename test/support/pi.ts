/**
 * The real Pi, offline, for end-to-end tests.
 *
 * Invariants:
 * - Every sandbox has its own HOME, XDG_CONFIG_HOME and PI_CODING_AGENT_DIR: nothing touches the
 *   real ~/.pi or ~/.config.
 * - The faux provider sits in the sandbox agent dir's extensions/, so every Pi started with that
 *   agent dir (the parent and any child it launches) answers offline and deterministically.
 * - Pi runs on the project's Node 22 (node_modules/node), whatever node is on the system PATH.
 * - `pi-handoff` (this checkout's) is on the sandbox's PATH, as every README install route puts it,
 *   unless asked not to (`recoveryOnPath: false`, for a test of an install route itself).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseSessionEntries, type FileEntry } from "@earendil-works/pi-coding-agent";
import { PROCESS_INFO_ENV } from "../../src/process/facts.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { isolatedGitEnv, makeTempDir, removeTempDir } from "./git-repo.ts";

export const PROJECT_ROOT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
export const NODE_BIN = realpathSync(join(PROJECT_ROOT, "node_modules", ".bin", "node"));
export const PI_CLI = realpathSync(join(PROJECT_ROOT, "node_modules", ".bin", "pi"));
export const EXTENSION_ENTRY = join(PROJECT_ROOT, "pi-extension", "index.ts");
export const FAUX_MODEL = "faux/faux-1";
const FAUX_EXTENSION = join(PROJECT_ROOT, "test", "support", "fixtures", "faux-provider.ts");
const BIN_DIR = join(PROJECT_ROOT, "node_modules", ".bin");

export interface PiSandbox {
  dir: string;
  home: string;
  agentDir: string;
  /** Environment for Pi, git and tmux: isolated HOME/XDG/agent dir, offline, Node 22 first on PATH. */
  env: Record<string, string>;
  cleanup(): void;
}

/**
 * Whether a variable of the test runner's environment reaches a sandboxed Pi, CLI or shell: no
 * multiplexer or Pi settings of the runner, except the forced process-facts implementation, so a
 * portable pass (`PI_HANDOFF_PROCESS_INFO=portable`) runs portable in every process it starts.
 */
export function keptInSandbox(key: string): boolean {
  if (key === PROCESS_INFO_ENV) return true;
  return !key.startsWith("TMUX") && !key.startsWith("HERDR") && !key.startsWith("ZELLIJ") && !key.startsWith("PI_");
}

/**
 * The environment of a shell outside any multiplexer that uses `agentDir`: the repository's
 * isolated git environment with only what `keptInSandbox` lets through, plus `PI_CODING_AGENT_DIR`.
 */
export function outsideShellEnv(repo: { env: NodeJS.ProcessEnv }, agentDir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(repo.env)) {
    if (value !== undefined && keptInSandbox(key)) env[key] = value;
  }
  env.PI_CODING_AGENT_DIR = agentDir;
  return env;
}

/**
 * A directory (made in `dir`) holding this checkout's `pi-handoff`, to put on a PATH: a handoff's
 * notice and `inspect` name `pi-handoff` only where it is on PATH (src/child/pi-command.ts).
 */
export function recoveryOnPath(dir: string): string {
  const bin = join(dir, "recovery-bin");
  mkdirSync(bin, { recursive: true });
  symlinkSync(join(PROJECT_ROOT, "bin", "pi-handoff.mjs"), join(bin, "pi-handoff"));
  return bin;
}

export function createPiSandbox(prefix = "phw-pi-", options: { recoveryOnPath?: boolean } = {}): PiSandbox {
  const dir = makeTempDir(prefix);
  const recoveryBin = recoveryOnPath(dir);
  const home = join(dir, "home");
  const agentDir = join(dir, "agent");
  mkdirSync(join(agentDir, "extensions"), { recursive: true });
  mkdirSync(home, { recursive: true });
  copyFileSync(FAUX_EXTENSION, join(agentDir, "extensions", "faux-provider.ts"));
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(isolatedGitEnv(home))) {
    if (value !== undefined && keptInSandbox(key)) env[key] = value;
  }
  Object.assign(env, {
    PATH: `${options.recoveryOnPath === false ? "" : `${recoveryBin}:`}${BIN_DIR}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    // Lineage adoption scans pi-subagents' store in every Pi: keep it inside the sandbox.
    PI_SUBAGENTS_TEMP_ROOT: join(dir, "pi-subagents"),
  });
  return { dir, home, agentDir, env, cleanup: () => removeTempDir(dir) };
}

/** `pi -p ...` in print mode; returns stdout. */
export function runPiPrint(
  sandbox: PiSandbox,
  cwd: string,
  args: readonly string[],
  extraEnv: Record<string, string> = {},
): string {
  return execFileSync(NODE_BIN, [PI_CLI, "-p", ...args], {
    cwd,
    env: { ...sandbox.env, ...extraEnv },
    encoding: "utf8",
    timeout: 60_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** The one session file Pi keeps for `cwd` in the sandbox's default session dir. */
export function onlySessionFile(sandbox: PiSandbox, cwd: string): string {
  const dir = defaultSessionDir(cwd, sandbox.agentDir);
  const files = readdirSync(dir).filter((name) => name.endsWith(".jsonl"));
  if (files.length !== 1) throw new Error(`Expected one session in ${dir}, found ${files.length}.`);
  return join(dir, files[0] ?? "");
}

export function readEntries(sessionFile: string): FileEntry[] {
  return parseSessionEntries(readFileSync(sessionFile, "utf8"));
}

/**
 * A shell line that starts the interactive Pi TUI in `cwd` with this package loaded once; with
 * `keepShell` the shell stays after Pi quits (no `exec`), so the pane can start Pi again.
 */
export function piTuiCommand(cwd: string, args: readonly string[], options: { keepShell?: boolean } = {}): string {
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  return `cd ${quote(cwd)} && ${options.keepShell === true ? "" : "exec "}${[NODE_BIN, PI_CLI, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY, ...args].map(quote).join(" ")}`;
}

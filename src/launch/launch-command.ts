/**
 * The one command line typed into the new pane to start the child Pi.
 *
 * Invariants:
 * - Every word is quoted for a POSIX shell (single quotes; `'` as `'\''`), so no value can
 *   run a command, whatever it contains. The quoting is tested against a hostile corpus with a
 *   real shell.
 * - A value holding a newline or another control character is refused: typed into a terminal
 *   it would submit a partial command.
 * - Only Pi's own configuration variables are forwarded, never the whole environment (the pane's
 *   scrollback would show secrets).
 */
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { MuxKind } from "../manifest/schema.ts";
import { HERDR_CHILD_ENV } from "../mux/herdr-protocol.ts";
import { HANDOFF_ID_ENV } from "../mux/types.ts";
import { hasControlCharacter } from "../text.ts";


/** Pi configuration variables a child must share with its parent to behave the same. */
const FORWARDED_ENV = ["PI_CODING_AGENT_SESSION_DIR", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY", "PI_PACKAGE_DIR"];

const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

export class LaunchCommandError extends Error {
  override readonly name = "LaunchCommandError";
}

export function shellQuote(word: string): string {
  if (hasControlCharacter(word)) {
    throw new LaunchCommandError(`Cannot type a value with a control character into a terminal: ${JSON.stringify(word)}.`);
  }
  if (word.length > 0 && SAFE_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface LaunchCommandInput {
  /** How to start Pi: e.g. [process.execPath, <pi cli.js>]. */
  piCommand: readonly string[];
  worktreePath: string;
  childSessionFile: string;
  /** Passed as --session-dir when the parent uses a custom session directory. */
  sessionDir?: string;
  agentDir: string;
  handoffId: string;
  model: { provider: string; id: string };
  thinkingLevel?: string;
  /** Trust project-local files for this run (only when the parent's project is trusted). */
  approve: boolean;
  /** Flags mirrored from the parent's command line (extensions, offline). */
  extraArgs: readonly string[];
  parentEnv: NodeJS.ProcessEnv;
  /** The backend the child runs on: inside Herdr the child also gets Herdr's agent hint (HERDR_AGENT=pi). */
  muxKind?: MuxKind;
  /**
   * A command (as words) that runs in the worktree first; Pi starts only if it succeeds (the
   * postCreate runner, see post-create.ts). Quoted like every other word.
   */
  prelude?: readonly string[];
}

export function buildLaunchCommand(input: LaunchCommandInput): string {
  const env: string[] = [`PI_CODING_AGENT_DIR=${input.agentDir}`];
  for (const name of FORWARDED_ENV) {
    const value = input.parentEnv[name];
    if (value !== undefined && value !== "") env.push(`${name}=${value}`);
  }
  env.push(`${HANDOFF_ID_ENV}=${input.handoffId}`);
  if (input.muxKind === "herdr") for (const [name, value] of Object.entries(HERDR_CHILD_ENV)) env.push(`${name}=${value}`);
  const args = [
    ...input.piCommand,
    "--session",
    input.childSessionFile,
    ...(input.sessionDir !== undefined ? ["--session-dir", input.sessionDir] : []),
    "--model",
    `${input.model.provider}/${input.model.id}`,
    ...(input.thinkingLevel !== undefined ? ["--thinking", input.thinkingLevel] : []),
    ...(input.approve ? ["--approve"] : []),
    ...input.extraArgs,
  ];
  const prelude = input.prelude !== undefined && input.prelude.length > 0 ? ` && ${input.prelude.map(shellQuote).join(" ")}` : "";
  return `cd ${shellQuote(input.worktreePath)}${prelude} && env ${[...env, ...args].map(shellQuote).join(" ")}`;
}

/**
 * How the running Pi was started: the same Node and the same Pi entry point start the child.
 * `argv[1]` is the script Node ran (npm's `.bin/pi` link, Pi's cli.js); a single-file build
 * (Bun) has no script on disk, and then the executable alone starts Pi.
 */
export function currentPiCommand(execPath = process.execPath, argv: readonly string[] = process.argv): string[] {
  const entry = argv[1];
  if (entry === undefined) return [execPath];
  const script = canonical(resolve(entry));
  if (script === undefined || script === canonical(execPath)) return [execPath];
  return [execPath, script];
}

function canonical(path: string): string | undefined {
  try {
    return statSync(path).isFile() ? realpathSync(path) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Flags of the parent's command line that the child needs to load the same extensions:
 * `-e/--extension` (local paths made absolute against the parent's process cwd), `--offline`,
 * `--no-extensions`.
 */
export function mirroredPiFlags(argv: readonly string[], processCwd: string): string[] {
  const flags: string[] = [];
  for (let i = 2; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") break;
    let extension: string | undefined;
    if ((arg === "-e" || arg === "--extension") && i + 1 < argv.length) extension = argv[++i];
    else if (arg.startsWith("--extension=")) extension = arg.slice("--extension=".length);
    if (extension !== undefined) {
      flags.push("--extension", looksLikeLocalPath(extension) ? resolve(processCwd, extension) : extension);
    } else if (arg === "--offline" || arg === "--no-extensions" || arg === "-ne") {
      flags.push(arg === "-ne" ? "--no-extensions" : arg);
    }
  }
  return flags;
}

function looksLikeLocalPath(source: string): boolean {
  if (isAbsolute(source)) return false;
  return !/^(?:npm|git|builtin|https?|ssh):/.test(source);
}

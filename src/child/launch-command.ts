/**
 * How the child Pi is started: `launchCommandFor(manifest)` derives the command from the manifest,
 * and `shellQuote` quotes every word the launcher (launcher-file.ts) holds.
 *
 * Invariants:
 * - Every word is quoted for a POSIX shell by the one quoting function (process/sh-quote.ts), so no
 *   value can run a command, whatever it contains. The quoting is tested against a hostile corpus
 *   with a real shell.
 * - A value holding a newline or another control character is refused: typed into a terminal
 *   it would submit a partial command.
 * - Only Pi's own configuration variables are forwarded, never the whole environment (the pane's
 *   scrollback would show secrets).
 * - What a handoff reserved and set (its ports, the settings' `env` as recorded) is derived from
 *   its manifest here alone (`handoffVariables`), for the launcher (which exports it to postCreate,
 *   Pi and the shell after it), relaunch and `pi-handoff env` alike.
 */
import { realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import type { Manifest } from "../manifest/schema.ts";
import { childEnvFor } from "../mux/registry.ts";
import { HANDOFF_ID_ENV } from "../process/facts.ts";
import { shQuote } from "../process/sh-quote.ts";
import { ENV_VARIABLE_NAME, hasControlCharacter } from "../text.ts";
import { defaultSessionDir } from "../session/paths.ts";

/** Pi configuration variables a child must share with its parent to behave the same. */
const FORWARDED_ENV = [
  "PI_CODING_AGENT_SESSION_DIR",
  "PI_OFFLINE",
  "PI_SKIP_VERSION_CHECK",
  "PI_TELEMETRY",
  "PI_PACKAGE_DIR",
];

/** The first reserved port, and all of them comma-separated (documented in the README). */
export const PORT_ENV = "PI_HANDOFF_PORT";
export const PORTS_ENV = "PI_HANDOFF_PORTS";

/**
 * The variables everything run for a handoff gets, in order: its ports (when it reserved any),
 * then the settings' `env` as the manifest recorded it. Empty for a handoff that has neither.
 */
export function handoffVariables(manifest: Pick<Manifest, "ports" | "env">): Array<[string, string]> {
  const ports = manifest.ports ?? [];
  return [
    ...(ports.length > 0
      ? ([
          [PORT_ENV, String(ports[0])],
          [PORTS_ENV, ports.join(",")],
        ] as Array<[string, string]>)
      : []),
    ...Object.entries(manifest.env ?? {}),
  ];
}

export class LaunchCommandError extends Error {
  override readonly name = "LaunchCommandError";
}

/** A word of the launcher, quoted by `shQuote`; one holding a control character is refused (see the header). */
export function shellQuote(word: string): string {
  if (hasControlCharacter(word)) {
    throw new LaunchCommandError(
      `Cannot type a value with a control character into a terminal: ${JSON.stringify(word)}.`,
    );
  }
  return shQuote(word);
}

/**
 * Everything that starts a handoff's child, derived from what its manifest records: the directory,
 * the variables set for Pi alone, and Pi's argv. Rendered into the launcher (launcher-file.ts),
 * never typed.
 */
export interface LaunchCommand {
  handoffId: string;
  cwd: string;
  /** `NAME=value` pairs set for Pi only, in order: agent dir, forwarded Pi settings, the marker. */
  env: Array<[string, string]>;
  /** The handoff's own variables (`handoffVariables`), exported for everything the launcher runs. */
  handoffEnv: Array<[string, string]>;
  /** Pi's argv, starting with the executable. */
  argv: string[];
}

/** What the environment launching the child contributes (the rest comes from the manifest). */
export interface LaunchEnvironment {
  /** How to start Pi here: e.g. [process.execPath, <pi cli.js>]. */
  piCommand: readonly string[];
  /** The agent dir the child uses (the one holding the manifests). */
  agentDir: string;
  /** The launching process's environment: only Pi's own settings are forwarded from it. */
  env: NodeJS.ProcessEnv;
}

export type LaunchCommandResult =
  | { ok: true; command: LaunchCommand }
  | { ok: false; code: "no_child_session" | "no_launch_settings" | "no_pi" | "bad_command"; message: string };

/**
 * The one derivation of the child's launch, for the handoff and for recovery's relaunch alike:
 * the child session, its session dir (recorded at fork time; for a manifest from before that, a
 * session outside Pi's default dir for the worktree means a custom one), the model, thinking
 * level, mirrored flags and approval as recorded, and the handoff marker. and what the terminal asks for (mux/registry.ts).
 */
export function launchCommandFor(manifest: Manifest, environment: LaunchEnvironment): LaunchCommandResult {
  const { child } = manifest;
  const sessionFile = child.sessionFile;
  if (sessionFile === undefined) {
    return {
      ok: false,
      code: "no_child_session",
      message: `Handoff ${manifest.id} has no child session (it stopped at ${manifest.state}), so there is nothing to start.`,
    };
  }
  if (child.model === undefined) {
    return {
      ok: false,
      code: "no_launch_settings",
      message: `Handoff ${manifest.id} was recorded without its model and launch settings, so it cannot be started safely; start it by hand in its worktree with: pi --session ${sessionFile}.`,
    };
  }
  if (environment.piCommand.length === 0) {
    return {
      ok: false,
      code: "no_pi",
      message: "No pi executable was found on PATH (nor a Pi package next to this one); put pi on PATH and try again.",
    };
  }
  const sessionDir = child.sessionDir ?? legacySessionDir(sessionFile, manifest.worktree.path, environment.agentDir);
  const env = piVariables(manifest, environment);
  const argv = [
    ...environment.piCommand,
    "--session",
    sessionFile,
    ...(sessionDir.custom ? ["--session-dir", sessionDir.dir] : []),
    "--model",
    `${child.model.provider}/${child.model.id}`,
    ...(child.thinkingLevel !== undefined ? ["--thinking", child.thinkingLevel] : []),
    ...(child.approve === true ? ["--approve"] : []),
    ...(child.extraArgs ?? []),
  ];
  const handoffEnv = handoffVariables(manifest);
  const command: LaunchCommand = { handoffId: manifest.id, cwd: manifest.worktree.path, env, handoffEnv, argv };
  const unquotable = [command.cwd, ...[...handoffEnv, ...env].map(([name, value]) => `${name}=${value}`), ...argv].find(
    (word) => hasControlCharacter(word),
  );
  if (unquotable !== undefined) {
    return {
      ok: false,
      code: "bad_command",
      message: `The launch of handoff ${manifest.id} holds a value with a control character, which cannot be passed safely: ${JSON.stringify(unquotable)}.`,
    };
  }
  return { ok: true, command };
}

/**
 * The variables set for Pi alone, in order: agent dir, forwarded Pi settings, the marker, the
 * terminal's own. Known once the manifest exists, so a warm start (warm-start.ts) gets them too.
 */
export function piVariables(
  manifest: Pick<Manifest, "id" | "mux">,
  environment: Pick<LaunchEnvironment, "agentDir" | "env">,
): Array<[string, string]> {
  const env: Array<[string, string]> = [["PI_CODING_AGENT_DIR", environment.agentDir]];
  for (const name of FORWARDED_ENV) {
    const value = environment.env[name];
    if (value !== undefined && value !== "") env.push([name, value]);
  }
  env.push([HANDOFF_ID_ENV, manifest.id]);
  // What the child's terminal recognises its agent by (Herdr: its hooks and status).
  env.push(...Object.entries(childEnvFor(manifest.mux)));
  return env;
}

/** A manifest from before `child.sessionDir` was recorded: its session's dir against Pi's default. */
function legacySessionDir(
  sessionFile: string,
  worktreePath: string,
  agentDir: string,
): { dir: string; custom: boolean } {
  const dir = dirname(sessionFile);
  return { dir, custom: dir !== defaultSessionDir(worktreePath, agentDir) };
}

/** `export NAME=value` lines, every value quoted: safe to source, or to `eval`, whatever it holds. */
export function exportLines(variables: ReadonlyArray<readonly [string, string]>): string[] {
  return variables.map(([name, value]) => {
    if (!ENV_VARIABLE_NAME.test(name)) throw new LaunchCommandError(`${JSON.stringify(name)} is not a variable name.`);
    return `export ${name}=${shellQuote(value)}`;
  });
}

/** `env NAME=value... pi ...`, every word quoted: how the launcher runs Pi. */
export function envInvocation(command: LaunchCommand): string {
  return ["env", ...command.env.map(([name, value]) => `${name}=${value}`), ...command.argv].map(shellQuote).join(" ");
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

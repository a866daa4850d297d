/**
 * What every `pi-handoff` command shares: the io it writes through, the exit codes, the two
 * errors that carry a command's name to `main` (bad input, a refusal), and the small look-ups
 * most verbs make (the handoff a name designates, a repository's manifests, the deps).
 *
 * Invariants:
 * - Exit codes: 0 done; 1 refused or failed; 2 bad input. A verb throws `UsageError` for bad input
 *   and `Refusal` for a refusal or failure, already worded; `main` (cli.ts) prints it once,
 *   prefixed `pi-handoff <command>: `.
 * - A handoff is named by its id, a unique start of it, or its branch (inventory/resolve.ts).
 * - Heavy modules load when a command runs (dynamic imports), not when this one does.
 */
import type { HandoffStep, Manifest } from "../manifest/schema.ts";
import type { LandGit } from "../git/land.ts";
import type { RecoveryCommand } from "./command-line.ts";
import type { RecoveryDeps } from "./deps.ts";

export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Where relative paths given (`--repo .`) are taken from (default: this process's working directory). */
  cwd?: string;
  /** The Node that runs this CLI; a JavaScript Pi is started with it. */
  execPath: string;
  now?: () => Date;
  /** The system this runs on (tests pass another one); defaults to `process.platform`. */
  platform?: NodeJS.Platform;
  /** What the messages call this program (`/handoffs` when Pi runs the same commands). */
  program?: string;
  /** Where `program --help` is (default: `<program> --help`). */
  helpPointer?: string;
  /** How to start Pi on a relaunch (default: the Pi found on PATH, run with `execPath`). */
  piCommand?: readonly string[];
  /** Progress of a relaunch (default: `<step>: <text>` lines on stderr). */
  progress?: (step: HandoffStep, text: string) => void;
  /** The recovery dependencies (default: the real ones for `env`). */
  deps?: RecoveryDeps;
  /** The width of the terminal stdout is, when it is one (`list` fits it; `COLUMNS` in `env` wins). */
  columns?: number;
}

/**
 * How wide `list` may be: `COLUMNS` when set to a positive number (also in a pipe, as `ls` reads
 * it), else the terminal's width when stdout is one; undefined (no limit) in a pipe or a file.
 */
export function listWidth(io: Pick<CliIo, "env" | "columns">): number | undefined {
  const asked = io.env.COLUMNS?.trim() ?? "";
  if (/^[1-9][0-9]{0,5}$/.test(asked)) return Number.parseInt(asked, 10);
  return io.columns !== undefined && Number.isSafeInteger(io.columns) && io.columns > 0 ? io.columns : undefined;
}

/** Bad input (exit 2); `command` makes the prefix `pi-handoff <command>:`. */
export class UsageError extends Error {
  readonly command: RecoveryCommand | undefined;
  constructor(message: string, command?: RecoveryCommand) {
    super(message);
    this.command = command;
  }
}

/** A refusal or failure (exit 1) of a command, already worded. */
export class Refusal extends Error {
  readonly command: RecoveryCommand;
  constructor(message: string, command: RecoveryCommand) {
    super(message);
    this.command = command;
  }
}

export function prefix(io: Pick<CliIo, "program">, command: RecoveryCommand | undefined): string {
  const program = io.program ?? "pi-handoff";
  return command === undefined ? `${program}: ` : `${program} ${command}: `;
}

/**
 * The end of a command on one handoff: done prints its message (exit 0); an unknown handoff is
 * bad input (exit 2); anything else is a refusal or failure (exit 1).
 */
export function finish(
  io: CliIo,
  command: RecoveryCommand,
  message: string,
  outcome: { done: boolean; notFound: boolean },
): number {
  if (outcome.notFound) throw new UsageError(message, command);
  if (!outcome.done) throw new Refusal(message, command);
  io.stdout(`${message}\n`);
  return EXIT_OK;
}

export type CliDeps = RecoveryDeps;

export async function makeDeps(io: CliIo): Promise<CliDeps> {
  return io.deps ?? (await import("./deps.ts")).createRecoveryDeps(io.env, io.now);
}

/** The id of the handoff `name` designates (an id, a unique start of one, or a branch). */
export async function resolveId(deps: CliDeps, command: RecoveryCommand, name: string): Promise<string> {
  const { resolveHandoffName } = await import("../inventory/resolve.ts");
  const resolved = await resolveHandoffName(deps.store, name);
  if (!resolved.ok) throw new UsageError(resolved.message, command);
  return resolved.id;
}

/** The manifests of one repository (`--repo`), or all; a bad directory is bad input. */
export async function manifestsOf(
  deps: CliDeps,
  command: RecoveryCommand,
  repoDir: string | undefined,
): Promise<Manifest[]> {
  let commonDir: string | undefined;
  if (repoDir !== undefined) {
    const repo = await deps.git.findRepository(repoDir);
    if (repo === undefined) throw new UsageError(`${repoDir} is not inside a git repository.`, command);
    commonDir = repo.commonDir;
  }
  return (await deps.store.list()).flatMap((entry) =>
    entry.ok && (commonDir === undefined || entry.manifest.repo.commonDir === commonDir) ? [entry.manifest] : [],
  );
}

/** The landing's git (merge-tree and friends), with its longer per-call bound. */
export async function landGitFor(env: NodeJS.ProcessEnv): Promise<LandGit> {
  const [{ LandGit }, { gitCallMs }, { LAND_GIT_TIMEOUT_MS }] = await Promise.all([
    import("../git/land.ts"),
    import("../config/waits.ts"),
    import("./deps.ts"),
  ]);
  return new LandGit({ env, timeoutMs: gitCallMs(env, LAND_GIT_TIMEOUT_MS) });
}

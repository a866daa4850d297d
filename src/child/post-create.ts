/**
 * `postCreate` commands: run visibly in the new pane, in the worktree, before the child Pi starts.
 *
 * The launcher (launcher-file.ts) runs `/bin/sh <runner> <command>...` in the worktree as its
 * prelude, and Pi only when every command succeeded. The runner (a fixed script written per handoff
 * beside its manifest) echoes each command before it runs it and records how they ended in a status
 * file, `<exit status> <command number>`, which the parent waits for: a failure is recorded as a
 * failed launch with that exit status. The runner says what failed; the launcher then says how to
 * run them again (it knows whether a line was typed in the pane).
 *
 * Invariants:
 * - Every word of the typed line is quoted by `shellQuote` (launch-command.ts); the commands
 *   themselves are the user's shell code, run by `/bin/sh -c` exactly as written in the settings.
 * - The status file is written atomically (temp file, then rename), so the parent never reads half
 *   of it; it is written once per run of the line, also when the user interrupts a command.
 * - The runner and status file live beside the manifest (`<id>.post-create.sh`/`.status`), never in
 *   the worktree, so they neither dirty it nor get carried anywhere; a new handoff id is new files.
 */
import { shellQuote } from "./launch-command.ts";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { readTextIfPresent } from "../fs/probe.ts";
import { unlinkEach, type Deletions } from "../fs/unlink.ts";

export const POST_CREATE_SHELL = "/bin/sh";

/** The variables every postCreate command gets (documented in the README). */
export const POST_CREATE_VARIABLES = {
  handoffId: "PI_HANDOFF_ID",
  mainCheckout: "PI_HANDOFF_MAIN_CHECKOUT",
  worktreePath: "PI_HANDOFF_WORKTREE",
  branch: "PI_HANDOFF_BRANCH",
} as const;

export interface PostCreateFiles {
  runnerFile: string;
  statusFile: string;
}

export interface PostCreateStatus {
  exitStatus: number;
  /** The 1-based number of the command that failed, or the number of commands when all succeeded. */
  command: number;
}

/** Where a handoff's runner and status file go: beside its manifest. */
export function postCreateFiles(manifestPath: string): PostCreateFiles {
  const stem = manifestPath.replace(/\.json$/, "");
  return { runnerFile: `${stem}.post-create.sh`, statusFile: `${stem}.post-create.status` };
}

export interface RunnerInput {
  statusFile: string;
  handoffId: string;
  mainCheckout: string;
  worktreePath: string;
  branch: string;
}

/**
 * The runner: runs its arguments one by one with `/bin/sh -c` and records how they ended. The
 * commands get `PI_HANDOFF_ID`, `PI_HANDOFF_MAIN_CHECKOUT`, `PI_HANDOFF_WORKTREE` and
 * `PI_HANDOFF_BRANCH` in their environment. An interrupt (Ctrl-C) is recorded as a failure too.
 */
export function runnerScript(input: RunnerInput): string {
  const names = Object.values(POST_CREATE_VARIABLES);
  const assignments = (Object.keys(POST_CREATE_VARIABLES) as Array<keyof typeof POST_CREATE_VARIABLES>).map(
    (key) => `${POST_CREATE_VARIABLES[key]}=${shellQuote(input[key])}`,
  );
  return [
    "# Written by pi-handoff-worktree: runs the postCreate commands given as arguments, one by one, in the",
    "# current directory (the worktree), and records how they ended in the status file the handoff waits for.",
    `status_file=${shellQuote(input.statusFile)}`,
    ...assignments,
    `export ${names.join(" ")}`,
    'record() { printf \'%s %s\\n\' "$1" "$2" > "$status_file.tmp" && mv -f "$status_file.tmp" "$status_file"; }',
    "total=$#",
    "index=0",
    'trap \'record 130 "$index"; printf "\\n[postCreate] interrupted; Pi was not started.\\n"; exit 130\' INT TERM HUP',
    'for command in "$@"; do',
    "  index=$((index + 1))",
    '  printf \'[postCreate %s/%s] %s\\n\' "$index" "$total" "$command"',
    `  ${POST_CREATE_SHELL} -c "$command"`,
    "  status=$?",
    '  if [ "$status" -ne 0 ]; then',
    '    record "$status" "$index"',
    '    printf \'[postCreate %s/%s] failed with exit status %s; Pi was not started.\\n\' "$index" "$total" "$status"',
    '    exit "$status"',
    "  fi",
    "done",
    'record 0 "$total"',
    'printf \'[postCreate %s/%s] done: every command succeeded; starting Pi.\\n\' "$total" "$total"',
    "",
  ].join("\n");
}

/** Deletes a retired handoff's runner and status file; how many went. */
export function deletePostCreateFiles(files: PostCreateFiles): Promise<Deletions> {
  return unlinkEach([files.runnerFile, files.statusFile]);
}

/** Writes the runner (replacing one from an earlier attempt at this same handoff). */

export async function writeRunner(files: PostCreateFiles, input: Omit<RunnerInput, "statusFile">): Promise<void> {
  await writeFileAtomic(files.runnerFile, runnerScript({ ...input, statusFile: files.statusFile }));
}

/** The words typed before the Pi launch: `/bin/sh <runner> <command>...`. */
export function postCreatePrelude(files: PostCreateFiles, commands: readonly string[]): string[] {
  return [POST_CREATE_SHELL, files.runnerFile, ...commands];
}

/** The recorded outcome, or undefined while the commands run (or before the line ran at all). */
export async function readPostCreateStatus(statusFile: string): Promise<PostCreateStatus | undefined> {
  const text = await readTextIfPresent(statusFile);
  if (text === undefined) return undefined;
  const match = /^(\d+) (\d+)\n?$/.exec(text);
  if (match === null) return undefined;
  return { exitStatus: Number(match[1]), command: Number(match[2]) };
}

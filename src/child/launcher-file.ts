/**
 * The launcher: a small POSIX sh script beside the manifest that starts a handoff's child Pi, so
 * what reaches the pane is short and of bounded length whatever the paths are (`sh '<launcher>'`
 * typed, or the tmux window's own command), instead of a line that grows with every path and flag
 * and that a tty cuts at its line limit (1024 bytes on macOS).
 *
 * Files, all beside the manifest (`<stem>` is the manifest path without `.json`):
 * - `<stem>.launch.sh`: the launcher's fixed logic, written once per handoff;
 * - `<stem>.launch.params`: what to start (directory, postCreate prelude, `env ... pi ...`), the
 *   handoff's own variables (its ports, the settings' `env`: exported, so postCreate, Pi and the
 *   shell after it all get them) and the launch token, written atomically at each launch step; the
 *   launcher sources it;
 * - `<stem>.launch.window`: for a launcher that is the window's command, the go-ahead of the
 *   launch step (`window_go=<token>`) or the word that none comes (`window_cancelled=<why>`);
 * - `<stem>.launch.pid`: the lock, the pid of the launcher (the pane's command) or of Pi (typed);
 * - `<stem>.launch.started`: `<token> <pid>`, the launcher's announcement that it started;
 * - `<stem>.launch.refused`: `<token> <pid>`, a run that found another one's Pi alive;
 * - `<stem>.launch.warm`: what a warm Pi runs with (warm-start.ts), written with the params;
 *   `<stem>.launch.go`: the launcher's go to that Pi, which takes the file away when it runs;
 *   `<stem>.launch.warmed`: `<token> <pid>`, that Pi's note that it ran.
 *
 * Invariants:
 * - Every word in the params file is quoted by `shellQuote` (tested against a hostile corpus with
 *   a real shell); the launcher itself holds only quoted words (paths, the command that runs
 *   `pi-handoff` here, which it names where it gives up) and fixed text.
 * - Idempotent: a second run while the first one's launcher or Pi lives exits at once (the lock is
 *   the pid file of locks/pid-file.ts: created with `set -C`, atomic, and checked with `kill -0`,
 *   which needs no process table; how that matches the liveness rule is said there), and says so.
 * - It announces its start before anything else happens, so the parent can tell "typed but never
 *   ran" (lost input) from "ran": only then is typing again considered.
 * - Input typed behind the launch line (a retyped line that was only late, not lost) is drained
 *   before Pi starts, so it never lands in Pi's editor.
 * - When the postCreate prelude fails, it says how to run it again and start Pi: the line typed
 *   above, or (as the window's command, where nothing was typed) that line printed in full. A warm
 *   process it ends on purpose is never reported by the shell ("Terminated").
 * - As the window's command, it waits for the launch step's go-ahead while the handoff's process
 *   lives (bounded), and whatever happens then leaves the user's shell in the pane. Run by hand
 *   (typed), it needs only the params, so a launch that failed can still be started by hand.
 * - As the window's command with a warm start, it starts Pi's Node at once (holding Pi back until
 *   the launch step, warm-gate.mjs) and lets it go where it would start Pi; a warm process that is
 *   gone or refuses leaves the go file, and Pi is started cold. The warm process is always waited
 *   for or ended before the launcher goes on, so the pane never has two readers.
 * - The typed line stays short: when `sh '<launcher>'` would be long (a deep agent dir), it names
 *   a link in a private directory under /tmp instead (owned by this user, mode 0700).
 */
import { randomBytes } from "node:crypto";
import { readlink, symlink, unlink } from "node:fs/promises";
import { privateDirectory } from "../locks/claim.ts";
import { dropPidFile, readPidFile, shReleasePidFile, shTakePidFile } from "../locks/pid-file.ts";
import { join } from "node:path";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { CONTROL_CHARACTERS } from "../text.ts";
import { envInvocation, exportLines, shellQuote, type LaunchCommand } from "./launch-command.ts";
import { readTextIfPresent } from "../fs/probe.ts";
import { unlinkEach, type Deletions } from "../fs/unlink.ts";
import { WARM_ENV, warmSpecFor, writeWarmSpec, type WarmStart } from "./warm-start.ts";

/**
 * How long the window's launcher sleeps between looks for its go-ahead: the go-ahead is seen at
 * most this late (a tenth of a second cost a handoff 50 ms on average), for one `sleep` per look.
 */
const NAP_MS = 20;

/** Longest typed line that names the launcher directly; longer ones go through the short link. */
export const MAX_DIRECT_LINE = 200;
/** Where the short links live: a fixed, short directory, whatever `$TMPDIR` or the agent dir are. */
const SHORT_LINK_ROOT = "/tmp";

export interface LauncherFiles {
  script: string;
  params: string;
  window: string;
  lock: string;
  started: string;
  refused: string;
  warmSpec: string;
  warmGo: string;
  warmed: string;
}

/**
 * The handoff a file beside the manifests belongs to, when it is one of its launch files (the
 * launcher's and the postCreate runner's), so a store listing can explain it.
 */
export function launchFileOwner(name: string): string | undefined {
  return /^(.+)\.(?:launch\.(?:sh|params|window|pid|started|refused|warm|go|warmed)|post-create\.(?:sh|status)|fork)$/.exec(
    name,
  )?.[1];
}

/** Where a fork begun beside the worktree step writes (handoff/transaction.ts), beside the manifest: the handoff's own. */
export function forkStagingDir(manifestPath: string): string {
  return `${manifestPath.replace(/\.json$/, "")}.fork`;
}

export function launcherFiles(manifestPath: string): LauncherFiles {
  const stem = manifestPath.replace(/\.json$/, "");
  return {
    script: `${stem}.launch.sh`,
    params: `${stem}.launch.params`,
    window: `${stem}.launch.window`,
    lock: `${stem}.launch.pid`,
    started: `${stem}.launch.started`,
    refused: `${stem}.launch.refused`,
    warmSpec: `${stem}.launch.warm`,
    warmGo: `${stem}.launch.go`,
    warmed: `${stem}.launch.warmed`,
  };
}

export interface LauncherScriptInput {
  handoffId: string;
  files: LauncherFiles;
  /** As the window's command: wait for the params while this process (the handoff's) lives... */
  ownerPid: number;
  /** ...and at most this long. */
  paramsWaitMs: number;
  /** As the window's command: start Pi's Node this way while waiting (warm-start.ts). */
  warm?: WarmStart;
  /** How the user runs `pi-handoff` (src/child/pi-command.ts), named where the launcher gives up. */
  recoveryCommand: string;
}

/**
 * The launcher. `sh <launcher>` (typed) ends by exec'ing Pi. `sh <launcher> window <argv...>`
 * (the window's command) runs Pi as its child and then execs `<argv...>`, the user's shell.
 * `byHand` is the line that runs it by hand (`typedLauncherLine`), printed in full where the pane
 * has none above it to run again (a window that ran the launcher as its command).
 * Long because it is one shell template, kept whole so it reads top to bottom as the script it writes.
 */
export function launcherScript(input: LauncherScriptInput & { byHand: string }): string {
  const { files } = input;
  const ticks = Math.max(1, Math.ceil(input.paramsWaitMs / NAP_MS));
  return [
    `# Written by pi-handoff-worktree: starts the child Pi of handoff ${input.handoffId}. Run it with sh;`,
    "# a second run while that Pi lives exits at once. What it starts is in the params file beside it.",
    `id=${shellQuote(input.handoffId)}`,
    `params=${shellQuote(files.params)}`,
    `window_file=${shellQuote(files.window)}`,
    `lock=${shellQuote(files.lock)}`,
    `started=${shellQuote(files.started)}`,
    `refused=${shellQuote(files.refused)}`,
    `owner_pid=${input.ownerPid}`,
    `wait_ticks=${ticks}`,
    `by_hand=${shellQuote(input.byHand)}`,
    `list_handoffs=${shellQuote(`${input.recoveryCommand} list`)}`,
    "mode=typed",
    "warm_pid=",
    'if [ "${1:-}" = window ]; then mode=window; shift; fi',
    // As the pane's own process, an interrupt meant for Pi or a postCreate command must not end it
    // (the pane would close): a handler, not an ignore, so the commands it runs still get it.
    'if [ "$mode" = window ]; then trap : INT QUIT; fi',
    "say() { printf '[pi-handoff] %s\\n' \"$*\"; }",
    'note() { printf \'%s %s\\n\' "${launch_token:-?}" "$2" > "$1.$$.tmp" && mv -f "$1.$$.tmp" "$1"; }',
    shReleasePidFile("release", "lock"),
    // NAP_MS where `sleep` takes fractions (GNU, BSD, busybox); else a whole second, counted as such.
    `nap() { sleep ${NAP_MS / 1000} 2>/dev/null && return 0; sleep 1; waited=$((waited + ${Math.round(1000 / NAP_MS) - 1})); }`,
    ...warmFunctions(files, input.warm),
    "launch_main() {",
    '  if [ "$mode" = window ]; then',
    '    if [ ! -f "$window_file" ]; then say "Preparing handoff $id; its Pi starts here in a moment."; fi',
    "    warm_start",
    "    waited=0",
    '    while [ ! -f "$window_file" ]; do',
    '      if ! kill -0 "$owner_pid" 2>/dev/null; then say "The handoff stopped before starting Pi here (see: $list_handoffs)."; return 1; fi',
    '      if [ "$waited" -ge "$wait_ticks" ]; then say "Gave up waiting for handoff $id to start Pi here (see: $list_handoffs)."; return 1; fi',
    "      nap",
    "      waited=$((waited + 1))",
    "    done",
    '    . "$window_file" || return 1',
    '    if [ -n "${window_cancelled:-}" ]; then say "$window_cancelled"; return 1; fi',
    "  fi",
    '  if [ ! -f "$params" ]; then say "Nothing to start yet for handoff $id (no $params)."; return 1; fi',
    '  . "$params" || return 1',
    // The lock: created atomically; a live holder means this handoff's Pi runs (or is starting).
    ...shTakePidFile(
      "lock",
      [
        'note "$refused" "$holder"',
        'say "The Pi of handoff $id already runs (pid $holder), so no second one was started."',
        "return 0",
      ],
      'say "Another launcher of handoff $id just started; nothing was started."; return 0',
    ),
    '  note "$started" "$$"',
    // Typed input queued behind this line (a launch line typed again because the first was late)
    // must not reach Pi's editor: read whatever is pending, without waiting.
    "  if [ -t 0 ] && saved_tty=$(stty -g 2>/dev/null); then",
    "    stty -icanon min 0 time 0 2>/dev/null && dd bs=65536 count=4 of=/dev/null 2>/dev/null",
    '    stty "$saved_tty" 2>/dev/null',
    "  fi",
    '  if ! cd "$launch_cwd"; then release; say "Cannot enter $launch_cwd, so Pi was not started."; return 1; fi',
    // The postCreate runner said what failed; what to run once it is fixed depends on whether a
    // line was typed here (it is above) or the window ran the launcher as its command (none is).
    "  if ! launch_prelude; then",
    "    release",
    '    if [ "$mode" = window ]; then say "To run the postCreate commands again and then start Pi, type: $by_hand";',
    '    else say "To run the postCreate commands again and then start Pi, run the line above again: $by_hand"; fi',
    "    return 1",
    "  fi",
    '  if [ "$mode" = window ]; then',
    "    warm_or_cold_pi",
    "    status=$?",
    "    release",
    "    return $status",
    "  fi",
    // Typed: Pi replaces this shell, so the lock names Pi's own pid from now on.
    "  launch_exec_pi",
    "}",
    "launch_main",
    "status=$?",
    "warm_stop",
    'if [ "$mode" = window ] && [ "$#" -gt 0 ]; then exec "$@"; fi',
    "exit $status",
    "",
  ].join("\n");
}

/**
 * The launcher's warm start, run as the window's command: `warm_start` starts Pi's Node with the
 * gate (stdin the pane's: an asynchronous list would get /dev/null), `warm_or_cold_pi` lets it go
 * or starts Pi cold, `warm_stop` ends a warm process that was not used. Without a warm start they
 * start Pi cold and do nothing else.
 */
function warmFunctions(files: LauncherFiles, warm: WarmStart | undefined): string[] {
  if (warm === undefined) return ["warm_start() { :; }", "warm_stop() { :; }", "warm_or_cold_pi() { launch_pi; }"];
  const gateFiles = JSON.stringify({ go: files.warmGo, spec: files.warmSpec, ran: files.warmed });
  const exports = exportLines([...warm.variables, [WARM_ENV, gateFiles]]);
  return [
    `warm_go=${shellQuote(files.warmGo)}`,
    "warm_start() {",
    "  exec 9<&0",
    `  ( ${exports.join("; ")}; exec ${warm.argv.map(shellQuote).join(" ")} ) 0<&9 9<&- &`,
    "  warm_pid=$!",
    "  exec 9<&-",
    "}",
    // An interrupt the launcher traps ends `wait` early: wait again while the process lives.
    "warm_wait() {",
    '  wait "$warm_pid"; warm_status=$?',
    '  while [ "$warm_status" -gt 128 ] && kill -0 "$warm_pid" 2>/dev/null; do wait "$warm_pid"; warm_status=$?; done',
    "  warm_pid=",
    "  return $warm_status",
    "}",
    // Killed here on purpose: the shell's report of it ("Terminated", on a terminal) is not news.
    'warm_stop() { if [ -n "$warm_pid" ]; then kill "$warm_pid" 2>/dev/null; warm_wait 2>/dev/null; fi; return 0; }',
    "warm_or_cold_pi() {",
    '  if [ -n "$warm_pid" ] && [ "${launch_warm:-}" = 1 ] && printf \'%s\\n\' "$launch_token" > "$warm_go.$$.tmp" && mv -f "$warm_go.$$.tmp" "$warm_go"; then',
    "    warm_wait; warm_status=$?",
    // The gate takes the go file away when Pi runs in it; left there, Pi did not run.
    '    if [ ! -f "$warm_go" ]; then return $warm_status; fi',
    '    rm -f "$warm_go"',
    "  else",
    '    rm -f "$warm_go.$$.tmp"',
    "    warm_stop",
    "  fi",
    "  launch_pi",
    "}",
  ];
}

export interface LauncherParams {
  /** Identifies this launch step, so a start marker of an earlier one never counts. */
  token: string;
  command: LaunchCommand;
  /** Words run in the worktree before Pi; Pi starts only if they succeed (post-create.ts). */
  prelude?: readonly string[];
  /** The confirm fault: start nothing (the launcher still announces its start). */
  startNothing?: boolean;
  /** A warm Pi the window's launcher started may run this launch (its spec is written too). */
  warm?: boolean;
}

/** The params file: every value quoted; `launch_pi` runs Pi as a child, `launch_exec_pi` becomes it. */
export function launcherParams(params: LauncherParams): string {
  const invocation = envInvocation(params.command);
  const prelude =
    params.prelude !== undefined && params.prelude.length > 0 ? params.prelude.map(shellQuote).join(" ") : ":";
  return [
    `# Written by pi-handoff-worktree at the launch step of handoff ${params.command.handoffId}; sourced by its launcher.`,
    `launch_token=${shellQuote(params.token)}`,
    `launch_cwd=${shellQuote(params.command.cwd)}`,
    ...exportLines(params.command.handoffEnv),
    `launch_prelude() { ${prelude}; }`,
    ...(params.startNothing === true
      ? [
          "# The confirm fault (PI_HANDOFF_FAULT=confirm): nothing is started.",
          "launch_pi() { :; }",
          "launch_exec_pi() { return 0; }",
        ]
      : [
          `launch_pi() { ${invocation}; }`,
          `launch_exec_pi() { exec ${invocation}; }`,
          ...(params.warm === true ? ["launch_warm=1"] : []),
        ]),
    "",
  ].join("\n");
}

export function newLaunchToken(): string {
  return randomBytes(6).toString("hex");
}

export async function writeLauncher(input: LauncherScriptInput): Promise<void> {
  const byHand = await typedLauncherLine(input.files, input.handoffId);
  await writeFileAtomic(input.files.script, launcherScript({ ...input, byHand }));
}

/** The params, and with a warm start the spec first: the go follows the params, so both are there. */
export async function writeLauncherParams(files: LauncherFiles, params: LauncherParams): Promise<void> {
  if (params.warm === true && params.startNothing !== true)
    await writeWarmSpec(files.warmSpec, warmSpecFor(params.token, params.command));
  await writeFileAtomic(files.params, launcherParams(params));
}

/** Lets a launcher waiting as the window's command go ahead with the params of launch `token`. */
export async function releaseWindowLauncher(files: LauncherFiles, token: string): Promise<void> {
  await writeFileAtomic(files.window, `window_go=${shellQuote(token)}\n`);
}

/** Tells a launcher waiting as the window's command that nothing will start (the handoff failed). */
export async function cancelLauncher(files: LauncherFiles, message: string): Promise<void> {
  await writeFileAtomic(
    files.window,
    `window_cancelled=${shellQuote(message.replace(new RegExp(CONTROL_CHARACTERS.source, "g"), " "))}\n`,
  );
}

/** A `<token> <pid>` note of the launcher, when it is this launch's. */
export async function readLauncherNote(file: string, token: string): Promise<{ pid: number } | undefined> {
  const text = await readTextIfPresent(file);
  if (text === undefined) return undefined;
  const match = /^(\S+) (\d+)\n?$/.exec(text);
  if (match === null || match[1] !== token) return undefined;
  return { pid: Number(match[2]) };
}

/** The lock's pid, if there is one. */
export function readLauncherLock(files: LauncherFiles): Promise<number | undefined> {
  return readPidFile(files.lock);
}

/** Drops a lock whose holder the caller found is not this handoff's launcher or Pi (a reused pid). */
export function dropLauncherLock(files: LauncherFiles, pid: number): Promise<void> {
  return dropPidFile(files.lock, pid);
}

/**
 * The line typed into a pane: `sh <launcher>`, bounded in length. A launcher whose path would make
 * it longer than `MAX_DIRECT_LINE` is named through a link `/tmp/pi-handoff-<uid>/<id>` instead.
 */
export async function typedLauncherLine(files: LauncherFiles, handoffId: string): Promise<string> {
  const direct = `sh ${shellQuote(files.script)}`;
  if (Buffer.byteLength(direct) <= MAX_DIRECT_LINE) return direct;
  return `sh ${shellQuote(await shortLink(files.script, handoffId))}`;
}

/**
 * Deletes a retired handoff's launcher files and its short link (only a link that still names this
 * launcher: the id is unique, but the link is in a shared place), each tried whatever the others did.
 */
export async function deleteLauncherFiles(files: LauncherFiles, handoffId: string): Promise<Deletions> {
  const link = join(shortLinkDir(), handoffId);
  const ours = (await readlink(link).catch(() => undefined)) === files.script;
  return unlinkEach([...Object.values(files), ...(ours ? [link] : [])]);
}

function shortLinkDir(): string {
  return join(SHORT_LINK_ROOT, `pi-handoff-${process.getuid?.() ?? 0}`);
}

async function shortLink(target: string, handoffId: string): Promise<string> {
  const dir = shortLinkDir();
  await privateDirectory(dir, "the launcher cannot be linked there");
  const link = join(dir, handoffId);
  const current = await readlink(link).catch(() => undefined);
  if (current !== target) {
    if (current !== undefined) await unlink(link);
    await symlink(target, link);
  }
  return link;
}

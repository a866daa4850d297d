/**
 * The process facts this package needs, behind one port: whether a pid lives, when it started,
 * its parent, process group and its terminal's foreground group, its cwd, its name, the handoff
 * marker in its environment, the descendants of a pid, and which processes listen on a TCP port.
 *
 * Invariants:
 * - `src/process/` is the only place that reads process facts: everything else asks this port,
 *   so a system without /proc (macOS, the BSDs) behaves like Linux.
 * - Two implementations: `/proc` on Linux (procfs.ts) and a portable one on `ps` and `lsof`
 *   (portable.ts). `processFacts()` chooses: Linux with a readable /proc takes procfs, everything
 *   else the portable one; `PI_HANDOFF_PROCESS_INFO=portable` forces the portable one (for tests).
 * - Read-only and bounded: nothing signals a process (signal 0 only checks), every outside call
 *   has a timeout, and a process that exits while it is read is simply absent, never a throw.
 * - A fact that cannot be had is `undefined` (or a `problem` sentence for a whole scan); callers
 *   decide what that means and must not read it as "no such process".
 */
import { existsSync } from "node:fs";
import { procfsFacts } from "./procfs.ts";
import { portableFacts } from "./portable.ts";
import { signalFinds } from "./table.ts";

export const PROCESS_INFO_ENV = "PI_HANDOFF_PROCESS_INFO";

/** The environment variable that marks a launched child Pi with its handoff id (see the launch contract). */
export const HANDOFF_ID_ENV = "PI_HANDOFF_ID";

/** One process's status line. */
export interface ProcessStatus {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Foreground process group of its controlling terminal (-1 or 0 when it has none). */
  tpgid: number;
  /** Zombies are not alive: they write nothing. */
  zombie: boolean;
  /** The process name (Pi sets its title to `pi`), without any directory. */
  name: string;
}

/** A process as the handoff looks at it (the shape the multiplexer probes report). */
export interface DescribedProcess {
  pid: number;
  name: string;
  /** Realpath of its working directory, when readable. */
  cwd?: string;
  /** Its handoff marker (`PI_HANDOFF_ID`) at exec time, when readable. */
  handoffId?: string;
}

export interface ProcessDescriptions {
  processes: DescribedProcess[];
  /** Set when a kind of fact could not be read at all (not for a process that vanished). */
  problem?: string;
}

/** Whether a process is alive and, when it is, what tells it apart from a later one with its pid. */
export type ProcessIdentity = { alive: false } | { alive: true; start?: string; startedAtMs?: number };

/** `identify` from the three separate answers, for implementations where each is a cheap read. */
export async function identifyFromParts(
  facts: Pick<ProcessFacts, "isAlive" | "startToken" | "startTimeMs">,
  pid: number,
): Promise<ProcessIdentity> {
  const [alive, start, startedAtMs] = await Promise.all([
    facts.isAlive(pid),
    facts.startToken(pid),
    facts.startTimeMs(pid),
  ]);
  if (!alive) return { alive };
  return { alive, ...(start === undefined ? {} : { start }), ...(startedAtMs === undefined ? {} : { startedAtMs }) };
}

export interface ProcessFacts {
  readonly implementation: "procfs" | "portable" | "fake";
  /** The status of `pid`; undefined when it does not exist or cannot be read. */
  status(pid: number): Promise<ProcessStatus | undefined>;
  /** Whether `pid` exists and is not a zombie (an unreadable status counts as alive). */
  isAlive(pid: number): Promise<boolean>;
  /**
   * What tells this process apart from a later one with the same pid, as an opaque token
   * (compare with `sameStart`); undefined when unreadable.
   */
  startToken(pid: number): Promise<string | undefined>;
  /** When `pid` started, ms since the epoch; undefined when unreadable. */
  startTimeMs(pid: number): Promise<number | undefined>;
  /**
   * `isAlive`, `startToken` and `startTimeMs` in one question (one `ps` where that is how they are
   * read): what a lease or an owner is judged by.
   */
  identify(pid: number): Promise<ProcessIdentity>;
  /** All descendants of `rootPid` (not itself), breadth-first. */
  descendants(rootPid: number): Promise<number[]>;
  /** Name, cwd and handoff marker of each pid that is alive; vanished pids are left out. */
  describe(pids: readonly number[]): Promise<ProcessDescriptions>;
  /** Every live process with this name, described; `problem` when the table could not be read. */
  findByName(name: string): Promise<ProcessDescriptions>;
  /**
   * The processes this user can see that listen on TCP `port` (any local address, IPv4 or IPv6);
   * `problem` when the sockets could not be looked at. A listener of another user is not among them.
   */
  listeners(port: number): Promise<PortListeners>;
}

export interface PortListeners {
  pids: number[];
  problem?: string;
}

/**
 * Whether `pid` may still exist, from signal 0 alone: no read, no process start, so cheap enough
 * to ask many times a second. `false` is certain (the pid is gone); `true` proves nothing about
 * which process it is (ask `identify` for that).
 */
export function pidMayExist(pid: number): boolean {
  return Number.isInteger(pid) && pid > 0 && signalFinds(pid);
}

/** Every process-table command gets this long; a hung `ps` or `lsof` must not hang a handoff. */
export const PROCESS_CALL_TIMEOUT_MS = 5_000;

/**
 * Whether two start tokens name the same process: true or false when both come from the same
 * kind of reading, undefined when they cannot be compared (one missing, or read by different
 * implementations), in which case the caller must not conclude that the pid was reused.
 */
export function sameStart(a: string | undefined, b: string | undefined): boolean | undefined {
  if (a === undefined || b === undefined) return undefined;
  if (startScheme(a) !== startScheme(b)) return undefined;
  return a === b;
}

function startScheme(token: string): string {
  const colon = token.indexOf(":");
  // procfs tokens (`<boot id>/<ticks>`) predate schemes and have no colon.
  return colon < 0 ? "procfs" : token.slice(0, colon);
}

let chosen: ProcessFacts | undefined;

/** The implementation for this system (see the header), chosen once per process. */
export function processFacts(env: NodeJS.ProcessEnv = process.env): ProcessFacts {
  if (env !== process.env) return choose(env);
  chosen ??= choose(env);
  return chosen;
}

function choose(env: NodeJS.ProcessEnv): ProcessFacts {
  if (env[PROCESS_INFO_ENV] === "portable") return portableFacts;
  if (process.platform === "linux" && existsSync("/proc/self/stat")) return procfsFacts;
  return portableFacts;
}

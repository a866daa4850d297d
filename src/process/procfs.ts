/**
 * Linux procfs readers: the `/proc` implementation of the process-facts port (facts.ts).
 *
 * Invariants:
 * - Read-only: nothing here signals or changes a process (except `isAlive`'s signal 0, which is a check).
 * - Processes come and go between two reads: a missing or unreadable file yields `undefined` (or is
 *   skipped), never a throw.
 * - `/proc/<pid>/stat` is parsed from the last `)`, because the command name in parentheses may
 *   itself contain spaces and parentheses.
 */
import { readdir, readFile, readlink, realpath } from "node:fs/promises";
import {
  identifyFromParts,
  type DescribedProcess,
  type PortListeners,
  type ProcessDescriptions,
  type ProcessFacts,
} from "./facts.ts";
import { HANDOFF_ID_ENV } from "./facts.ts";
import { descendantsOf, signalFinds } from "./table.ts";

const PROC_ROOT = "/proc";
const BOOT_ID = "/proc/sys/kernel/random/boot_id";
/** Linux reports process start in clock ticks; USER_HZ is 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The fields of `/proc/<pid>/stat` this package uses (see proc(5)). */
export interface ProcStat {
  pid: number;
  /** The command name as the kernel stores it (up to 15 bytes), without the parentheses. */
  comm: string;
  /** One letter: R, S, D, Z, T, ... */
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  ttyNr: number;
  /** The foreground process group of the process's controlling terminal; -1 when it has none. */
  tpgid: number;
}

/** Parses the text of `/proc/<pid>/stat`; undefined when it does not have the expected shape. */
export function parseStat(text: string): ProcStat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open).trim());
  const comm = text.slice(open + 1, close);
  // After the comm: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) ...
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const [state, ppid, pgrp, session, ttyNr, tpgid] = rest;
  if (state === undefined || tpgid === undefined) return undefined;
  const numbers = [ppid, pgrp, session, ttyNr, tpgid].map(Number);
  if (!Number.isInteger(pid) || numbers.some((value) => !Number.isInteger(value))) return undefined;
  const [ppidN, pgrpN, sessionN, ttyNrN, tpgidN] = numbers as [number, number, number, number, number];
  return { pid, comm, state, ppid: ppidN, pgrp: pgrpN, session: sessionN, ttyNr: ttyNrN, tpgid: tpgidN };
}

export async function readStat(pid: number): Promise<ProcStat | undefined> {
  const text = await readProcText(pid, "stat");
  return text === undefined ? undefined : parseStat(text);
}

/** The process name from `/proc/<pid>/comm`, trimmed. */
export async function readComm(pid: number): Promise<string | undefined> {
  const text = await readProcText(pid, "comm");
  return text?.trim();
}

/** The canonical path of the process's working directory, when readable. */
export async function readCwd(pid: number): Promise<string | undefined> {
  try {
    return await realpath(`${PROC_ROOT}/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/**
 * The value of `key` in the process's initial environment (`/proc/<pid>/environ`, NUL-separated),
 * when readable. This is the environment at exec time, which is what a launch marker needs.
 */
export async function readEnvironValue(pid: number, key: string): Promise<string | undefined> {
  const text = await readProcText(pid, "environ");
  if (text === undefined) return undefined;
  const prefix = `${key}=`;
  for (const entry of text.split("\0")) {
    if (entry.startsWith(prefix)) return entry.slice(prefix.length);
  }
  return undefined;
}

/**
 * What tells this process apart from a later one with the same pid: the boot id and the start time
 * (`/proc/<pid>/stat` field 22, clock ticks since boot), as `<boot id>/<ticks>`; undefined when
 * unreadable (the process is gone, or there is no procfs).
 */
export async function readProcessStart(pid: number): Promise<string | undefined> {
  const [text, bootId] = await Promise.all([
    readProcText(pid, "stat"),
    readFile(BOOT_ID, "utf8").catch(() => undefined),
  ]);
  if (text === undefined || bootId === undefined) return undefined;
  const ticks = startTicks(text);
  return ticks === undefined ? undefined : `${bootId.trim()}/${ticks}`;
}

/** When the process started, ms since the epoch (boot time plus its start ticks). */
export async function readStartTimeMs(pid: number): Promise<number | undefined> {
  const [text, boot] = await Promise.all([readProcText(pid, "stat"), readBootTimeMs()]);
  if (text === undefined || boot === undefined) return undefined;
  const ticks = startTicks(text);
  return ticks === undefined ? undefined : boot + (Number(ticks) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** Field 22 (starttime) of a stat line: after the comm, field 3 (state) is the first, so it is the 20th. */
function startTicks(statText: string): string | undefined {
  const ticks = statText
    .slice(statText.lastIndexOf(")") + 1)
    .trim()
    .split(/\s+/)[19];
  return ticks !== undefined && /^\d+$/.test(ticks) ? ticks : undefined;
}

let bootTimeMs: Promise<number | undefined> | undefined;

function readBootTimeMs(): Promise<number | undefined> {
  bootTimeMs ??= readFile(`${PROC_ROOT}/stat`, "utf8").then(
    (text) => {
      const line = text.split("\n").find((l) => l.startsWith("btime "));
      const seconds = line === undefined ? NaN : Number(line.slice("btime ".length));
      return Number.isFinite(seconds) ? seconds * 1000 : undefined;
    },
    () => undefined,
  );
  return bootTimeMs;
}

/** Whether the process exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || !signalFinds(pid)) return false;
  const stat = await readStat(pid);
  return stat === undefined || stat.state !== "Z";
}

/** All descendants of `rootPid` (not including it), breadth-first, from the ppid links in procfs. */
export async function listDescendants(rootPid: number): Promise<number[]> {
  const pids = await listPids();
  if (pids === undefined) return [];
  const stats = await Promise.all(pids.map((pid) => readStat(pid)));
  return descendantsOf(
    rootPid,
    stats.filter((stat) => stat !== undefined),
  );
}

/** The numeric entries of /proc; undefined when there is no readable procfs. */
async function listPids(): Promise<number[] | undefined> {
  try {
    return (await readdir(PROC_ROOT)).filter((name) => /^\d+$/.test(name)).map(Number);
  } catch {
    return undefined;
  }
}

async function describeOne(pid: number): Promise<DescribedProcess | undefined> {
  const [stat, cwd, handoffId] = await Promise.all([
    readStat(pid),
    readCwd(pid),
    readEnvironValue(pid, HANDOFF_ID_ENV),
  ]);
  // No status (or a zombie) means the process exited while we looked.
  if (stat === undefined || stat.state === "Z") return undefined;
  const name = (await readComm(pid)) ?? stat.comm;
  return { pid, name, ...(cwd === undefined ? {} : { cwd }), ...(handoffId === undefined ? {} : { handoffId }) };
}

async function describeAll(pids: readonly number[]): Promise<ProcessDescriptions> {
  const described = await Promise.all(pids.map((pid) => describeOne(pid)));
  return { processes: described.filter((process) => process !== undefined) };
}

/** The TCP socket tables of this network namespace (IPv4, IPv6). */
const TCP_TABLES = [`${PROC_ROOT}/net/tcp`, `${PROC_ROOT}/net/tcp6`];
/** `st` of a listening socket in those tables (include/net/tcp_states.h). */
const TCP_LISTEN = "0A";

/**
 * The inodes of the listening sockets on `port` in the text of `/proc/net/tcp` or `tcp6`: after a
 * header line, `sl local_address rem_address st ... uid timeout inode ...`, the address as hex
 * `<ip>:<port>`.
 */
export function listeningInodes(text: string, port: number): string[] {
  const inodes: string[] = [];
  for (const line of text.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const inode = fields[9];
    if (local === undefined || inode === undefined || fields[3] !== TCP_LISTEN) continue;
    if (Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16) === port && inode !== "0") inodes.push(inode);
  }
  return inodes;
}

/** Who holds the listening sockets on `port`: the processes whose descriptors name their inodes. */
async function listenersOf(port: number): Promise<PortListeners> {
  const tables = await Promise.all(TCP_TABLES.map((table) => readFile(table, "utf8").catch(() => undefined)));
  if (tables[0] === undefined)
    return {
      pids: [],
      problem: `This system's ${TCP_TABLES[0]} could not be read, so who listens on a port is unknown.`,
    };
  const inodes = new Set(tables.flatMap((text) => (text === undefined ? [] : listeningInodes(text, port))));
  if (inodes.size === 0) return { pids: [] };
  const pids = await listPids();
  if (pids === undefined) return { pids: [], problem: "This system's /proc could not be read." };
  // Another user's descriptors cannot be read: such a listener is simply not found.
  const holders = await Promise.all(
    pids.map(async (pid) => {
      const fds = await readdir(`${PROC_ROOT}/${pid}/fd`).catch(() => [] as string[]);
      for (const fd of fds) {
        const target = await readlink(`${PROC_ROOT}/${pid}/fd/${fd}`).catch(() => undefined);
        const inode = /^socket:\[(\d+)\]$/.exec(target ?? "")?.[1];
        if (inode !== undefined && inodes.has(inode)) return pid;
      }
      return undefined;
    }),
  );
  return { pids: holders.filter((pid) => pid !== undefined) };
}

/** The `/proc` implementation of the process-facts port. */
export const procfsFacts: ProcessFacts = {
  implementation: "procfs",
  async status(pid) {
    const stat = await readStat(pid);
    if (stat === undefined) return undefined;
    return {
      pid: stat.pid,
      ppid: stat.ppid,
      pgid: stat.pgrp,
      tpgid: stat.tpgid,
      zombie: stat.state === "Z",
      name: stat.comm,
    };
  },
  isAlive,
  startToken: readProcessStart,
  startTimeMs: readStartTimeMs,
  identify: (pid) => identifyFromParts(procfsFacts, pid),
  descendants: listDescendants,
  describe: describeAll,
  async findByName(name) {
    const pids = await listPids();
    if (pids === undefined)
      return {
        processes: [],
        problem: "This system's /proc could not be read, so running processes could not be looked for.",
      };
    // Only matching names are read closely: reading every process's environment would be slow and intrusive.
    const named = await Promise.all(pids.map(async (pid) => ((await readComm(pid)) === name ? pid : undefined)));
    return describeAll(named.filter((pid) => pid !== undefined));
  },
  listeners: listenersOf,
};

async function readProcText(pid: number, file: string): Promise<string | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    return await readFile(`${PROC_ROOT}/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

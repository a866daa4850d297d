/**
 * The portable implementation of the process-facts port: `ps` for status, start time and the
 * environment marker, `lsof` for the working directory and a port's listeners. Works where there is no /proc (macOS, the
 * BSDs) and on Linux (procps), which is how it is tested for real (`PI_HANDOFF_PROCESS_INFO=portable`).
 *
 * Invariants:
 * - Only options that macOS/BSD `ps` and procps `ps` both accept (`-A`, `-p a,b`, `-ww`, `-o k=`
 *   with `pid ppid pgid tpgid state lstart comm command`), run with `LC_ALL=C TZ=UTC` so
 *   `lstart` always reads `Tue Dec  1 07:20:14 2026` in UTC. The one exception is the environment:
 *   macOS shows it with `-E`, procps with the BSD-style `e`, FreeBSD with `-e` (which means "all
 *   processes" elsewhere), so that flag is chosen by platform.
 * - `comm` comes last in each line (it may hold spaces); the fields before it are fixed in number.
 * - Every command has a timeout; a command that is missing, times out or fails yields undefined
 *   facts or a `problem` sentence, never a throw. A pid that exits between two commands is simply
 *   absent from the later answer.
 * - The environment is shown by `ps` as words after the arguments; the marker is the last
 *   `PI_HANDOFF_ID=<value>` word. An argument that looks like the marker can only add evidence of
 *   a writer, which is the safe side.
 */
import { realpath } from "node:fs/promises";
import { errorClause } from "../errors.ts";
import { HANDOFF_ID_ENV } from "./facts.ts";
import { runFailure, runProgram } from "./run-program.ts";
import {
  PROCESS_CALL_TIMEOUT_MS,
  type DescribedProcess,
  type ProcessDescriptions,
  type ProcessFacts,
  type ProcessStatus,
} from "./facts.ts";
import { descendantsOf, signalFinds } from "./table.ts";
import { formatWait } from "../text.ts";
import { failed, type Outcome } from "../outcome.ts";

/** One row of `ps -o pid=,ppid=,pgid=,tpgid=,state=,lstart=,comm=`. */
export interface PsRow extends ProcessStatus {
  /** Whole seconds since the epoch (lstart has no finer resolution). */
  startedAtSeconds: number;
}

export type CommandFailure = "missing" | "timeout" | "failed";
export type CommandAnswer = Outcome<{ stdout: string }, CommandFailure>;
export type CommandRunner = (file: string, args: readonly string[]) => Promise<CommandAnswer>;

const STATUS_FORMAT = "pid=,ppid=,pgid=,tpgid=,state=,lstart=,comm=";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const ROW =
  /^\s*(\d+)\s+(\d+)\s+(-?\d+)\s+(-?\d+)\s+(\S+)\s+[A-Z][a-z]{2}\s+([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})(?:\s(.*))?$/;

/** Parses `ps -o pid=,ppid=,pgid=,tpgid=,state=,lstart=,comm=` output; lines of another shape are skipped. */
export function parsePsRows(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split("\n")) {
    const match = ROW.exec(line);
    if (match === null) continue;
    const [, pid, ppid, pgid, tpgid, state, month, day, hour, minute, second, year, comm] =
      match as unknown as string[];
    const monthIndex = MONTHS.indexOf(month ?? "");
    if (monthIndex < 0) continue;
    const startedAtMs = Date.UTC(Number(year), monthIndex, Number(day), Number(hour), Number(minute), Number(second));
    rows.push({
      pid: Number(pid),
      ppid: Number(ppid),
      pgid: Number(pgid),
      tpgid: Number(tpgid),
      // macOS prints flags after the run state (`Ss+`); the first letter is the state on both.
      zombie: (state ?? "").startsWith("Z"),
      name: processName(comm ?? ""),
      startedAtSeconds: startedAtMs / 1000,
    });
  }
  return rows;
}

/**
 * The name from `comm`: procps prints the kernel's name (`pi`), macOS the first argument, which
 * Pi's process title overwrites with `pi` but which may be a path for other processes.
 */
function processName(comm: string): string {
  const trimmed = comm.trim();
  if (trimmed.startsWith("/")) return trimmed.slice(trimmed.lastIndexOf("/") + 1);
  return trimmed;
}

/** Parses `ps <env flag> -o pid=,command=` output: the marker value per pid, where present. */
export function parseEnvironMarkers(text: string, key: string): Map<number, string> {
  const markers = new Map<number, string>();
  const pattern = new RegExp(`(?:^|\\s)${key}=(\\S*)`, "g");
  for (const line of text.split("\n")) {
    const match = /^\s*(\d+)\s(.*)$/.exec(line);
    if (match === null) continue;
    const values = [...(match[2] ?? "").matchAll(pattern)].map((found) => found[1] ?? "");
    const last = values.at(-1);
    if (last !== undefined && last !== "") markers.set(Number(match[1]), last);
  }
  return markers;
}

/** Parses `lsof -a -d cwd -p <pids> -Fn` output (`p<pid>`, `f<fd>`, `n<path>` lines) into pid -> cwd. */
export function parseLsofCwds(text: string): Map<number, string> {
  const cwds = new Map<number, string>();
  let pid: number | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("p")) {
      const value = Number(line.slice(1));
      pid = Number.isInteger(value) && value > 0 ? value : undefined;
    } else if (line.startsWith("n") && pid !== undefined && !cwds.has(pid)) {
      cwds.set(pid, line.slice(1));
    }
  }
  return cwds;
}

/** The pids of `lsof -Fp` output (`p<pid>` lines), each once. */
export function parseLsofPids(text: string): number[] {
  const pids = new Set<number>();
  for (const line of text.split("\n")) {
    const pid = line.startsWith("p") ? Number(line.slice(1)) : Number.NaN;
    if (Number.isInteger(pid) && pid > 0) pids.add(pid);
  }
  return [...pids];
}

/** The `ps` flag that adds the environment after the command, per platform (see the header). */
export function environmentFlag(platform: NodeJS.Platform): string {
  if (platform === "darwin") return "-E";
  if (platform === "linux") return "e";
  return "-e";
}

const defaultRunner: CommandRunner = async (file, args) => {
  try {
    const result = await runProgram(file, args, {
      timeoutMs: PROCESS_CALL_TIMEOUT_MS,
      env: { ...process.env, LC_ALL: "C", TZ: "UTC" },
    });
    if (result.timedOut)
      return failed("timeout", `${file} did not answer within ${formatWait(PROCESS_CALL_TIMEOUT_MS)}`);
    if (result.startError?.code === "ENOENT") return failed("missing", `${file} is not installed`);
    // Both `ps` and `lsof` exit 1 when one of the pids asked about is gone; what they printed still holds.
    if (result.exitCode !== undefined && result.exitCode > 1) {
      return failed("failed", `${file} failed: ${errorClause(result.stderr || `exit code ${result.exitCode}`)}`);
    }
    if (result.exitCode === undefined)
      return failed("failed", `${file} could not be run: ${errorClause(runFailure(result))}`);
    return { ok: true, stdout: result.stdout };
  } catch (error) {
    return failed("failed", `${file} could not be run: ${errorClause(error)}`);
  }
};

function validPids(pids: readonly number[]): number[] {
  return [...new Set(pids.filter((pid) => Number.isInteger(pid) && pid > 0))];
}

/** Each live process's cwd (lsof) and handoff marker (its environment, through ps), read at once. */
async function describeLive(run: CommandRunner, envFlag: string, live: readonly PsRow[]): Promise<ProcessDescriptions> {
  const list = live.map((entry) => entry.pid).join(",");
  const [envAnswer, cwdAnswer] = await Promise.all([
    run("ps", [envFlag, "-ww", "-o", "pid=,command=", "-p", list]),
    run("lsof", ["-w", "-a", "-d", "cwd", "-p", list, "-Fn"]),
  ]);
  const markers = envAnswer.ok ? parseEnvironMarkers(envAnswer.stdout, HANDOFF_ID_ENV) : new Map<number, string>();
  const cwds = cwdAnswer.ok ? parseLsofCwds(cwdAnswer.stdout) : new Map<number, string>();
  const processes = await Promise.all(
    live.map(async (entry): Promise<DescribedProcess> => {
      const rawCwd = cwds.get(entry.pid);
      const cwd = rawCwd === undefined ? undefined : await realpath(rawCwd).catch(() => undefined);
      const handoffId = markers.get(entry.pid);
      return {
        pid: entry.pid,
        name: entry.name,
        ...(cwd === undefined ? {} : { cwd }),
        ...(handoffId === undefined ? {} : { handoffId }),
      };
    }),
  );
  const problems = [
    ...(cwdAnswer.ok ? [] : [`working directories could not be read (${cwdAnswer.message})`]),
    ...(envAnswer.ok ? [] : [`environments could not be read (${envAnswer.message})`]),
  ];
  return { processes, ...(problems.length === 0 ? {} : { problem: `Process ${problems.join(" and ")}.` }) };
}

/** `ps -o pid=,ppid=` output as rows; lines that are not two numbers are skipped. */
function parsePidTable(stdout: string): { pid: number; ppid: number }[] {
  return stdout
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s*$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({ pid: Number(match[1]), ppid: Number(match[2]) }));
}

/**
 * Builds the portable implementation; tests pass captured output through `run`. A factory whose
 * methods share `run` and the platform's environment flag: long only because it holds them, each
 * longer step is a function of its own.
 */
export function createPortableFacts(options: { run?: CommandRunner; platform?: NodeJS.Platform } = {}): ProcessFacts {
  const run = options.run ?? defaultRunner;
  const envFlag = environmentFlag(options.platform ?? process.platform);

  async function rows(pids: readonly number[]): Promise<PsRow[] | undefined> {
    const wanted = validPids(pids);
    if (wanted.length === 0) return [];
    const answer = await run("ps", ["-ww", "-o", STATUS_FORMAT, "-p", wanted.join(",")]);
    return answer.ok ? parsePsRows(answer.stdout).filter((row) => wanted.includes(row.pid)) : undefined;
  }

  async function row(pid: number): Promise<PsRow | undefined> {
    return (await rows([pid]))?.[0];
  }

  /**
   * The row of a pid the kernel knows (one it does not costs no `ps`: a crashed child's lease is
   * judged every 2 s); undefined for a gone pid, "unknown" when `ps` cannot be run.
   */
  async function liveRow(pid: number): Promise<PsRow | undefined | "unknown"> {
    if (!Number.isInteger(pid) || pid <= 0 || !signalFinds(pid)) return undefined;
    const found = await rows([pid]);
    return found === undefined ? "unknown" : found[0];
  }

  async function describe(pids: readonly number[]): Promise<ProcessDescriptions> {
    const status = await rows(pids);
    if (status === undefined)
      return { processes: [], problem: "ps could not be run, so the processes could not be described." };
    const live = status.filter((entry) => !entry.zombie);
    if (live.length === 0) return { processes: [] };
    return describeLive(run, envFlag, live);
  }

  return {
    implementation: "portable",
    status: async (pid) => {
      const found = await row(pid);
      if (found === undefined) return undefined;
      const { startedAtSeconds: _started, ...status } = found;
      return status;
    },
    async isAlive(pid) {
      const found = await liveRow(pid);
      // ps unavailable: the signal said it exists, which is all that is known.
      return found === "unknown" || (found !== undefined && !found.zombie);
    },
    startToken: async (pid) => {
      const found = await liveRow(pid);
      return found === undefined || found === "unknown" ? undefined : `ps:${found.startedAtSeconds}`;
    },
    startTimeMs: async (pid) => {
      const found = await liveRow(pid);
      return found === undefined || found === "unknown" ? undefined : found.startedAtSeconds * 1000;
    },
    async identify(pid) {
      const found = await liveRow(pid);
      if (found === "unknown") return { alive: true };
      if (found === undefined || found.zombie) return { alive: false };
      return { alive: true, start: `ps:${found.startedAtSeconds}`, startedAtMs: found.startedAtSeconds * 1000 };
    },
    async descendants(rootPid) {
      const answer = await run("ps", ["-A", "-ww", "-o", "pid=,ppid="]);
      if (!answer.ok) return [];
      return descendantsOf(rootPid, parsePidTable(answer.stdout));
    },
    describe,
    async findByName(name) {
      const answer = await run("ps", ["-A", "-ww", "-o", STATUS_FORMAT]);
      if (!answer.ok)
        return { processes: [], problem: `Running processes could not be looked for: ${answer.message}.` };
      // The listing has the rows already: describe them without asking ps for them again.
      const named = parsePsRows(answer.stdout).filter((entry) => entry.name === name && !entry.zombie);
      return named.length === 0 ? { processes: [] } : describeLive(run, envFlag, named);
    },
    async listeners(port) {
      // lsof exits 1 when nothing listens there, which the runner reads as an empty answer.
      const answer = await run("lsof", ["-w", "-nP", `-iTCP:${port}`, "-sTCP:LISTEN", "-Fp"]);
      if (!answer.ok) return { pids: [], problem: `Who listens on port ${port} could not be read: ${answer.message}.` };
      return { pids: parseLsofPids(answer.stdout) };
    },
  };
}

export const portableFacts: ProcessFacts = createPortableFacts();

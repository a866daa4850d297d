/**
 * A process-facts port over a table the test writes, for unit tests of the callers' decisions
 * (what a reused pid, a vanished process or an unreadable table makes them do).
 */
import {
  identifyFromParts,
  type DescribedProcess,
  type ProcessFacts,
  type ProcessIdentity,
  type ProcessStatus,
} from "../../src/process/facts.ts";
import { descendantsOf } from "../../src/process/table.ts";

export interface FakeProcess {
  pid: number;
  ppid?: number;
  name?: string;
  zombie?: boolean;
  start?: string;
  startedAtMs?: number;
  cwd?: string;
  handoffId?: string;
  tpgid?: number;
  /** TCP ports it listens on. */
  listening?: number[];
}

export class FakeProcessFacts implements ProcessFacts {
  readonly implementation = "fake" as const;
  readonly processes = new Map<number, FakeProcess>();
  /** Set to make every table-wide read fail with this sentence. */
  tableProblem: string | undefined;

  constructor(processes: FakeProcess[] = []) {
    for (const process of processes) this.processes.set(process.pid, process);
  }

  add(process: FakeProcess): this {
    this.processes.set(process.pid, process);
    return this;
  }

  remove(pid: number): this {
    this.processes.delete(pid);
    return this;
  }

  async status(pid: number): Promise<ProcessStatus | undefined> {
    const found = this.processes.get(pid);
    if (found === undefined) return undefined;
    return {
      pid,
      ppid: found.ppid ?? 1,
      pgid: pid,
      tpgid: found.tpgid ?? -1,
      zombie: found.zombie ?? false,
      name: found.name ?? "sleep",
    };
  }

  async isAlive(pid: number): Promise<boolean> {
    const found = this.processes.get(pid);
    return found !== undefined && found.zombie !== true;
  }

  async startToken(pid: number): Promise<string | undefined> {
    return this.processes.get(pid)?.start;
  }

  async startTimeMs(pid: number): Promise<number | undefined> {
    return this.processes.get(pid)?.startedAtMs;
  }

  identify(pid: number): Promise<ProcessIdentity> {
    return identifyFromParts(this, pid);
  }

  async descendants(rootPid: number): Promise<number[]> {
    return descendantsOf(
      rootPid,
      [...this.processes.values()].map((p) => ({ pid: p.pid, ppid: p.ppid ?? 1 })),
    );
  }

  async describe(pids: readonly number[]): Promise<{ processes: DescribedProcess[] }> {
    const processes: DescribedProcess[] = [];
    for (const pid of pids) {
      const found = this.processes.get(pid);
      if (found === undefined || found.zombie === true) continue;
      processes.push({
        pid,
        name: found.name ?? "sleep",
        ...(found.cwd === undefined ? {} : { cwd: found.cwd }),
        ...(found.handoffId === undefined ? {} : { handoffId: found.handoffId }),
      });
    }
    return { processes };
  }

  async listeners(port: number): Promise<{ pids: number[]; problem?: string }> {
    if (this.tableProblem !== undefined) return { pids: [], problem: this.tableProblem };
    return { pids: [...this.processes.values()].filter((p) => p.listening?.includes(port)).map((p) => p.pid) };
  }

  async findByName(name: string): Promise<{ processes: DescribedProcess[]; problem?: string }> {
    if (this.tableProblem !== undefined) return { processes: [], problem: this.tableProblem };
    return this.describe([...this.processes.values()].filter((p) => (p.name ?? "sleep") === name).map((p) => p.pid));
  }
}

/**
 * Helpers for lineage tests: real session chains made with Pi's SessionManager, and real
 * processes for pids (a live `sleep`, a pid that has exited).
 *
 * Invariants:
 * - Sessions live under the caller's temp dir; `sleep` processes are tracked and `killAll()`
 *   ends exactly those (by pid), so no process outlives a test file.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";

export function userMessage(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: Date.now() };
}

export function assistantMessage(text: string) {
  return {
    role: "assistant" as const,
    content: [{ type: "text" as const, text }],
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop" as const,
    timestamp: Date.now(),
  };
}

export interface SessionLink {
  file: string;
  id: string;
  leafId: string;
  /** The header timestamp, in ms. */
  createdAt: number;
}

function linkOf(manager: SessionManager): SessionLink {
  const file = manager.getSessionFile();
  const leafId = manager.getLeafId();
  const header = manager.getHeader();
  if (file === undefined || leafId === null || header === null) throw new Error("The session was not written.");
  return { file, id: manager.getSessionId(), leafId, createdAt: Date.parse(header.timestamp) };
}

/** A root session with one exchange, on disk. */
export function createRootSession(dir: string, cwd: string, text = "root question"): SessionLink {
  const manager = SessionManager.create(cwd, join(dir, "sessions-root"));
  manager.appendMessage(userMessage(text));
  manager.appendMessage(assistantMessage(`answer to ${text}`));
  return linkOf(manager);
}

/** A child of `parent` the way a handoff makes one: open + createBranchedSession at the leaf, then one exchange. */
export function forkSession(parent: SessionLink, dir: string, cwd: string, name: string): SessionLink {
  const manager = SessionManager.open(parent.file, join(dir, `sessions-${name}`), cwd);
  const file = manager.createBranchedSession(parent.leafId);
  if (file === undefined) throw new Error("createBranchedSession wrote nothing.");
  manager.appendMessage(userMessage(`${name} question`));
  manager.appendMessage(assistantMessage(`answer in ${name}`));
  return linkOf(manager);
}

/** Real processes standing in for runners: live ones to kill later, and pids known to be gone. */
export class ProcessPool {
  private readonly children: ChildProcess[] = [];

  /** A live process (`sleep`), so `kill(pid, 0)` succeeds. */
  live(): number {
    const child = spawn("sleep", ["600"], { stdio: "ignore" });
    if (child.pid === undefined) throw new Error("sleep did not start.");
    this.children.push(child);
    return child.pid;
  }

  /** The pid of a process that has already exited. */
  dead(): number {
    const done = spawnSync("true", [], { timeout: 10_000 });
    if (done.pid === undefined) throw new Error("true did not start.");
    return done.pid;
  }

  /** Ends the process and waits until it is reaped (a zombie would still answer `kill(pid, 0)`). */
  async kill(pid: number): Promise<void> {
    const child = this.children.find((c) => c.pid === pid);
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }

  killAll(): void {
    for (const child of this.children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}

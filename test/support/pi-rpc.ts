/**
 * The real Pi in RPC mode (`pi --mode rpc`) as a child process, for end-to-end tests that need a
 * long-lived Pi: send commands, wait for records on stdout.
 *
 * Invariants:
 * - stdout is split on LF only (JSON strings may hold U+2028); stderr is kept for error messages.
 * - `stop()` closes stdin (Pi's orderly shutdown), then kills the process if it has not exited
 *   within the timeout; it always resolves once the process is gone. Every wait has a timeout.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { NODE_BIN, PI_CLI } from "./pi.ts";

export type RpcRecord = Record<string, unknown> & { type?: string };

export class PiRpc {
  readonly records: RpcRecord[] = [];
  private stderr = "";
  private readonly child: ChildProcess;
  private buffer = "";
  private exited: Promise<void>;
  private nextId = 0;

  private constructor(child: ChildProcess) {
    this.child = child;
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      this.buffer += chunk;
      for (let newline = this.buffer.indexOf("\n"); newline !== -1; newline = this.buffer.indexOf("\n")) {
        const line = this.buffer.slice(0, newline).replace(/\r$/, "");
        this.buffer = this.buffer.slice(newline + 1);
        if (line.trim().length === 0) continue;
        try {
          this.records.push(JSON.parse(line) as RpcRecord);
        } catch {
          this.records.push({ type: "unparsed", line });
        }
      }
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
  }

  static start(args: readonly string[], options: { cwd: string; env: Record<string, string> }): PiRpc {
    const child = spawn(NODE_BIN, [PI_CLI, "--mode", "rpc", ...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new PiRpc(child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get errors(): string {
    return this.stderr;
  }

  /** Sends a command; resolves with its response record. */
  async command(command: Record<string, unknown>, timeoutMs = 30_000): Promise<RpcRecord> {
    this.nextId += 1;
    const id = `test-${this.nextId}`;
    this.child.stdin?.write(`${JSON.stringify({ ...command, id })}\n`);
    return this.waitFor(
      (record) => record.type === "response" && record.id === id,
      `the response to ${String(command.type)}`,
      timeoutMs,
    );
  }

  /** Writes one record and waits for nothing (an `extension_ui_response` has no response). */
  send(record: Record<string, unknown>): void {
    this.child.stdin?.write(`${JSON.stringify(record)}\n`);
  }

  /** The first record from `from` on that matches. */
  async waitFor(
    match: (record: RpcRecord) => boolean,
    description: string,
    timeoutMs = 30_000,
    from = 0,
  ): Promise<RpcRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.records.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`Pi exited while waiting for ${description}. stderr:\n${this.stderr}`);
      }
      if (Date.now() > deadline)
        throw new Error(`Timed out after ${timeoutMs} ms waiting for ${description}. stderr:\n${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(timeoutMs = 15_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

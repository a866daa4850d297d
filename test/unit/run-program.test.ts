/**
 * The one runner of programs other than git (src/process/run-program.ts), against real programs:
 * exit codes, output, a missing program, the deadline (with a program that ignores SIGTERM), and a
 * child left running with the pipe open.
 */
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runFailure, runProgram, runSucceeded } from "../../src/process/run-program.ts";

const dir = mkdtempSync(join(tmpdir(), "run-program-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runProgram", () => {
  it("returns the exit code and both outputs, one final newline stripped unless kept", async () => {
    const script = "printf 'out\\n\\n'; printf 'err\\n' >&2; exit 3";
    const run = await runProgram("sh", ["-c", script], { timeoutMs: 10_000 });
    expect(run).toEqual({
      exitCode: 3,
      signal: undefined,
      stdout: "out\n",
      stderr: "err",
      timedOut: false,
      startError: undefined,
    });
    expect(runSucceeded(run)).toBe(false);
    expect(runFailure(run)).toBe("exit code 3");
    const kept = await runProgram("sh", ["-c", script], { timeoutMs: 10_000, keepFinalNewline: true });
    expect([kept.stdout, kept.stderr]).toEqual(["out\n\n", "err\n"]);
  });

  it("passes the arguments as they are, with the given environment and directory, stdin closed", async () => {
    const run = await runProgram(
      "sh",
      ["-c", 'printf "%s|%s|%s|" "$1" "$PHW_VALUE" "$(pwd)"; cat', "sh", "a b; $(x) 'c'"],
      { timeoutMs: 10_000, env: { PATH: process.env.PATH, PHW_VALUE: "v\u00e9" }, cwd: dir },
    );
    expect(runSucceeded(run)).toBe(true);
    expect(run.stdout).toBe(`a b; $(x) 'c'|v\u00e9|${dir}|`);
  });

  it("answers a missing program with its start error, never a throw", async () => {
    const run = await runProgram(join(dir, "no-such-program"), [], { timeoutMs: 10_000 });
    expect(run.exitCode).toBeUndefined();
    expect(run.startError?.code).toBe("ENOENT");
    expect(runFailure(run)).toContain("ENOENT");
  });

  it("stops a program at its deadline: SIGTERM, then SIGKILL after the grace for one that ignores it", async () => {
    const polite = await runProgram("sleep", ["30"], { timeoutMs: 100 });
    expect({ timedOut: polite.timedOut, signal: polite.signal, exitCode: polite.exitCode }).toEqual({
      timedOut: true,
      signal: "SIGTERM",
      exitCode: undefined,
    });
    expect(runFailure(polite)).toBe("killed by SIGTERM");
    const stubborn = join(dir, "stubborn.sh");
    writeFileSync(stubborn, "#!/bin/sh\ntrap '' TERM\necho started\nwhile :; do sleep 0.05; done\n");
    chmodSync(stubborn, 0o755);
    const started = Date.now();
    const run = await runProgram(stubborn, [], { timeoutMs: 300, killGraceMs: 200 });
    expect({ timedOut: run.timedOut, signal: run.signal, stdout: run.stdout }).toEqual({
      timedOut: true,
      signal: "SIGKILL",
      stdout: "started",
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
  });

  it("ends when the program exits, though a child it left running keeps the pipe open", async () => {
    const started = Date.now();
    const run = await runProgram("sh", ["-c", "sleep 5 & echo done"], { timeoutMs: 10_000 });
    expect(run).toMatchObject({ exitCode: 0, stdout: "done", timedOut: false });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("ends when the program exits, though a child it left running keeps writing to the pipe", async () => {
    const started = Date.now();
    const run = await runProgram("sh", ["-c", "echo done; (while :; do echo x; sleep 0.05; done) &"], {
      timeoutMs: 10_000,
    });
    expect(run).toMatchObject({ exitCode: 0, timedOut: false });
    expect(run.stdout.split("\n")[0]).toBe("done");
    expect(Date.now() - started).toBeLessThan(8_000);
  });
});

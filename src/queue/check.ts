/**
 * The repository's `check` (settings `check`, `checkTimeoutMs`), run by `pi-handoff land --all`
 * in a child's worktree before the child lands.
 *
 * Invariants:
 * - An argument list runs as it is (src/process/run-program.ts, no shell); a string runs through
 *   `sh -c` as the person wrote it. Nothing of a handoff (its branch, its id) is ever put into the
 *   command: the worktree is the working directory, the rest is in the environment.
 * - Every run has its timeout (SIGTERM, then SIGKILL, to the check's whole process group: what it
 *   started, `npm test`'s node, does not outlive it); a check that could not start, timed out,
 *   was killed or exited non-zero has failed. Only exit 0 passes.
 * - The whole output is kept in a log under the handoff store
 *   (`<agentDir>/handoff-worktree/checks/<handoff id>/<time>-<tip>.log`), written before the
 *   outcome is returned; the outcome carries its last lines for the child's note.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runProgram } from "../process/run-program.ts";

export type CheckCommand = string | readonly string[];

export type CheckOutcome =
  | { code: "passed"; log: string; tail: string[] }
  | {
      code: "failed";
      /** `exit`: a non-zero exit code; `timeout`: it ran past its time; `signal`: a signal ended it; `not_started`: it could not start. */
      why: "exit" | "timeout" | "signal" | "not_started";
      exitCode?: number;
      signal?: string;
      startError?: string;
      log: string;
      tail: string[];
    };

/** How many of the output's last lines the child is shown. */
export const CHECK_TAIL_LINES = 20;

/** Where the check of handoff `id` at branch tip `tip` keeps its output. */
export function checkLogPath(agentDir: string, id: string, tip: string, at: Date): string {
  return join(
    agentDir,
    "handoff-worktree",
    "checks",
    id,
    `${String(at.getTime()).padStart(13, "0")}-${tip.slice(0, 12)}.log`,
  );
}

/** Runs the check in `cwd` and writes its output to `log`. */
export async function runCheck(
  check: CheckCommand,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; log: string },
): Promise<CheckOutcome> {
  const [file, args] = typeof check === "string" ? ["sh", ["-c", check]] : [check[0] ?? "", check.slice(1)];
  const run = await runProgram(file, args, {
    cwd: options.cwd,
    env: options.env,
    timeoutMs: options.timeoutMs,
    keepFinalNewline: true,
    ownProcessGroup: true,
  });
  const output = [run.stdout, run.stderr].filter((text) => text.length > 0).join(run.stdout.endsWith("\n") ? "" : "\n");
  await mkdir(join(options.log, ".."), { recursive: true });
  await writeFile(options.log, output);
  const tail = output.split("\n");
  if (tail.at(-1) === "") tail.pop();
  const last = tail.slice(-CHECK_TAIL_LINES);
  const common = { log: options.log, tail: last };
  if (run.startError !== undefined)
    return { code: "failed", why: "not_started", startError: run.startError.message, ...common };
  if (run.timedOut) return { code: "failed", why: "timeout", ...common };
  if (run.signal !== undefined) return { code: "failed", why: "signal", signal: run.signal, ...common };
  if (run.exitCode !== 0) return { code: "failed", why: "exit", exitCode: run.exitCode ?? -1, ...common };
  return { code: "passed", ...common };
}

/** One clause saying how a check failed (for the report and the child's note). */
export function describeCheckFailure(outcome: Extract<CheckOutcome, { code: "failed" }>, timeoutMs: number): string {
  switch (outcome.why) {
    case "exit":
      return `the check exited with ${outcome.exitCode ?? "?"}`;
    case "timeout":
      return `the check ran past its ${Math.round(timeoutMs / 1000)} s and was stopped`;
    case "signal":
      return `the check was ended by ${outcome.signal ?? "a signal"}`;
    case "not_started":
      return `the check could not start (${outcome.startError ?? "unknown reason"})`;
  }
}

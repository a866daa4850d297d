/**
 * Herdr's transport: running the `herdr` CLI for one call, decoding its answer, and wording what
 * went wrong. Every other part of the Herdr backend asks Herdr through a `HerdrClient`.
 *
 * Invariants:
 * - Only the Herdr backend runs `herdr`, and only through `exec` here: argument arrays (never a
 *   shell string), a timeout on every call (the CLI has none of its own), and the server's socket
 *   passed explicitly (`HERDR_SOCKET_PATH`) whenever it is known.
 * - Every output is decoded by the zod schemas of `protocol.ts`, from whichever stream carries
 *   JSON. A failure is a value `{ ok: false, code, message }`: Herdr's own error code, or
 *   `timeout`, `usage_error` (exit 2), `malformed_output`, `herdr_not_found`, `herdr_failed`.
 *   `message` is one sentence a user can act on; `detail` is Herdr's own words, for callers that
 *   phrase their own sentence.
 * - `--json` is never passed: it is an unknown option on pane and workspace commands.
 * - `--trust-repository` goes on every worktree command when this Herdr has it (probed once).
 * - `pane_not_found` is final only after PANE_RESTART_GRACE_MS of answering so (a restarted server
 *   answers it for ~750 ms), and a pane that `pane get` still shows is then `pane_not_started`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { formatWait, oneLine, stripPeriod } from "../../text.ts";
import type { MuxFailure } from "../types.ts";
import type { HerdrLocation } from "../../manifest/locations.ts";
import { socketOf } from "./paths.ts";
import { runFailure, runProgram } from "../../process/run-program.ts";
import { decodeHerdrOutput, PaneInfoResultSchema, PaneProcessInfoSchema } from "./protocol.ts";

/** The least time one poll is given: a poll squeezed into the last milliseconds proves nothing. */
export const MIN_POLL_TIMEOUT_MS = 1_000;
/** A restarted server answers `pane_not_found` for ~750 ms (src/app/mod.rs PENDING_AGENT_RESUME_THEME_WAIT). */
export const PANE_RESTART_GRACE_MS = 2_000;
const PANE_RETRY_INTERVAL_MS = 100;
/** Failures after which polling a pane again cannot help (`pane_not_found` only after the restart grace). */
export const FINAL_POLL_FAILURES = new Set([
  "workspace_not_found",
  "server_not_running",
  "herdr_not_found",
  "usage_error",
]);

/** A failure from one call: `detail` is Herdr's own message, for callers that phrase their own sentence. */
export type CallFailure = MuxFailure & { detail: string };

export type CallResult<T> = { ok: true; result: T } | CallFailure;

export interface CallOptions {
  timeoutMs?: number;
  socketPath?: string | undefined;
}

export type PaneProcessInfo = z.infer<typeof PaneProcessInfoSchema>;

export interface HerdrClientOptions {
  herdrBin: string;
  socketPath: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Upper bound for each quick call (pane, workspace, list). */
  timeoutMs: number;
  /** Upper bound for `worktree create/open/remove`. */
  worktreeTimeoutMs: number;
}

export class HerdrClient {
  readonly herdrBin: string;
  readonly socketPath: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
  readonly worktreeTimeoutMs: number;
  #trustFlagProbe: Promise<boolean> | undefined;

  constructor(options: HerdrClientOptions) {
    this.herdrBin = options.herdrBin;
    this.socketPath = options.socketPath;
    this.env = options.env;
    this.timeoutMs = options.timeoutMs;
    this.worktreeTimeoutMs = options.worktreeTimeoutMs;
  }

  /** A location on `socketPath`'s server (none: the default server's). */
  location(socketPath: string | undefined, workspaceId: string, tabId: string, paneId: string): HerdrLocation {
    return { kind: "herdr", ...socketOf(socketPath), workspaceId, tabId, paneId };
  }

  async exec(
    args: readonly string[],
    options: CallOptions,
  ): Promise<{ ok: true; exitCode: number; stdout: string; stderr: string } | CallFailure> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const socketPath = options.socketPath ?? this.socketPath;
    const env = socketPath !== undefined ? { ...this.env, HERDR_SOCKET_PATH: socketPath } : this.env;
    const result = await runProgram(this.herdrBin, args, {
      env,
      timeoutMs,
      killGraceMs: 1_000,
      keepFinalNewline: true,
    });
    const operation = `herdr ${args.slice(0, 2).join(" ")}`;
    if (result.timedOut) {
      return callFailure("timeout", `${operation} did not answer within ${formatWait(timeoutMs)}.`);
    }
    if (result.startError?.code === "ENOENT") {
      return callFailure(
        "herdr_not_found",
        `The herdr executable (${this.herdrBin}) was not found; install Herdr or set HERDR_BIN_PATH.`,
      );
    }
    if (result.exitCode === undefined) {
      const detail = oneLine(runFailure(result)) || "no exit code";
      return callFailure("herdr_failed", `${operation} could not run: ${stripPeriod(detail)}.`);
    }
    return { ok: true, exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  }

  /** One `herdr` call that must print a success envelope whose result matches `schema`. */
  async call<T>(
    args: readonly string[],
    schema: z.ZodType<T>,
    operation: string,
    options: CallOptions = {},
  ): Promise<CallResult<T>> {
    const ran = await this.exec(args, options);
    if (!ran.ok) return ran;
    if (ran.exitCode === 2) return usageFailure(operation, ran.stderr);
    const decoded = decodeHerdrOutput({ stdout: ran.stdout, stderr: ran.stderr }, schema);
    if (decoded.kind === "error") return herdrError(operation, decoded.code, decoded.message);
    if (decoded.kind === "malformed") {
      return callFailure(
        "malformed_output",
        `herdr ${operation} printed output this package cannot read: ${stripPeriod(decoded.detail)}.`,
      );
    }
    if (ran.exitCode !== 0) return exitFailure(operation, ran.exitCode, ran.stderr);
    if (decoded.kind === "silent") {
      return callFailure("malformed_output", `herdr ${operation} printed nothing where a JSON answer was expected.`);
    }
    return { ok: true, result: decoded.result };
  }

  /** A fire-and-forget call (`pane run`, `workspace close` when its answer does not matter): only an error counts. */
  async send(
    args: readonly string[],
    operation: string,
    options: CallOptions = {},
  ): Promise<{ ok: true } | CallFailure> {
    const ran = await this.exec(args, options);
    if (!ran.ok) return ran;
    if (ran.exitCode === 2) return usageFailure(operation, ran.stderr);
    const decoded = decodeHerdrOutput({ stdout: ran.stdout, stderr: ran.stderr }, z.unknown());
    if (decoded.kind === "error") return herdrError(operation, decoded.code, decoded.message);
    if (ran.exitCode !== 0) return exitFailure(operation, ran.exitCode, ran.stderr);
    return { ok: true };
  }

  /** `pane process-info` for one pane, `pane_not_found` retried through a restarted server's grace. */
  async processInfo(paneId: string, socketPath: string | undefined): Promise<CallResult<PaneProcessInfo>> {
    const notFound = new PaneNotFoundGrace();
    for (;;) {
      const info = await this.call(
        ["pane", "process-info", "--pane", paneId],
        PaneProcessInfoSchema,
        "pane process-info",
        { socketPath },
      );
      if (info.ok || info.code !== "pane_not_found") return info;
      if (notFound.isFinal(info)) return this.explainPaneNotFound(paneId, socketPath, info);
      await sleep(PANE_RETRY_INTERVAL_MS);
    }
  }

  /**
   * A lasting `pane_not_found` from process-info for a pane that `pane get` still shows: after a
   * restart Herdr starts such a pane's terminal only when it resumes the agent there, and it waits
   * for a client to be attached first (src/app/agent_resume.rs), so the pane is not gone.
   */
  async explainPaneNotFound(
    paneId: string,
    socketPath: string | undefined,
    failure: CallFailure,
  ): Promise<CallFailure> {
    const shown = await this.call(["pane", "get", paneId], PaneInfoResultSchema, "pane get", { socketPath });
    if (!shown.ok) return failure;
    return callFailure(
      "pane_not_started",
      `Herdr pane ${paneId} exists but its terminal is not running yet (after a restart Herdr starts it when it resumes the agent there, once a Herdr client is attached); try again then.`,
    );
  }

  /** `--trust-repository` for every worktree command when this Herdr has it. */
  async trustArgs(): Promise<string[]> {
    return (await this.#supportsTrustRepository()) ? ["--trust-repository"] : [];
  }

  /**
   * Whether this Herdr's `worktree create` accepts `--trust-repository` (0.9 added it, a later
   * version replaces it): its help decides, else its version. Probed once per backend.
   */
  #supportsTrustRepository(): Promise<boolean> {
    this.#trustFlagProbe ??= (async () => {
      const help = await this.exec(["worktree", "create", "--help"], { timeoutMs: this.timeoutMs });
      if (help.ok && help.exitCode === 0 && /usage/i.test(help.stdout + help.stderr)) {
        return (help.stdout + help.stderr).includes("--trust-repository");
      }
      const version = await this.exec(["--version"], { timeoutMs: this.timeoutMs });
      const match = version.ok ? /(\d+)\.(\d+)\.(\d+)/.exec(version.stdout) : null;
      if (match === null) return false;
      const [major, minor] = [Number(match[1]), Number(match[2])];
      return major > 0 || minor >= 9;
    })();
    return this.#trustFlagProbe;
  }
}

export function callFailure(code: string, message: string, detail = message): CallFailure {
  return { ok: false, code, message, detail };
}

/** The public shape of a failure (without the call's `detail`). */
export function publicFailure(failure: MuxFailure): MuxFailure {
  return {
    ok: false,
    code: failure.code,
    message: failure.message,
    ...(failure.partial !== undefined ? { partial: failure.partial } : {}),
  };
}

function usageFailure(operation: string, stderr: string): CallFailure {
  const detail = oneLine(stderr).slice(0, 200) || "no message";
  return callFailure(
    "usage_error",
    `herdr ${operation} rejected its arguments (${stripPeriod(detail)}); this Herdr version may not support what this package passes.`,
    detail,
  );
}

function exitFailure(operation: string, exitCode: number, stderr: string): CallFailure {
  const detail = oneLine(stderr).slice(0, 200) || "no message";
  return callFailure(
    "herdr_failed",
    `herdr ${operation} failed with exit code ${exitCode}: ${stripPeriod(detail)}.`,
    detail,
  );
}

/** A Herdr error code as a failure; a few get a sentence that says what to do. */
function herdrError(operation: string, code: string, herdrMessage: string): CallFailure {
  const detail = stripPeriod(oneLine(herdrMessage)) || code;
  switch (code) {
    case "server_not_running":
      return callFailure(code, `The Herdr server is not running: ${detail}.`, detail);
    case "pane_not_found":
      return callFailure(code, `Herdr could not find the pane (${detail}); it was closed.`, detail);
    case "workspace_not_found":
      return callFailure(code, `Herdr could not find the workspace (${detail}); it was closed.`, detail);
    default:
      return callFailure(code, `herdr ${operation} failed (${code}): ${detail}.`, detail);
  }
}

/**
 * `pane_not_found` is final only once it has been the answer for PANE_RESTART_GRACE_MS: a restarted
 * server answers it for its panes for ~750 ms before their terminals run again.
 */
export class PaneNotFoundGrace {
  #since: number | undefined;

  isFinal(failure: MuxFailure): boolean {
    if (failure.code !== "pane_not_found") return false;
    this.#since ??= Date.now();
    return Date.now() - this.#since >= PANE_RESTART_GRACE_MS;
  }

  reset(): void {
    this.#since = undefined;
  }
}

/** One poll's timeout: what is left before the deadline, but never less than MIN_POLL_TIMEOUT_MS. */
export function pollTimeout(deadline: number, maxMs: number): number {
  return Math.min(maxMs, Math.max(MIN_POLL_TIMEOUT_MS, deadline - Date.now()));
}

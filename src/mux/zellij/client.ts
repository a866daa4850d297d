/**
 * Talking to zellij: one `zellij --session <name> action ...` per call, and the pane list it prints.
 *
 * Invariants:
 * - Every call names its session and, when one was recorded, its socket directory
 *   (`ZELLIJ_SOCKET_DIR`), uses an argument array and carries a timeout.
 * - Failures are values with a stable code (`timeout`, `zellij_not_found`, `session_not_found`,
 *   `zellij_failed`) and one sentence, never thrown.
 * - The pane list is decoded by one zod schema; an answer cut off while a tab is being made is
 *   asked for again, a few times, before it is called a failure; so is "no such session", twice
 *   (zellij 0.45's client can miss a live session under load, zellij-utils sessions.rs).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { formatWait, oneLine, stripPeriod } from "../../text.ts";
import type { MuxFailure } from "../types.ts";
import { runFailure, runProgram, runSucceeded } from "../../process/run-program.ts";

const PANE_LIST_ATTEMPTS = 8;
const PANE_LIST_RETRY_MS = 100;
/** The pauses before asking again about a session zellij said is not there (see `call`). */
const SESSION_RECHECK_DELAYS_MS = [150, 350];

/** One pane as `zellij action list-panes --all --json` prints it (fields this backend reads). */
const PaneSchema = z.looseObject({
  id: z.number().int(),
  is_plugin: z.boolean().optional(),
  tab_id: z.number().int(),
  tab_name: z.string().optional(),
  pane_cwd: z.string().nullish(),
  exited: z.boolean().optional(),
});
const PaneListSchema = z.array(PaneSchema);
export type ZellijPane = z.infer<typeof PaneSchema>;

export type ZellijCallResult = { ok: true; stdout: string } | MuxFailure;

export class ZellijClient {
  readonly #bin: string;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #timeoutMs: number;

  constructor(options: { bin: string; env: Readonly<Record<string, string | undefined>>; timeoutMs: number }) {
    this.#bin = options.bin;
    this.#env = options.env;
    this.#timeoutMs = options.timeoutMs;
  }

  async panes(
    sessionName: string,
    socketDir: string | undefined,
  ): Promise<{ ok: true; panes: ZellijPane[] } | MuxFailure> {
    // zellij 0.45 can answer with an empty or cut-off list (a tab being made, a loaded machine):
    // ask again, for up to about a second.
    let printed = "";
    for (let attempt = 0; attempt < PANE_LIST_ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep(PANE_LIST_RETRY_MS);
      const listed = await this.call(sessionName, socketDir, ["list-panes", "--all", "--json"]);
      if (!listed.ok) return listed;
      printed = listed.stdout;
      let parsed: unknown;
      try {
        parsed = JSON.parse(printed);
      } catch {
        continue;
      }
      const panes = PaneListSchema.safeParse(parsed);
      if (!panes.success) {
        return {
          ok: false,
          code: "zellij_failed",
          message: "zellij list-panes printed panes in a shape this version does not know.",
        };
      }
      return { ok: true, panes: panes.data };
    }
    return {
      ok: false,
      code: "zellij_failed",
      message: `zellij list-panes printed something that is not JSON: ${JSON.stringify(oneLine(printed).slice(0, 80))}.`,
    };
  }

  /**
   * One action, asked again (twice, briefly) when zellij says the session is not there: its client
   * decides that from one status round trip with the server, which a loaded machine can lose, and
   * then it sent nothing, so asking again never repeats an action.
   */
  async call(sessionName: string, socketDir: string | undefined, args: string[]): Promise<ZellijCallResult> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.#callOnce(sessionName, socketDir, args);
      if (result.ok || result.code !== "session_not_found" || attempt >= SESSION_RECHECK_DELAYS_MS.length)
        return result;
      await sleep(SESSION_RECHECK_DELAYS_MS[attempt] ?? 0);
    }
  }

  async #callOnce(sessionName: string, socketDir: string | undefined, args: string[]): Promise<ZellijCallResult> {
    const timeoutMs = this.#timeoutMs;
    const result = await runProgram(this.#bin, ["--session", sessionName, "action", ...args], {
      timeoutMs,
      env: { ...this.#env, ...(socketDir === undefined ? {} : { ZELLIJ_SOCKET_DIR: socketDir }) },
    });
    if (runSucceeded(result)) return { ok: true, stdout: result.stdout };
    const stderr = oneLine(result.stderr);
    if (result.timedOut) {
      return {
        ok: false,
        code: "timeout",
        message: `zellij ${args[0]} did not answer within ${formatWait(timeoutMs)}.`,
      };
    }
    if (result.startError?.code === "ENOENT") {
      return {
        ok: false,
        code: "zellij_not_found",
        message: `The zellij executable ${this.#bin} was not found.`,
      };
    }
    // zellij's own words for a session it cannot reach ("Session 'x' not found", "There is no
    // active session!"); any other "not found" (a tab, a pane) is a failure, never a session gone.
    if (/session '[^']*' not found|no active session|no session named/i.test(stderr)) {
      return { ok: false, code: "session_not_found", message: `zellij has no session named ${sessionName}.` };
    }
    const detail = stderr || oneLine(runFailure(result));
    return { ok: false, code: "zellij_failed", message: `zellij ${args[0]} failed: ${stripPeriod(detail)}.` };
  }
}

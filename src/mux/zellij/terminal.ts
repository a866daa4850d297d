/**
 * zellij as the registry sees it: detected from `$ZELLIJ` / `$ZELLIJ_SESSION_NAME`, a tab per
 * handoff in the parent's session.
 *
 * Invariants: decides and constructs only (see ../terminal.ts); the one outside call is `ping`.
 */
import { stripPeriod } from "../../text.ts";
import { readWaits } from "../../config/waits.ts";
import { shQuote } from "../../process/sh-quote.ts";
import type { Terminal } from "../terminal.ts";
import type { ZellijLocation } from "../../manifest/locations.ts";
import { ZellijMultiplexer } from "./zellij.ts";

export const zellijTerminal: Terminal<ZellijLocation> = {
  kind: "zellij",
  title: "zellij",
  windowNoun: "tab",
  detects: (env) => (env.ZELLIJ_SESSION_NAME ?? "") !== "" || env.ZELLIJ !== undefined,

  async select(env, git) {
    const zellij = ZellijMultiplexer.fromEnvironment(env, git, { timeoutMs: readWaits(env, ["muxCallMs"]).muxCallMs });
    if (zellij === undefined) {
      return {
        ok: false,
        message: "This Pi is not running inside zellij ($ZELLIJ_SESSION_NAME is not set); start Pi in a zellij pane.",
      };
    }
    const answered = await zellij.ping();
    if (answered.ok) return { ok: true, mux: zellij };
    switch (answered.code) {
      case "session_not_found":
        return {
          ok: false,
          message: `zellij has no running session ${zellij.sessionName} (the one $ZELLIJ_SESSION_NAME names); start Pi in a pane of a running zellij, then try again.`,
        };
      case "zellij_not_found":
        return {
          ok: false,
          message: "The zellij executable was not found on PATH; install zellij or hand off with --mux tmux.",
        };
      default:
        return {
          ok: false,
          message: `zellij cannot be used for this handoff: ${stripPeriod(answered.message)}.`,
        };
    }
  },

  forLocation(location, deps) {
    const options = { timeoutMs: deps.timeoutMs ?? readWaits(deps.env, ["muxCallMs"]).muxCallMs };
    // The caller's own session, when it runs in zellij, is where a closed tab is reopened once the
    // recorded session is gone; the recorded one is asked first either way.
    const own = ZellijMultiplexer.fromEnvironment(deps.env, deps.git, options);
    if (own !== undefined) return { ok: true, mux: own };
    if (location.sessionName === undefined) {
      return {
        ok: false,
        code: "no_server",
        message:
          "The handoff recorded no zellij session and this process is not running inside zellij; run it inside zellij.",
      };
    }
    return {
      ok: true,
      mux: new ZellijMultiplexer({
        sessionName: location.sessionName,
        ...(location.socketDir === undefined ? {} : { socketDir: location.socketDir }),
        git: deps.git,
        env: deps.env,
        ...options,
      }),
    };
  },

  describe: (location) =>
    location.tabId !== undefined
      ? `zellij tab ${location.tabId} of session ${location.sessionName ?? "?"} (pane ${location.paneId ?? "?"})`
      : "no zellij tab",
  hasWindow: (location) => location.paneId !== undefined || location.tabId !== undefined,
  switchCommand: (location) =>
    location.tabId === undefined || location.sessionName === undefined
      ? undefined
      : `zellij --session ${shQuote(location.sessionName)} action go-to-tab-by-id ${location.tabId}`,
  // The environment names the parent's pane but not its tab, and zellij has no "tab of this pane" switch.
  backCommand: () => undefined,
  childEnv: {},
};

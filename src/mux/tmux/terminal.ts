/**
 * tmux as the registry sees it: detected from `$TMUX`, a window per handoff.
 *
 * Invariants: decides and constructs only (see ../terminal.ts); the one outside call is `ping`.
 */
import { stripPeriod } from "../../text.ts";
import { readWaits } from "../../config/waits.ts";
import type { Terminal } from "../terminal.ts";
import type { TmuxLocation } from "../../manifest/locations.ts";
import { TmuxMultiplexer } from "./tmux.ts";

export const tmuxTerminal: Terminal<TmuxLocation> = {
  kind: "tmux",
  title: "tmux",
  windowNoun: "window",
  detects: (env) => env.TMUX !== undefined && env.TMUX !== "",

  async select(env, git) {
    const tmux = TmuxMultiplexer.fromEnvironment(env, git, { timeoutMs: readWaits(env, ["muxCallMs"]).muxCallMs });
    if (tmux === undefined) {
      return {
        ok: false,
        message: "This Pi is not running inside tmux ($TMUX and $TMUX_PANE are not set); start Pi in a tmux pane.",
      };
    }
    const answered = await tmux.ping();
    if (answered.ok) return { ok: true, mux: tmux };
    switch (answered.code) {
      case "server_not_running":
        return {
          ok: false,
          message: `No tmux server is running at ${tmux.socketPath} (the socket $TMUX names); start Pi in a pane of a running tmux, then try again.`,
        };
      case "pane_not_found":
        return {
          ok: false,
          message: `The tmux server at ${tmux.socketPath} has no pane ${env.TMUX_PANE ?? "(from $TMUX)"} ($TMUX_PANE); start Pi in a pane of a running tmux, then try again.`,
        };
      default:
        return {
          ok: false,
          message: `tmux cannot be used for this handoff: ${stripPeriod(answered.message)}.`,
        };
    }
  },

  forLocation(location, deps) {
    const options = {
      timeoutMs: deps.timeoutMs ?? readWaits(deps.env, ["muxCallMs"]).muxCallMs,
      ...(deps.askOnce === undefined ? {} : { askOnce: deps.askOnce }),
    };
    // The caller's own tmux, when it runs in one: tmux locations name their socket, and a
    // reopened window falls back to the caller's session.
    const own = TmuxMultiplexer.fromEnvironment(deps.env, deps.git, options);
    if (own !== undefined) return { ok: true, mux: own };
    if (location.socketPath === undefined) {
      return {
        ok: false,
        code: "no_server",
        message: "The handoff recorded no tmux server and this process is not running inside tmux; run it inside tmux.",
      };
    }
    return {
      ok: true,
      mux: new TmuxMultiplexer({
        socketPath: location.socketPath,
        ...(location.sessionId === undefined ? {} : { targetSession: location.sessionId }),
        git: deps.git,
        ...options,
      }),
    };
  },

  describe: (location) =>
    location.windowId !== undefined
      ? `tmux window ${location.windowId} (pane ${location.paneId ?? "?"})`
      : "no tmux window",
  hasWindow: (location) => location.paneId !== undefined,
  switchCommand: (location) =>
    location.windowId === undefined ? undefined : `tmux select-window -t ${location.windowId}`,
  backCommand(env) {
    // A pane id is a valid window target: tmux selects the window that holds it.
    const pane = env.TMUX_PANE;
    return pane !== undefined && /^%\d+$/.test(pane) ? `tmux select-window -t ${pane}` : undefined;
  },
  childEnv: {},
};

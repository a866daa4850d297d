/**
 * Herdr as the registry sees it: detected from `HERDR_ENV=1`, a workspace per handoff, and the
 * agent status Herdr itself shows for each child.
 *
 * Invariants: decides and constructs only (see ../terminal.ts); the one outside call is `ping`.
 */
import { readWaits } from "../../config/waits.ts";
import { shQuote } from "../../process/sh-quote.ts";
import { formatWait, stripPeriod } from "../../text.ts";
import type { Terminal } from "../terminal.ts";
import { herdrAgentStatuses } from "./agent-statuses.ts";
import { HerdrMultiplexer, herdrPiIntegrationInstalled } from "./herdr.ts";
import { herdrPaneStateReporter } from "./sidebar-report.ts";
import type { HerdrLocation } from "../../manifest/locations.ts";
import { HERDR_CHILD_ENV, isHerdrId } from "./protocol.ts";

export const herdrTerminal: Terminal<HerdrLocation> = {
  kind: "herdr",
  title: "Herdr",
  windowNoun: "workspace",
  detects: (env) => env.HERDR_ENV === "1",

  async select(env) {
    const waits = readWaits(env, ["muxCallMs", "herdrWorktreeMs", "herdrPingMs"]);
    const herdr = HerdrMultiplexer.fromEnvironment(env, {
      timeoutMs: waits.muxCallMs,
      worktreeTimeoutMs: waits.herdrWorktreeMs,
    });
    const answered = await herdr.ping({ timeoutMs: waits.herdrPingMs });
    if (answered.ok) return { ok: true, mux: herdr };
    const where = herdr.socketPath !== undefined ? ` at ${herdr.socketPath}` : "";
    switch (answered.code) {
      case "server_not_running":
        return {
          ok: false,
          message: `Herdr's server is not running${where}; start Herdr (or hand off with --mux tmux from a tmux pane), then try again.`,
        };
      case "herdr_not_found":
        return {
          ok: false,
          message:
            "The herdr executable was not found ($HERDR_BIN_PATH is unset and herdr is not on PATH); install Herdr or hand off with --mux tmux.",
        };
      case "timeout":
        return {
          ok: false,
          message: `Herdr's server${where} did not answer within ${formatWait(waits.herdrPingMs)}; check that Herdr is healthy, then try again.`,
        };
      default:
        return {
          ok: false,
          message: `Herdr cannot be used for this handoff: ${stripPeriod(answered.message)}.`,
        };
    }
  },

  forLocation(location, deps) {
    const waits = readWaits(deps.env, ["muxCallMs", "herdrWorktreeMs"]);
    // The recorded socket addresses the server that made the handoff; the binary is the caller's
    // ($HERDR_BIN_PATH inside Herdr, else herdr from PATH). git drops the entry of a vanished
    // checkout Herdr can no longer open.
    return {
      ok: true,
      mux: HerdrMultiplexer.fromEnvironment(
        location.socketPath === undefined ? deps.env : { ...deps.env, HERDR_SOCKET_PATH: location.socketPath },
        { timeoutMs: deps.timeoutMs ?? waits.muxCallMs, worktreeTimeoutMs: waits.herdrWorktreeMs, git: deps.git },
      ),
    };
  },

  describe: (location) =>
    location.workspaceId !== undefined
      ? `Herdr workspace ${location.workspaceId} (pane ${location.paneId ?? "?"})`
      : "no Herdr workspace",
  hasWindow: (location) => location.paneId !== undefined || location.workspaceId !== undefined,
  switchCommand: (location) =>
    location.workspaceId === undefined ? undefined : `herdr workspace focus ${location.workspaceId}`,
  backCommand(env) {
    const workspace = env.HERDR_WORKSPACE_ID;
    // Any id Herdr prints (legacy hex ones too), quoted: it is shown as a command to type.
    return isHerdrId(workspace) ? `herdr workspace focus ${shQuote(workspace)}` : undefined;
  },
  // Herdr recognises the agent in a pane by this (its own hooks and status).
  childEnv: HERDR_CHILD_ENV,
  agentStatuses: herdrAgentStatuses,
  paneStateReporter: (env, input) =>
    herdrPaneStateReporter(env, { tui: input.tui, integrationInstalled: herdrPiIntegrationInstalled(input.agentDir) }),
};

/**
 * Choosing the multiplexer for a handoff: an explicit `--mux` first, then `HERDR_ENV=1`, then `$TMUX`.
 *
 * Invariants:
 * - Decides only: writes nothing and starts nothing. The one outside call is a cheap, bounded
 *   `herdr workspace list` that proves Herdr's server answers, so a handoff into a Herdr whose
 *   server is not running is refused before anything is written.
 * - `HERDR_ENV=1` wins over `$TMUX`: `$TMUX` leaks into Herdr panes when Herdr was started from
 *   a tmux pane, while `HERDR_ENV` is Herdr's documented gate. `--mux tmux` overrides it.
 * - Every refusal is one sentence that says what to do.
 */
import type { GitPort } from "../git/types.ts";
import type { MuxKind } from "../manifest/schema.ts";
import { HerdrMultiplexer } from "./herdr.ts";
import { TmuxMultiplexer } from "./tmux.ts";
import type { Multiplexer } from "./types.ts";
import { readWaits } from "../config/waits.ts";
import { formatWait } from "../text.ts";

export type MuxSelection = { ok: true; mux: Multiplexer } | { ok: false; message: string };

export function preferredMuxKind(explicit: MuxKind | undefined, env: Readonly<Record<string, string | undefined>>): MuxKind | undefined {
  if (explicit !== undefined) return explicit;
  if (env.HERDR_ENV === "1") return "herdr";
  if (env.TMUX !== undefined && env.TMUX !== "") return "tmux";
  return undefined;
}

export async function selectMultiplexer(
  explicit: MuxKind | undefined,
  env: NodeJS.ProcessEnv,
  git: GitPort,
  options: { herdrPingTimeoutMs?: number } = {},
): Promise<MuxSelection> {
  const wanted = preferredMuxKind(explicit, env);
  if (wanted === "herdr") {
    const waits = readWaits(env, ["muxCallMs", "herdrWorktreeMs", "herdrPingMs"]);
    const herdr = HerdrMultiplexer.fromEnvironment(env, { timeoutMs: waits.muxCallMs, worktreeTimeoutMs: waits.herdrWorktreeMs });
    const timeoutMs = options.herdrPingTimeoutMs ?? waits.herdrPingMs;
    const answered = await herdr.ping({ timeoutMs });
    if (answered.ok) return { ok: true, mux: herdr };
    return { ok: false, message: herdrUnavailable(answered.code, answered.message, herdr, timeoutMs) };
  }
  if (wanted === "tmux") {
    const tmux = TmuxMultiplexer.fromEnvironment(env, git, { timeoutMs: readWaits(env, ["muxCallMs"]).muxCallMs });
    if (tmux === undefined) {
      return { ok: false, message: "This Pi is not running inside tmux ($TMUX and $TMUX_PANE are not set); start Pi in a tmux pane." };
    }
    return { ok: true, mux: tmux };
  }
  return { ok: false, message: "This Pi is not running inside tmux or Herdr; start Pi in a tmux (or Herdr) pane to hand off." };
}

function herdrUnavailable(code: string, detail: string, herdr: HerdrMultiplexer, timeoutMs: number): string {
  const where = herdr.socketPath !== undefined ? ` at ${herdr.socketPath}` : "";
  switch (code) {
    case "server_not_running":
      return `Herdr's server is not running${where}; start Herdr (or hand off with --mux tmux from a tmux pane), then try again.`;
    case "herdr_not_found":
      return "The herdr executable was not found ($HERDR_BIN_PATH is unset and herdr is not on PATH); install Herdr or hand off with --mux tmux.";
    case "timeout":
      return `Herdr's server${where} did not answer within ${formatWait(timeoutMs)}; check that Herdr is healthy, then try again.`;
    default:
      return `Herdr cannot be used for this handoff: ${detail.replace(/[.\s]+$/, "")}.`;
  }
}

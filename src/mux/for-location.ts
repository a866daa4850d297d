/**
 * The multiplexer that owns a recorded location: recovery acts on a handoff with the backend that
 * made it, whichever backend (if any) the recovering process itself runs in.
 *
 * Invariants:
 * - Decides and constructs only; starts nothing, runs nothing, writes nothing.
 * - A location addresses its own server (the tmux socket it recorded), so a handoff made in one
 *   tmux server is found there even when the caller runs in another one or in none.
 * - A backend that cannot be reached is a value with a code and one sentence, never a throw.
 */
import type { RecoveryGitPort } from "../git/types.ts";
import type { MuxLocation } from "../manifest/schema.ts";
import { HerdrMultiplexer } from "./herdr.ts";
import { TmuxMultiplexer } from "./tmux.ts";
import type { RecoverableMultiplexer } from "./types.ts";
import { readWaits } from "../config/waits.ts";

export interface MuxForLocationDeps {
  /** The caller's environment: its own tmux (`$TMUX`, `$TMUX_PANE`) is where a window is reopened when the recorded session is gone. */
  env: Readonly<Record<string, string | undefined>>;
  git: RecoveryGitPort;
  /** Upper bound for each multiplexer call. */
  timeoutMs?: number;
}

export type MuxForLocation =
  | { ok: true; mux: RecoverableMultiplexer }
  | { ok: false; code: "no_server" | "unsupported"; message: string };

export function muxForLocation(location: MuxLocation, deps: MuxForLocationDeps): MuxForLocation {
  // The caller's bound per call, else the user's setting; Herdr's worktree operations have their own.
  const waits = readWaits(deps.env, ["muxCallMs", "herdrWorktreeMs"]);
  const options = { timeoutMs: deps.timeoutMs ?? waits.muxCallMs };
  switch (location.kind) {
    case "tmux": {
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
    }
    case "herdr":
      // The recorded socket addresses the server that made the handoff; the binary is the
      // caller's ($HERDR_BIN_PATH inside Herdr, else herdr from PATH). git drops the entry of a
      // vanished checkout Herdr can no longer open.
      return {
        ok: true,
        mux: HerdrMultiplexer.fromEnvironment(
          location.socketPath === undefined ? deps.env : { ...deps.env, HERDR_SOCKET_PATH: location.socketPath },
          { ...options, worktreeTimeoutMs: waits.herdrWorktreeMs, git: deps.git },
        ),
      };
  }
}

/**
 * Choosing the multiplexer for a handoff: an explicit choice first, then `HERDR_ENV=1`, then `$TMUX`.
 *
 * Invariant: decides only; starts nothing and writes nothing.
 */
import type { GitPort } from "../git/types.ts";
import type { MuxKind } from "../manifest/schema.ts";
import { TmuxMultiplexer } from "./tmux.ts";
import type { Multiplexer } from "./types.ts";

export type MuxSelection = { ok: true; mux: Multiplexer } | { ok: false; message: string };

export function selectMultiplexer(explicit: MuxKind | undefined, env: NodeJS.ProcessEnv, git: GitPort): MuxSelection {
  const inHerdr = env.HERDR_ENV === "1";
  const wanted: MuxKind | undefined = explicit ?? (inHerdr && !env.TMUX ? "herdr" : env.TMUX ? "tmux" : undefined);
  if (wanted === "herdr") {
    return {
      ok: false,
      message: "The Herdr backend is not available in this version yet; run Pi inside tmux and use --mux tmux.",
    };
  }
  if (wanted === "tmux") {
    const tmux = TmuxMultiplexer.fromEnvironment(env, git);
    if (tmux === undefined) {
      return { ok: false, message: "This Pi is not running inside tmux ($TMUX and $TMUX_PANE are not set); start Pi in a tmux pane." };
    }
    return { ok: true, mux: tmux };
  }
  return { ok: false, message: "This Pi is not running inside tmux or Herdr; start Pi in a tmux (or Herdr) pane to hand off." };
}

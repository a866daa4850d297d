/**
 * Every terminal this package drives, by kind: the one list outside each terminal's own folder.
 *
 * Invariants:
 * - Adding a terminal is its folder (its backend, terminal.ts), its location schema in
 *   src/manifest/locations.ts and one entry here; outside `src/mux/`, only that schema names a kind.
 * - `DETECTION_ORDER` decides which terminal a process is in when several say so: Herdr's
 *   `HERDR_ENV=1` first (`$TMUX` leaks into Herdr panes started from tmux), then zellij (the same
 *   for zellij started from tmux), then `$TMUX`.
 * - The one cast from a location to its terminal's own type is here, checked by the kind.
 */
import type { GitPort } from "../git/types.ts";
import type { Manifest } from "../manifest/schema.ts";
import { herdrTerminal } from "./herdr/terminal.ts";
import { listMuxKinds, MUX_KINDS, type MuxKind, type MuxLocation } from "../manifest/locations.ts";
import type {
  AgentStatusesOf,
  MuxForLocation,
  MuxForLocationDeps,
  MuxSelection,
  PaneStateReporter,
  Terminal,
  TerminalEnv,
} from "./terminal.ts";
import { tmuxTerminal } from "./tmux/terminal.ts";
import { zellijTerminal } from "./zellij/terminal.ts";

const TERMINALS: { readonly [K in MuxKind]: Terminal<Extract<MuxLocation, { kind: K }>> } = {
  tmux: tmuxTerminal,
  herdr: herdrTerminal,
  zellij: zellijTerminal,
};

const DETECTION_ORDER: readonly MuxKind[] = ["herdr", "zellij", "tmux"];

/** The terminal of a kind. */
export function terminal(kind: MuxKind): Terminal {
  return TERMINALS[kind] as unknown as Terminal;
}

/** The terminal that made a location, typed for it. */
function terminalOf(location: MuxLocation): Terminal {
  return terminal(location.kind);
}

/** Which terminal this process runs in: `--mux` first, then each terminal's own variables. */
export function preferredMuxKind(explicit: MuxKind | undefined, env: TerminalEnv): MuxKind | undefined {
  if (explicit !== undefined) return explicit;
  return DETECTION_ORDER.find((kind) => TERMINALS[kind].detects(env));
}

export async function selectMultiplexer(
  explicit: MuxKind | undefined,
  env: TerminalEnv,
  git: GitPort,
): Promise<MuxSelection> {
  const wanted = preferredMuxKind(explicit, env);
  if (wanted !== undefined) return TERMINALS[wanted].select(env, git);
  const named = listMuxKinds((kind) => TERMINALS[kind].title);
  return {
    ok: false,
    message: `This Pi is not running inside ${named}; start Pi in a ${named} pane to hand off.`,
  };
}

export function muxForLocation(location: MuxLocation, deps: MuxForLocationDeps): MuxForLocation {
  return terminalOf(location).forLocation(location, deps);
}

export function describeLocation(location: MuxLocation): string {
  return terminalOf(location).describe(location);
}

export function hasWindow(location: MuxLocation): boolean {
  return terminalOf(location).hasWindow(location);
}

export function switchCommand(location: MuxLocation): string | undefined {
  return terminalOf(location).switchCommand(location);
}

export function backCommand(location: MuxLocation, env: TerminalEnv): string | undefined {
  return terminalOf(location).backCommand(env);
}

/** "window", "workspace", "tab": what the handoff got in its terminal. */
export function windowNoun(location: MuxLocation): string {
  return terminalOf(location).windowNoun;
}

/** What the child's environment gets from its terminal (Herdr: `HERDR_AGENT=pi`). */
export function childEnvFor(location: MuxLocation): Readonly<Record<string, string>> {
  return terminalOf(location).childEnv;
}

/** Every terminal's agent statuses for the parent's live view, merged; terminals without any say nothing. */
export function agentStatuses(env: TerminalEnv): AgentStatusesOf {
  const sources = MUX_KINDS.flatMap((kind) => {
    const of = TERMINALS[kind].agentStatuses;
    return of === undefined ? [] : [of(env)];
  });
  return async (manifests: readonly Manifest[]) => {
    const merged = new Map<string, string>();
    for (const statuses of await Promise.all(sources.map((source) => source(manifests))))
      for (const [id, status] of statuses) merged.set(id, status);
    return merged;
  };
}

/** What tells the terminal this Pi runs in about it, when that terminal listens (Herdr's sidebar). */
export function paneStateReporter(
  env: TerminalEnv,
  input: { tui: boolean; agentDir: string },
): PaneStateReporter | undefined {
  const kind = preferredMuxKind(undefined, env);
  return kind === undefined ? undefined : TERMINALS[kind].paneStateReporter?.(env, input);
}

export type { PaneStateReporter } from "./terminal.ts";
export type { AgentStatusesOf, MuxForLocation, MuxForLocationDeps, MuxSelection } from "./terminal.ts";

/**
 * What the rest of the package knows about a terminal: one descriptor per terminal, in its own
 * folder, collected by registry.ts.
 *
 * Invariants:
 * - A descriptor decides and constructs only: `select` asks the chosen server one bounded question
 *   (is it there), nothing here creates, types or writes.
 * - Everything a user reads about a terminal (its name, the noun for what a handoff gets, the
 *   commands that switch there and back) comes from its descriptor, so no code outside `src/mux/`
 *   names a terminal.
 * - Refusals are one sentence that says what to do.
 */
import type { GitPort, RecoveryGitPort } from "../git/types.ts";
import type { PublishedState } from "../manifest/published-states.ts";
import type { Manifest } from "../manifest/schema.ts";
import type { MuxKind, MuxLocation } from "../manifest/locations.ts";
import type { Multiplexer, RecoverableMultiplexer } from "./types.ts";
import type { Outcome } from "../outcome.ts";

export type TerminalEnv = Readonly<Record<string, string | undefined>>;

export type MuxSelection = { ok: true; mux: Multiplexer } | { ok: false; message: string };

export interface MuxForLocationDeps {
  /** The caller's environment: its own terminal is where a window is reopened when the recorded one is gone. */
  env: TerminalEnv;
  git: RecoveryGitPort;
  /** Upper bound for each multiplexer call. */
  timeoutMs?: number;
  /**
   * One answer per question for the whole of one inventory (recovery's gatherer), so a backend
   * lists a server's panes once instead of asking it about each handoff. Absent: each its own.
   */
  askOnce?: AskOnce;
}

/** `ask()` the first time `key` is asked, that same promise every later time. */
export type AskOnce = <T>(key: string, ask: () => Promise<T>) => Promise<T>;

export type MuxForLocation = Outcome<{ mux: RecoverableMultiplexer }, "no_server" | "unsupported">;

/** What a Pi in one of the terminal's panes tells the terminal about itself (Herdr's sidebar). */
export interface PaneStateReporter {
  /** A new session in this pane, and why (`startup`, `new`, `resume`, `fork`, `reload`). */
  sessionStarted(sessionFile: string | undefined, reason: string): void;
  /** The Pi's state changed (src/child/child-state.ts). */
  published(state: PublishedState): void;
  /** Where the terminal's own Pi integration listens for dialogs: a Pi event channel and its payloads. */
  prompts?: { channel: string; started(label: string): unknown; ended(): unknown };
}

/** Handoff id -> the terminal's own word for what its agent does (Herdr's `agent_status`). */
export type AgentStatusesOf = (manifests: readonly Manifest[]) => Promise<ReadonlyMap<string, string>>;

export interface Terminal<L extends MuxLocation = MuxLocation> {
  readonly kind: L["kind"] & MuxKind;
  /** Its name as users write it: "tmux", "Herdr", "zellij". */
  readonly title: string;
  /** What one handoff gets in it: "window", "workspace", "tab". */
  readonly windowNoun: string;
  /** Whether `env` says this process runs inside it (its own documented variables). */
  detects(env: TerminalEnv): boolean;
  /** The backend a handoff from this process uses, once its server answered; else why not. */
  select(env: TerminalEnv, git: GitPort): Promise<MuxSelection>;
  /** The backend that owns a recorded location, whichever terminal the caller runs in. */
  forLocation(location: L, deps: MuxForLocationDeps): MuxForLocation;
  /** Where the child lives, as a user finds it ("no tmux window" when none is recorded). */
  describe(location: L): string;
  /** Whether the handoff ever got a window (recorded ids). */
  hasWindow(location: L): boolean;
  /** The command a user types to bring the child's window to the front, when its ids are known. */
  switchCommand(location: L): string | undefined;
  /** The command that brings the parent back, from the parent's own environment. */
  backCommand(env: TerminalEnv): string | undefined;
  /** What the child's environment gets on top of the handoff's own variables. */
  readonly childEnv: Readonly<Record<string, string>>;
  /** Optional: what the terminal itself says each child's agent does, for the parent's live view. */
  agentStatuses?(env: TerminalEnv): AgentStatusesOf;
  /** Optional: what tells the terminal about the Pi in this pane; undefined when nothing should. */
  paneStateReporter?(env: TerminalEnv, input: { tui: boolean; agentDir: string }): PaneStateReporter | undefined;
}

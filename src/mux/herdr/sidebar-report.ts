/**
 * In a Herdr pane: a Pi's published state (src/child/child-state.ts), told to Herdr's sidebar the way Herdr's
 * own Pi integration tells it (src/integration/assets/pi/herdr-agent-state.ts in Herdr 0.8.2): the
 * session it started on, then `working`, `blocked` or `idle` on each change. Used only where that
 * integration is not installed (it reports under the same source; two reporters would drop each
 * other's reports by their sequence numbers).
 *
 * Invariants:
 * - Only changes are sent, in Herdr's three words (`starting`, `moved` and `exited` say nothing:
 *   Herdr sees a process exit itself); one call in flight, only the latest state waiting behind it.
 * - Sequence numbers grow strictly and with the clock (`Date.now() * 1000`, as the integration's),
 *   so a later report is never dropped as older than an earlier one.
 * - Silent: the sidebar is a courtesy to Herdr's user; nothing here throws or waits for Herdr.
 */
import type { PublishedState } from "../../manifest/published-states.ts";
import { readWaits } from "../../config/waits.ts";
import type { PaneStateReporter } from "../terminal.ts";
import { HerdrMultiplexer, type HerdrAgentState } from "./herdr.ts";

/** What a Herdr pane takes (mux/herdr.ts `reportAgentSessionStart`, `reportAgentState`). */
export interface SidebarPort {
  reportSessionStart(report: { seq: number; sessionFile: string; startSource?: string }): Promise<unknown>;
  reportState(report: { state: HerdrAgentState; seq: number; sessionFile?: string }): Promise<unknown>;
}

/** Herdr's word for a published state; undefined: nothing to tell. */
export function sidebarState(state: PublishedState): HerdrAgentState | undefined {
  switch (state) {
    case "working":
    case "compacting":
      return "working";
    case "waiting_input":
      return "blocked";
    case "idle":
      return "idle";
    case "starting":
    case "moved":
    case "exited":
      return undefined;
  }
}

/** Why a session started, as Herdr takes it (`reload` it does not know: sent without one). */
const HERDR_START_SOURCES = new Set(["startup", "new", "resume", "fork"]);

export class SidebarReporter {
  readonly #port: SidebarPort;
  readonly #clock: () => number;
  #seq = 0;
  #sessionFile: string | undefined;
  #last: HerdrAgentState | undefined;
  #queue: (() => Promise<unknown>)[] = [];
  #pendingState: (() => Promise<unknown>) | undefined;
  #sending: Promise<void> | undefined;

  constructor(port: SidebarPort, clock: () => number = Date.now) {
    this.#port = port;
    this.#clock = clock;
  }

  /** A new session in this pane: reported first, and the next state is sent whatever the last one was. */
  sessionStarted(sessionFile: string | undefined, reason: string): void {
    this.#sessionFile = sessionFile;
    this.#last = undefined;
    this.#pendingState = undefined;
    if (sessionFile === undefined) return;
    const seq = this.#nextSeq();
    this.#queue.push(() =>
      this.#port.reportSessionStart({
        seq,
        sessionFile,
        ...(HERDR_START_SOURCES.has(reason) ? { startSource: reason } : {}),
      }),
    );
    this.#kick();
  }

  published(state: PublishedState): void {
    const word = sidebarState(state);
    if (word === undefined || word === this.#last) return;
    this.#last = word;
    const seq = this.#nextSeq();
    const sessionFile = this.#sessionFile;
    this.#pendingState = () =>
      this.#port.reportState({ state: word, seq, ...(sessionFile === undefined ? {} : { sessionFile }) });
    this.#kick();
  }

  /** Resolves once everything asked so far was sent (tests). */
  async flush(): Promise<void> {
    while (this.#sending !== undefined) await this.#sending;
  }

  #nextSeq(): number {
    this.#seq = Math.max(this.#seq + 1, this.#clock() * 1000);
    return this.#seq;
  }

  #kick(): void {
    this.#sending ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        const next = this.#queue.shift() ?? this.#pendingState;
        if (next === undefined) return;
        if (next === this.#pendingState) this.#pendingState = undefined;
        await next().catch(() => undefined);
      }
    } finally {
      this.#sending = undefined;
    }
  }
}

/**
 * Whether and how this Pi tells Herdr's sidebar what it does: `report` in a Herdr pane of a TUI Pi
 * (Herdr's own integration reports only in the TUI too) without Herdr's own Pi integration;
 * `integration` where that integration runs, which takes prompts through its `herdr:blocked` event;
 * `none` outside Herdr.
 */
export type SidebarMode = "report" | "integration" | "none";

export function sidebarMode(
  env: Readonly<Record<string, string | undefined>>,
  input: { tui: boolean; integrationInstalled: boolean },
): SidebarMode {
  const inHerdrPane = env.HERDR_ENV === "1" && (env.HERDR_PANE_ID ?? "") !== "" && (env.HERDR_SOCKET_PATH ?? "") !== "";
  if (!inHerdrPane || !input.tui) return "none";
  return input.integrationInstalled ? "integration" : "report";
}

/** Herdr's Pi integration listens for prompts on this channel (`{active, label}`). */
const HERDR_BLOCKED_CHANNEL = "herdr:blocked";

/**
 * What tells Herdr about this Pi (the registry's `paneStateReporter`): the sidebar reports where
 * Herdr's own Pi integration is not installed, that integration's prompt channel where it is,
 * nothing outside a Herdr pane or outside the TUI.
 */
export function herdrPaneStateReporter(
  env: Readonly<Record<string, string | undefined>>,
  input: { tui: boolean; integrationInstalled: boolean },
): PaneStateReporter | undefined {
  const mode = sidebarMode(env, input);
  if (mode === "none") return undefined;
  if (mode === "integration") {
    return {
      sessionStarted: () => {},
      published: () => {},
      prompts: {
        channel: HERDR_BLOCKED_CHANNEL,
        started: (label) => ({ active: true, label }),
        ended: () => ({ active: false }),
      },
    };
  }
  const paneId = env.HERDR_PANE_ID ?? "";
  let muxCallMs: number;
  try {
    ({ muxCallMs } = readWaits(env, ["muxCallMs"]));
  } catch {
    // An unusable PI_HANDOFF_MUX_TIMEOUT_MS is the handoff's to refuse; the sidebar stays quiet.
    return undefined;
  }
  const herdr = HerdrMultiplexer.fromEnvironment(env, { timeoutMs: muxCallMs });
  const reporter = new SidebarReporter({
    reportSessionStart: (report) => herdr.reportAgentSessionStart(paneId, report),
    reportState: (report) => herdr.reportAgentState(paneId, report),
  });
  return {
    sessionStarted: (sessionFile, reason) => reporter.sessionStarted(sessionFile, reason),
    published: (state) => reporter.published(state),
  };
}

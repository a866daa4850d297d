/**
 * In every Pi running this extension: what it is doing, on Pi's own events, published for the
 * parent that watches it when this Pi is a handoff's child (src/child/child-state.ts decides, from
 * the marker this process was started with and the handoff its session names), and told to the terminal it runs in where that
 * terminal listens (Herdr's sidebar, or Herdr's own Pi integration: src/mux/herdr/sidebar-report.ts,
 * through the registry). Decides nothing: the state is the reducer's, what the terminal hears its
 * descriptor's.
 *
 * Invariants:
 * - Every event handler only hands the event on; nothing here waits for a write.
 * - The session's state is begun before its lease is taken (the lease's holding starts the writes)
 *   and declared ready once the session start (acknowledgement, kickoff) is done.
 * - The terminal's reporter comes from the registry, which loads every terminal's backend: it is
 *   loaded beside the session's start, not on its way (every Pi starts without waiting for it).
 *   What the terminal missed meanwhile it is told once it is there: the latest session, the
 *   current state, a dialog still open.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { findHandoffDetails } from "../src/child/acknowledge.ts";
import { takeStartedMarker, type ActivityEvent, type ChildStatePublisher } from "../src/child/child-state.ts";
import type { PaneStateReporter } from "../src/mux/registry.ts";

export class ChildStateWiring {
  readonly #publisher: ChildStatePublisher;
  readonly #agentDir: string;
  #terminal: PaneStateReporter | undefined;
  /** The reporter being loaded (once per process), or loaded. */
  #loading: Promise<void> | undefined;
  /** What the terminal is told about first once its reporter is there. */
  #session: { file: string | undefined; reason: string } | undefined;
  #openPrompt: string | undefined;
  #pi: ExtensionAPI | undefined;
  /** Whether this process was started for a handoff (taken when Pi loads the extension, before it runs anything). */
  readonly #startedForHandoff: boolean;

  constructor(publisher: ChildStatePublisher, agentDir: string) {
    this.#publisher = publisher;
    this.#agentDir = agentDir;
    this.#startedForHandoff = takeStartedMarker() !== undefined;
  }

  /** Before the lease is taken: this session's state begins (`starting`). */
  begin(ctx: ExtensionContext, reason: string): void {
    const sessionFile = ctx.sessionManager.getSessionFile();
    this.#publisher.begin(
      sessionFile,
      findHandoffDetails(ctx.sessionManager.getBranch())?.handoffId,
      this.#startedForHandoff,
    );
    this.#session = { file: sessionFile, reason };
    this.#terminal?.sessionStarted(sessionFile, reason);
    // One reporter for the process: its sequence numbers must keep growing across sessions.
    this.#loading ??= this.#loadTerminal(ctx.mode === "tui");
  }

  /** Waits for the terminal's reporter (tests; nothing else needs to). */
  async terminalLoaded(): Promise<void> {
    await this.#loading;
  }

  async #loadTerminal(tui: boolean): Promise<void> {
    try {
      const { paneStateReporter } = await import("../src/mux/registry.ts");
      this.#terminal = paneStateReporter(process.env, { tui, agentDir: this.#agentDir });
    } catch {
      return; // Nothing to tell a terminal this Pi cannot load the registry for.
    }
    const terminal = this.#terminal;
    if (terminal === undefined) return;
    if (this.#session !== undefined) terminal.sessionStarted(this.#session.file, this.#session.reason);
    const state = this.#publisher.current?.state;
    if (state !== undefined) terminal.published(state);
    if (this.#openPrompt !== undefined && terminal.prompts !== undefined)
      this.#pi?.events.emit(terminal.prompts.channel, terminal.prompts.started(this.#openPrompt));
  }

  /** The session start is done: idle, or working when a run is under way already (a reload mid-run). */
  ready(ctx: ExtensionContext): void {
    if (!ctx.isIdle()) this.#apply({ type: "agent_start" });
    this.#apply({ type: "ready" });
  }

  #apply(event: ActivityEvent): void {
    this.#publisher.apply(event);
    const state = this.#publisher.current?.state;
    if (state !== undefined) this.#terminal?.published(state);
  }

  register(pi: ExtensionAPI): void {
    this.#pi = pi;
    const apply = (event: ActivityEvent): void => this.#apply(event);
    pi.on("agent_start", async () => apply({ type: "agent_start" }));
    pi.on("agent_settled", async () => apply({ type: "agent_settled" }));
    pi.on("tool_execution_start", async (event) =>
      apply({ type: "tool_start", id: event.toolCallId, name: event.toolName }),
    );
    pi.on("tool_execution_end", async (event) => apply({ type: "tool_end", id: event.toolCallId }));
    pi.on("ui_prompt_start", async (event) => {
      apply({ type: "prompt_start", kind: event.kind });
      this.#openPrompt = event.title ?? "waiting for input";
      const prompts = this.#terminal?.prompts;
      if (prompts !== undefined) pi.events.emit(prompts.channel, prompts.started(this.#openPrompt));
    });
    pi.on("ui_prompt_end", async () => {
      apply({ type: "prompt_end" });
      this.#openPrompt = undefined;
      const prompts = this.#terminal?.prompts;
      if (prompts !== undefined) pi.events.emit(prompts.channel, prompts.ended());
    });
    pi.on("session_before_compact", async () => apply({ type: "compact_start" }));
    pi.on("session_compact", async () => apply({ type: "compact_end" }));
    pi.on("session_compact_failed", async () => apply({ type: "compact_end" }));
  }

  /** Going on with another session (/new, /resume, /fork): said on this one, written before its lease goes. */
  async moved(targetSessionFile: string | undefined): Promise<void> {
    if (targetSessionFile !== undefined) this.#apply({ type: "moved", to: targetSessionFile });
    await this.#publisher.flush();
  }
}

/**
 * In every Pi running this extension: what it is doing, published for the parent that watches it
 * (src/launch/child-state.ts) on Pi's own events, and told to the terminal it runs in where that
 * terminal listens (Herdr's sidebar, or Herdr's own Pi integration: src/mux/herdr/sidebar-report.ts,
 * through the registry). Decides nothing: the state is the reducer's, what the terminal hears its
 * descriptor's.
 *
 * Invariants:
 * - Every event handler only hands the event on; nothing here waits for a write.
 * - The session's state is begun before its lease is taken (the lease's holding starts the writes)
 *   and declared ready once the session start (acknowledgement, kickoff) is done.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { findHandoffDetails } from "../src/launch/acknowledge.ts";
import type { ActivityEvent, ChildStatePublisher } from "../src/launch/child-state.ts";
import { paneStateReporter, type PaneStateReporter } from "../src/mux/registry.ts";

export class ChildStateWiring {
  readonly #publisher: ChildStatePublisher;
  readonly #agentDir: string;
  #terminal: PaneStateReporter | undefined;
  #asked = false;

  constructor(publisher: ChildStatePublisher, agentDir: string) {
    this.#publisher = publisher;
    this.#agentDir = agentDir;
  }

  /** Before the lease is taken: this session's state begins (`starting`). */
  begin(ctx: ExtensionContext, reason: string): void {
    const sessionFile = ctx.sessionManager.getSessionFile();
    this.#publisher.begin(sessionFile, findHandoffDetails(ctx.sessionManager.getBranch())?.handoffId);
    // One reporter for the process: its sequence numbers must keep growing across sessions.
    if (!this.#asked) {
      this.#asked = true;
      this.#terminal = paneStateReporter(process.env, { tui: ctx.mode === "tui", agentDir: this.#agentDir });
    }
    this.#terminal?.sessionStarted(sessionFile, reason);
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
    const apply = (event: ActivityEvent): void => this.#apply(event);
    pi.on("agent_start", async () => apply({ type: "agent_start" }));
    pi.on("agent_settled", async () => apply({ type: "agent_settled" }));
    pi.on("tool_execution_start", async (event) =>
      apply({ type: "tool_start", id: event.toolCallId, name: event.toolName }),
    );
    pi.on("tool_execution_end", async (event) => apply({ type: "tool_end", id: event.toolCallId }));
    pi.on("ui_prompt_start", async (event) => {
      apply({ type: "prompt_start", kind: event.kind });
      const prompts = this.#terminal?.prompts;
      if (prompts !== undefined) pi.events.emit(prompts.channel, prompts.started(event.title ?? "waiting for input"));
    });
    pi.on("ui_prompt_end", async () => {
      apply({ type: "prompt_end" });
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

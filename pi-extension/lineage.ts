/**
 * Lineage adoption in every Pi session, wired to Pi: a session whose header names a parent picks
 * up the background work its ancestors started (pi-subagents runs, pi-workflows runs, the handoff
 * chain), says so in one resume message, then in one message per adopted run that finishes later.
 *
 * Invariants:
 * - Decides nothing: when to scan, what to deliver and when, and what to watch are
 *   src/adoption/session.ts's (`LineageSession`, over src/adoption/delivery.ts's rules, shared with
 *   handoff reports); this file hands it Pi's events and state (`piLineageHost`), renders the
 *   lineage messages and registers the `adopted_runs` tool.
 * - Pi's start is not held up: `session_start` reads the in-memory session and, only when it has a
 *   lineage, loads what adoption runs on (`loadAdoption`, after the acknowledgement's handler) and
 *   starts a `LineageSession`, which schedules its scan.
 * - Messages never trigger a turn (`triggerTurn: false`, default delivery): the work was started
 *   by another conversation, possibly for a purpose this worktree no longer has, so acting on it
 *   is the user's call. Sent while idle, Pi appends the message at once; the model reads it with
 *   the next prompt, and the user sees it in the transcript right away.
 * - One session at a time: the one of the last `session_start`, stopped at the next one and at
 *   `session_shutdown`; its host reads the latest context Pi gave it.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Box, Text } from "@earendil-works/pi-tui";
import { Type } from "typebox";
import { pollIntervalMs } from "../src/config/waits.ts";
import type { DeliveryHost } from "../src/adoption/delivery.ts";
import {
  ADOPTED_RUNS_TOOL,
  LINEAGE_MESSAGE_TYPE,
  LineageMessageDetailsSchema,
  summarizeDetails,
} from "../src/adoption/messages.ts";
import { hasLineage, kickoffExpected } from "../src/adoption/branch-facts.ts";
import type { LineageHost, LineageSession } from "../src/adoption/session.ts";
import type { LineageEntryView, LineageSource } from "../src/adoption/types.ts";
import type { AdoptedRunsState } from "../src/adoption/adopted-runs.ts";
import { loadOnce, OrderedStart } from "./load-once.ts";
import { compactLineageText, type Styler } from "./renderers.ts";

/**
 * The adoption itself (the session, its scan and sources, the tool's answers) loads with the first
 * session that has a lineage, after this Pi's own start (its acknowledgement included) is done:
 * most sessions have none. Every handler of a session with one waits for it first, so events keep
 * their order.
 */
const loadAdoption = loadOnce(async () => {
  const [session, scan, adoptedRuns] = await Promise.all([
    import("../src/adoption/session.ts"),
    import("../src/adoption/scan.ts"),
    import("../src/adoption/adopted-runs.ts"),
  ]);
  return {
    LineageSession: session.LineageSession,
    defaultSources: scan.defaultSources,
    answerAdoptedRuns: adoptedRuns.answerAdoptedRuns,
  };
});

export interface LineageOptions {
  sources?: LineageSource[];
  pollMs?: number;
}

/** The delivery port over Pi: the extension API sends and appends, the latest context says whether Pi is idle. */
export function piDeliveryHost(pi: ExtensionAPI, context: () => ExtensionContext): DeliveryHost {
  return {
    send: (message, options) => pi.sendMessage(message, options),
    appendEntry: (customType, data) => pi.appendEntry(customType, data),
    isIdle: () => context().isIdle(),
  };
}

/** The lineage port over Pi: delivery as above, and the session as the latest context's manager holds it. */
function piLineageHost(pi: ExtensionAPI, context: () => ExtensionContext): LineageHost {
  return {
    ...piDeliveryHost(pi, context),
    entries: () => context().sessionManager.getEntries() as LineageEntryView[],
    branch: () => context().sessionManager.getBranch() as LineageEntryView[],
    identity: () => {
      const manager = context().sessionManager;
      const header = manager.getHeader();
      return {
        sessionFile: manager.getSessionFile(),
        sessionId: manager.getSessionId(),
        parentSession: header?.parentSession,
        timestamp: header?.timestamp,
        cwd: header?.cwd,
      };
    },
  };
}

/** Whether a handoff child's kickoff turn is still to come (it starts during session_start). */
export function expectsKickoff(ctx: ExtensionContext): boolean {
  return kickoffExpected(ctx.sessionManager.getBranch());
}

/** The `adopted_runs` tool; its answers are src/adoption/adopted-runs.ts's, from the session's state. */
function registerAdoptedRunsTool(pi: ExtensionAPI, state: () => Promise<AdoptedRunsState>): void {
  pi.registerTool({
    name: ADOPTED_RUNS_TOOL,
    label: "Adopted runs",
    description:
      "List or inspect the background work this session adopted from the sessions it continues (pi-subagents runs, pi-workflows runs, earlier handoffs): state, progress, and where the status, result and output files are. action=list shows all; action=inspect with runId shows one run in full, with the end of its output log.",
    promptSnippet: "List or inspect background runs adopted from earlier sessions",
    parameters: Type.Object({
      action: Type.String({
        enum: ["list", "inspect"],
        description: "list: every adopted run; inspect: one run in full",
      }),
      runId: Type.Optional(Type.String({ description: "For inspect: the run id (or a unique prefix)" })),
    }),
    async execute(_toolCallId, params) {
      const { answerAdoptedRuns } = await loadAdoption();
      const answer = await answerAdoptedRuns(params, await state());
      return {
        content: [{ type: "text", text: answer.text }],
        details: { runs: answer.runs },
        ...(answer.isError === true ? { isError: true } : {}),
      };
    },
  });
}

export function registerLineage(pi: ExtensionAPI, options: LineageOptions = {}): void {
  /** The current session's adoption, and the latest context Pi gave for it (its host reads that one). */
  let active: { session: LineageSession; setContext: (ctx: ExtensionContext) => void } | undefined;
  /** The current session continues no other: there is nothing to adopt (distinct from "not scanned yet"). */
  let withoutLineage = false;

  pi.registerMessageRenderer(LINEAGE_MESSAGE_TYPE, (message, options, theme) => {
    const parsed = LineageMessageDetailsSchema.safeParse(message.details);
    const details = parsed.success ? parsed.data : undefined;
    const content = typeof message.content === "string" ? message.content : "";
    const style: Styler = {
      title: (t) => theme.fg("accent", t),
      strong: (t) => theme.bold(t),
      dim: (t) => theme.fg("dim", t),
    };
    // Collapsed: the summary and the first runs by name; expanded: the summary, then the full text the model reads.
    const text = options.expanded
      ? `${theme.fg("accent", `⟲ ${details === undefined ? "Adopted background work" : summarizeDetails(details)}`)}\n\n${content}`
      : compactLineageText(details, options.keyHint("app.tools.expand", "to expand"), style);
    const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(text, 0, 0));
    return box;
  });

  const lineageState = async (): Promise<AdoptedRunsState> => {
    const current = active?.session;
    if (withoutLineage) return { code: "without_lineage" };
    if (current === undefined || !current.hasScanned) return { code: "not_scanned" };
    return { code: "scanned", runs: await current.refreshAll(), notes: current.scanNotes() };
  };
  const registerTool = (): void => registerAdoptedRunsTool(pi, lineageState);

  // Registered with the first session that has a lineage: a session without one has nothing to
  // adopt, and its model need not carry the tool's description in every request.
  let toolRegistered = false;

  /** The current session's adoption while it loads: later events wait for it. */
  const starts = new OrderedStart();

  const startAdoption = async (ctx: ExtensionContext, current: () => boolean): Promise<void> => {
    const { LineageSession, defaultSources } = await loadAdoption();
    if (!current()) return;
    let latest = ctx;
    const session = new LineageSession(
      piLineageHost(pi, () => latest),
      {
        sources: options.sources ?? defaultSources(),
        pollMs: options.pollMs ?? pollIntervalMs(process.env, "PI_HANDOFF_LINEAGE_POLL_MS"),
      },
    );
    active = {
      session,
      setContext: (next) => {
        latest = next;
      },
    };
    session.start();
  };

  pi.on("session_start", async (_event, ctx) => {
    starts.end();
    active?.session.stop();
    active = undefined;
    withoutLineage = !hasLineage(ctx.sessionManager.getHeader()?.parentSession, ctx.sessionManager.getBranch());
    if (withoutLineage) return;
    if (!toolRegistered) {
      registerTool();
      toolRegistered = true;
    }
    await starts.begin((current) => startAdoption(ctx, current));
  });
  pi.on("agent_start", async () => {
    await starts.settled();
    active?.session.onAgentStart();
  });
  pi.on("agent_settled", async (_event, ctx) => {
    await starts.settled();
    active?.setContext(ctx);
    active?.session.onSettled();
  });
  pi.on("session_compact", async (_event, ctx) => {
    await starts.settled();
    active?.setContext(ctx);
    active?.session.onCompact();
  });
  pi.on("session_shutdown", async () => {
    starts.end();
    active?.session.stop();
    active = undefined;
  });
}

/**
 * The Pi adapter: wires this package's commands, renderers and event handlers into Pi. Each
 * concern lives in its own file here; decisions live in `src/`.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { onSessionStart } from "./child-startup.ts";
import { ChildStateWiring } from "./child-state.ts";
import { ChildStatePublisher } from "../src/child/child-state.ts";
import { leaseEventLevel, SessionLeaseKeeper } from "../src/child/session-writer.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { registerHandoffReport } from "./handoff-report.ts";
import { loadOnce } from "./load-once.ts";
import { registerChildNotes } from "./child-notes.ts";
import { registerLineage } from "./lineage.ts";
import { registerParentWatch } from "./parent-watch.ts";
import { registerRenderers } from "./renderers.ts";
import { registerRestoreOffer } from "./restore-offer.ts";
import { noteCommandStarted, report } from "./report.ts";
import { errorMessage } from "../src/errors.ts";
import type { NoticeLevel } from "../src/text.ts";

/**
 * The commands' modules are most of the package: they load when a command first runs or
 * completes, or a moment after an interactive Pi started (so the first handoff does not wait for
 * them), never on the way to Pi's first screen or a child's acknowledgement.
 */
const WARM_COMMANDS_MS = 1_500;
// A load that failed is tried again the next time (the error shows where the command ran).
const loadHandoffCommand = loadOnce(() => import("./handoff-command.ts"));
const loadHandoffsCommand = loadOnce(() => import("./handoffs-command.ts"));

export default function handoffWorktreeExtension(pi: ExtensionAPI): void {
  registerRenderers(pi);
  // Completion gets no context: the repository is the one of the session's cwd, known once it starts.
  let sessionCwd = process.cwd();
  // Every Pi running this extension leases its own session (src/child/lease.ts); the latest
  // context is where a later lease event (lost, taken over) is shown.
  let latestCtx: ExtensionContext | undefined;
  const agentDir = agentDirFromEnv(process.env);
  const say = (message: string, level: NoticeLevel) => {
    if (latestCtx !== undefined) report(latestCtx, `handoff-worktree: ${message}`, level);
  };
  // What this Pi is doing, published beside its lease for a parent that watches it; written only
  // while this Pi holds the lease (src/child/child-state.ts).
  const publisher = new ChildStatePublisher({ agentDir, onError: (message) => say(message, "warning") });
  const childState = new ChildStateWiring(publisher, agentDir);
  const leases = new SessionLeaseKeeper({
    agentDir,
    onEvent: (event) => say(event.message, leaseEventLevel(event)),
    onHoldingChange: (holding) => publisher.setHolding(holding),
    onExit: (code) => publisher.exitSync(code),
  });
  childState.register(pi);

  pi.registerCommand("handoff-worktree", {
    description: "Hand this conversation off to a new git worktree with its own Pi (see --help)",
    getArgumentCompletions: async (prefix) => (await loadHandoffCommand()).handoffCompletions(prefix, sessionCwd),
    handler: async (args, ctx) => {
      noteCommandStarted();
      return (await loadHandoffCommand()).runHandoff(pi, args, ctx);
    },
  });

  pi.registerCommand("handoffs", {
    description:
      "List your handoffs; relaunch, switch to, inspect, land or remove one (/handoffs <command> <handoff> as with pi-handoff)",
    getArgumentCompletions: async (prefix) => (await loadHandoffsCommand()).handoffsCompletions(prefix),
    handler: async (args, ctx) => {
      noteCommandStarted();
      return (await loadHandoffsCommand()).runHandoffs(args, ctx);
    },
  });

  pi.on("session_start", async (event, ctx) => {
    sessionCwd = ctx.cwd;
    latestCtx = ctx;
    childState.begin(ctx, event.reason);
    try {
      await onSessionStart(pi, ctx, leases);
    } catch (error) {
      // A failed acknowledgement must not stop Pi from starting; the parent falls back to its probe.
      report(ctx, `handoff-worktree: could not acknowledge the handoff: ${errorMessage(error)}`, "warning");
    }
    childState.ready(ctx);
    if (ctx.hasUI) {
      const warm = setTimeout(() => {
        loadHandoffCommand().catch(() => {});
        loadHandoffsCommand().catch(() => {});
      }, WARM_COMMANDS_MS);
      warm.unref();
    }
  });

  pi.on("session_shutdown", async (event) => {
    // Quitting: the lease stays until the process exits, so its last word (the exit code) is
    // written by the holder (the keeper's exit hook); any other reason hands the session on.
    if (event.reason === "quit") return;
    await childState.moved(event.targetSessionFile);
    await leases.release();
  });

  // After the session_start handler above: lineage delivery must see the kickoff turn it starts.
  registerLineage(pi);
  // The return trip: a child reports to its parent; the parent watches its children and hears back.
  registerHandoffReport(pi);
  registerParentWatch(pi);
  // And the way in: notes recovery leaves for a child (its base moved) reach its conversation once.
  registerChildNotes(pi);
  // After a reboot: one offer to bring back the handoffs whose Pi is gone (never an action).
  registerRestoreOffer(pi);
}

/**
 * The Pi adapter: wires this package's commands, renderers and event handlers into Pi. Each
 * concern lives in its own file here; decisions live in `src/`.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { onSessionStart } from "./child-startup.ts";
import { leaseEventLevel, SessionLeaseKeeper } from "../src/launch/session-writer.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { handoffCompletions, runHandoff } from "./handoff-command.ts";
import { handoffsCompletions, runHandoffs } from "./handoffs-command.ts";
import { registerHandoffReport } from "./handoff-report.ts";
import { registerLineage } from "./lineage.ts";
import { registerParentWatch } from "./parent-watch.ts";
import { registerRenderers } from "./renderers.ts";
import { report } from "./report.ts";
import { errorMessage } from "../src/errors.ts";

export default function handoffWorktreeExtension(pi: ExtensionAPI): void {
  registerRenderers(pi);
  // Completion gets no context: the repository is the one of the session's cwd, known once it starts.
  let sessionCwd = process.cwd();
  // Every Pi running this extension leases its own session (src/launch/lease.ts); the latest
  // context is where a later lease event (lost, taken over) is shown.
  let latestCtx: ExtensionContext | undefined;
  const leases = new SessionLeaseKeeper({
    agentDir: agentDirFromEnv(process.env),
    onEvent: (event) => {
      if (latestCtx !== undefined) report(latestCtx, `handoff-worktree: ${event.message}`, leaseEventLevel(event));
    },
  });

  pi.registerCommand("handoff-worktree", {
    description: "Hand this conversation off to a new git worktree with its own Pi (see --help)",
    getArgumentCompletions: (prefix) => handoffCompletions(prefix, sessionCwd),
    handler: (args, ctx) => runHandoff(pi, args, ctx),
  });

  pi.registerCommand("handoffs", {
    description: "List your handoffs; relaunch, switch to, inspect, land or remove one (/handoffs <command> <handoff> as with pi-handoff)",
    getArgumentCompletions: (prefix) => handoffsCompletions(prefix),
    handler: (args, ctx) => runHandoffs(args, ctx),
  });

  pi.on("session_start", async (_event, ctx) => {
    sessionCwd = ctx.cwd;
    latestCtx = ctx;
    try {
      await onSessionStart(pi, ctx, leases);
    } catch (error) {
      // A failed acknowledgement must not stop Pi from starting; the parent falls back to its probe.
      report(ctx, `handoff-worktree: could not acknowledge the handoff: ${errorMessage(error)}`, "warning");
    }
  });

  pi.on("session_shutdown", async () => {
    await leases.release();
  });

  // After the session_start handler above: lineage delivery must see the kickoff turn it starts.
  registerLineage(pi);
  // The return trip: a child reports to its parent; the parent watches its children and hears back.
  registerHandoffReport(pi);
  registerParentWatch(pi);
}

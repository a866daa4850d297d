/**
 * At session start: lease the session, and in a handoff child acknowledge the launch, then start
 * on the task if any. The decisions are in src/child/session-writer.ts.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { KICKOFF_MESSAGE_TYPE } from "../src/child/acknowledge.ts";
import { startOnSession, type SessionLeaseKeeper } from "../src/child/session-writer.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { report } from "./report.ts";

export async function onSessionStart(
  pi: ExtensionAPI,
  ctx: ExtensionContext,
  keeper: SessionLeaseKeeper,
): Promise<void> {
  const started = await startOnSession({
    keeper,
    store: ManifestStore.forAgentDir(agentDirFromEnv(process.env)),
    branch: ctx.sessionManager.getBranch(),
    sessionFile: ctx.sessionManager.getSessionFile(),
    pid: process.pid,
    now: () => new Date(),
  });
  if (started.warning !== undefined) report(ctx, `handoff-worktree: ${started.warning}`, "warning");
  if (started.kickoff !== undefined) {
    pi.sendMessage(
      {
        customType: KICKOFF_MESSAGE_TYPE,
        content: "Start on the task in the handoff message above, working in this worktree.",
        display: false,
        details: { handoffId: started.kickoff.handoffId },
      },
      { triggerTurn: true },
    );
  }
}

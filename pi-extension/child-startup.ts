/**
 * In a handoff child, at session start: acknowledge the launch, then start on the task if any.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { acknowledgeHandoff, findHandoffDetails, KICKOFF_MESSAGE_TYPE, kickoffSent } from "../src/launch/acknowledge.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";

/** In a handoff child: acknowledge the start, then start on the task if there is one. */
export async function onSessionStart(pi: ExtensionAPI, ctx: ExtensionContext): Promise<void> {
  const branch = ctx.sessionManager.getBranch();
  const details = findHandoffDetails(branch);
  if (details === undefined) return;
  const store = ManifestStore.forAgentDir(agentDirFromEnv(process.env));
  const outcome = await acknowledgeHandoff({
    store,
    details,
    sessionFile: ctx.sessionManager.getSessionFile(),
    pid: process.pid,
    now: () => new Date(),
  });
  if (outcome.code !== "acknowledged") return;
  if (details.hasTask && !kickoffSent(branch)) {
    pi.sendMessage(
      {
        customType: KICKOFF_MESSAGE_TYPE,
        content: "Start on the task in the handoff message above, working in this worktree.",
        display: false,
        details: { handoffId: details.handoffId },
      },
      { triggerTurn: true },
    );
  }
}

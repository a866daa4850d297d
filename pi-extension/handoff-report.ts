/**
 * In a handoff child: the `handoff_report` tool and the `/handoff-report [text]` command, which
 * send a short report to the parent session. The writing is src/adoption/reports.ts's; the parent's
 * own Pi delivers it (parent-watch.ts). This file only asks and answers; what sends loads with the
 * first report, not with Pi.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { findHandoffDetails } from "../src/child/acknowledge.ts";
import type { SendReportOutcome } from "../src/adoption/reports.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { loadOnce } from "./load-once.ts";
import { noteCommandStarted, report } from "./report.ts";
import { gitCallMs } from "../src/config/waits.ts";

export const REPORT_TOOL = "handoff_report";
const GIT_TIMEOUT_MS = 15_000;

const loadSender = loadOnce(async () => {
  const [git, reports, childReports] = await Promise.all([
    import("../src/git/git.ts"),
    import("../src/adoption/reports.ts"),
    import("../src/manifest/child-reports.ts"),
  ]);
  return {
    GitCli: git.GitCli,
    sendChildReport: reports.sendChildReport,
    ChildReportStore: childReports.ChildReportStore,
  };
});

async function send(
  ctx: ExtensionContext,
  input: { text: string; done?: string; left?: string },
): Promise<SendReportOutcome> {
  const details = findHandoffDetails(ctx.sessionManager.getBranch());
  if (details === undefined) {
    return {
      ok: false,
      code: "no_handoff",
      message: "This session is not a handoff child (it has no handoff message), so it has no parent to report to.",
    };
  }
  const agentDir = agentDirFromEnv(process.env);
  const { GitCli, sendChildReport, ChildReportStore } = await loadSender();
  return sendChildReport(
    {
      store: ManifestStore.forAgentDir(agentDir),
      reports: ChildReportStore.forAgentDir(agentDir),
      git: new GitCli({ env: process.env, timeoutMs: gitCallMs(process.env, GIT_TIMEOUT_MS) }),
      now: () => new Date(),
    },
    { handoffId: details.handoffId, ...input },
  );
}

export function registerHandoffReport(pi: ExtensionAPI): void {
  // The tool only in a handoff child: other sessions' models need not carry its description.
  let toolRegistered = false;
  pi.on("session_start", async (_event, ctx) => {
    if (toolRegistered || findHandoffDetails(ctx.sessionManager.getBranch()) === undefined) return;
    toolRegistered = true;
    registerTool(pi);
  });

  pi.registerCommand("handoff-report", {
    description: "Send a short report to the parent session of this handoff (the branch's commits are added)",
    handler: async (args, ctx) => {
      noteCommandStarted();
      let text = args.trim();
      if (text.length === 0 && ctx.hasUI)
        text = ((await ctx.ui.input("Report to the parent session", "what was done, what is left")) ?? "").trim();
      if (text.length === 0)
        return report(
          ctx,
          "Nothing was sent: give the report's text (/handoff-report <what was done, what is left>).",
          "error",
        );
      const outcome = await send(ctx, { text });
      report(ctx, outcome.message, outcome.ok ? "info" : "error");
    },
  });
}

function registerTool(pi: ExtensionAPI): void {
  pi.registerTool({
    name: REPORT_TOOL,
    label: "Report to the parent",
    description:
      "In a handoff child only: send a short report to the parent session that handed this work off (what was done, what is left); the branch's commits are added. The parent's Pi shows it once, at its next idle point. Use when the task is done or needs the parent's decision.",
    promptSnippet: "Report back to the session that handed this work off",
    parameters: Type.Object({
      done: Type.String({ description: "What was done, briefly" }),
      left: Type.Optional(Type.String({ description: "What is left or needs a decision" })),
    }),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const outcome = await send(ctx, {
        text: params.done,
        ...(params.left === undefined ? {} : { left: params.left }),
      });
      return {
        content: [{ type: "text", text: outcome.message }],
        details: outcome.ok ? { reportId: outcome.report.id } : { error: outcome.code },
        ...(outcome.ok ? {} : { isError: true }),
      };
    },
  });
}

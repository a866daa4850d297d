/**
 * `/handoff-worktree`: reads the host's state (and the settings files) into a plain request and
 * runs the transaction; completes its arguments; asks for a branch in the TUI when none was typed.
 */
import { unsupportedPlatform } from "../src/process/platform.ts";
import {
  CURRENT_SESSION_VERSION,
  getPackageDir,
  SessionManager,
  type ExtensionAPI,
  type ExtensionCommandContext,
} from "@earendil-works/pi-coding-agent";
import { HANDOFF_PROGRESS_CHANNEL } from "./progress-channel.ts";
import { settingsForHandoff } from "../src/config/post-create-approval.ts";
import { completeInRepository, type CompletionItem } from "../src/handoff/completions.ts";
import { HANDOFF_HELP, parseHandoffArgs } from "../src/handoff/args.ts";
import { currentPiCommand, mirroredPiFlags } from "../src/child/launch-command.ts";
import { launchNoticeLevel } from "../src/child/launcher.ts";
import { nextSteps } from "../src/handoff/next-steps.ts";
import { recoveryCommand } from "../src/child/pi-command.ts";
import { cancelledText } from "../src/handoff/notice.ts";
import { createHandoffDeps } from "../src/handoff/deps.ts";
import { HandoffTransaction, type HandoffOutcome, type HandoffRequest } from "../src/handoff/transaction.ts";
import type { HandoffConfig } from "../src/config/schema.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { report, reportOutcome } from "./report.ts";
import { errorClause } from "../src/errors.ts";
import { isFile } from "../src/fs/probe.ts";

const STATUS_KEY = "handoff-worktree";

/** Suggestions for the arguments typed so far, from the repository at `cwd`. */
export function handoffCompletions(
  prefix: string,
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CompletionItem[] | null> {
  return completeInRepository(prefix, cwd, env);
}

/**
 * In the TUI, `/handoff-worktree` alone asks for the branch (the first answer may hold a base and
 * flags too, as typed after the command) and then for an optional task. `cancelled`: what was
 * answered before Escape, for the notice.
 */
async function askForArgs(
  ctx: ExtensionCommandContext,
): Promise<{ line: string } | { cancelled: { branch?: string } }> {
  const head = (
    await ctx.ui.input(
      "Hand off to which new branch? (a base and flags may follow, as after the command)",
      "feat/my-change",
    )
  )?.trim();
  if (head === undefined || head === "") return { cancelled: {} };
  if (/(^|\s)--(\s|$)/.test(head)) return { line: head };
  const task = await ctx.ui.input("What should the new Pi start on? (optional: leave empty and it waits for you)", "");
  if (task === undefined) {
    const parsed = parseHandoffArgs(head);
    return { cancelled: { branch: parsed.ok && "args" in parsed ? parsed.args.branch : head } };
  }
  return { line: task.trim() === "" ? head : `${head} -- ${task.trim()}` };
}

export async function runHandoff(pi: ExtensionAPI, args: string, ctx: ExtensionCommandContext): Promise<void> {
  const refusal = unsupportedPlatform();
  if (refusal !== undefined) return reportOutcome(ctx, refusal, "error");
  let line = args;
  // Print mode keeps its one-sentence refusal: there is nobody to ask.
  if (line.trim() === "" && ctx.hasUI) {
    const asked = await askForArgs(ctx);
    if ("cancelled" in asked) return reportOutcome(ctx, cancelledText(asked.cancelled), "info");
    line = asked.line;
  }
  const parsed = parseHandoffArgs(line);
  if (!parsed.ok) return reportOutcome(ctx, parsed.message, "error");
  if ("help" in parsed) return reportOutcome(ctx, HANDOFF_HELP, "info");

  const env = process.env;
  const agentDir = agentDirFromEnv(env);
  const config = await readSettings(ctx, agentDir, parsed.args.approveRepoCode === true);
  if (config === undefined) return;

  if (!ctx.isIdle()) {
    ctx.ui.setStatus(STATUS_KEY, "handoff: waiting for the agent to finish");
    await ctx.waitForIdle();
  }
  const { deps, dispose } = createHandoffDeps({
    env,
    agentDir,
    session: { SessionManager, CURRENT_SESSION_VERSION },
    piPackageDir: getPackageDir(),
    status: (text) => {
      ctx.ui.setStatus(STATUS_KEY, text);
      // This session's widget shows the new handoff from its manifest on (parent-watch.ts).
      pi.events.emit(HANDOFF_PROGRESS_CHANNEL, undefined);
    },
  });
  const transaction = new HandoffTransaction(deps);
  let outcome: HandoffOutcome;
  try {
    outcome = await transaction.run(await hostRequest(pi, ctx, { args: parsed.args, agentDir, env, config }));
  } catch (error) {
    // An unexpected failure (a lock that cannot be had, a store that cannot be written) must still
    // reach the user as one sentence, with where to look: nothing is deleted, the manifest says what exists.
    return reportOutcome(
      ctx,
      `The handoff stopped on an unexpected error: ${errorClause(error)}; whatever it created is kept, and ${recoveryCommand(env)} list (or /handoffs) shows it.`,
      "error",
    );
  } finally {
    // The fork worker is unused when the handoff was refused before the fork.
    dispose();
    ctx.ui.setStatus(STATUS_KEY, undefined);
  }
  reportOutcome(
    ctx,
    [outcome.message, ...nextSteps(outcome, { env, cli: recoveryCommand(env) })].join("\n"),
    launchNoticeLevel(outcome.code),
  );
}

/** The settings, approvals included (src/config/post-create-approval.ts); undefined: refused, and the user was told why. */
async function readSettings(
  ctx: ExtensionCommandContext,
  agentDir: string,
  approvedByFlag: boolean,
): Promise<HandoffConfig | undefined> {
  const settings = await settingsForHandoff({
    cwd: ctx.cwd,
    agentDir,
    projectTrusted: ctx.isProjectTrusted(),
    approvedByFlag,
    prompt: { hasUI: ctx.hasUI, choose: (title, options) => ctx.ui.select(title, [...options]) },
    notify: (notice) => report(ctx, notice, "info"),
  });
  if (!settings.ok) return void reportOutcome(ctx, settings.message, "error");
  return settings.config;
}

/** The host's state as the transaction's plain request: the parent session, model, and how this Pi was started. */
async function hostRequest(
  pi: ExtensionAPI,
  ctx: ExtensionCommandContext,
  given: Pick<HandoffRequest, "args" | "agentDir" | "env" | "config">,
): Promise<HandoffRequest> {
  const sessionManager = ctx.sessionManager;
  const sessionFile = sessionManager.getSessionFile();
  const model = ctx.model;
  return {
    ...given,
    parent: {
      sessionFile,
      sessionFileExists: sessionFile !== undefined && (await isFile(sessionFile)),
      sessionId: sessionManager.getSessionId(),
      leafId: sessionManager.getLeafId(),
      cwd: ctx.cwd,
      sessionDir: sessionManager.getSessionDir(),
    },
    model:
      model === undefined
        ? undefined
        : {
            provider: model.provider,
            id: model.id,
            available: ctx.modelRegistry.find(model.provider, model.id) !== undefined,
          },
    thinkingLevel: ctx.thinkingLevel ?? pi.getThinkingLevel(),
    projectTrusted: ctx.isProjectTrusted(),
    piCommand: currentPiCommand(),
    extraPiArgs: mirroredPiFlags(process.argv, process.cwd()),
    printMode: !ctx.hasUI,
  };
}

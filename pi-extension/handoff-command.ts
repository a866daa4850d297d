/**
 * `/handoff-worktree`: reads the host's state into a plain request and runs the transaction.
 */
import { CURRENT_SESSION_VERSION, getPackageDir, SessionManager, type ExtensionAPI, type ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { access } from "node:fs/promises";
import { SimpleGitPort } from "../src/git/git.ts";
import { HANDOFF_HELP, parseHandoffArgs } from "../src/handoff/args.ts";
import { currentPiCommand, mirroredPiFlags } from "../src/handoff/launch-command.ts";
import { DEFAULT_TIMEOUTS, HandoffTransaction, type HandoffOutcome } from "../src/handoff/transaction.ts";
import { HANDOFF_STEPS, type HandoffStep } from "../src/manifest/schema.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { selectMultiplexer } from "../src/mux/detect.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../src/session/fork-runner.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { report } from "./report.ts";

const STATUS_KEY = "handoff-worktree";



function envMs(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function faultFromEnv(env: NodeJS.ProcessEnv): HandoffStep | undefined {
  const value = env.PI_HANDOFF_FAULT;
  return HANDOFF_STEPS.find((step) => step === value);
}

export async function runHandoff(pi: ExtensionAPI, args: string, ctx: ExtensionCommandContext): Promise<void> {
  const parsed = parseHandoffArgs(args);
  if (!parsed.ok) return report(ctx, parsed.message, "error");
  if ("help" in parsed) return report(ctx, HANDOFF_HELP, "info");

  if (!ctx.isIdle()) {
    ctx.ui.setStatus(STATUS_KEY, "handoff: waiting for the agent to finish");
    await ctx.waitForIdle();
  }
  const env = process.env;
  const agentDir = agentDirFromEnv(env);
  const git = new SimpleGitPort({ env });
  const sessionManager = ctx.sessionManager;
  const sessionFile = sessionManager.getSessionFile();
  const started = Date.now();
  const sessionModulePath = locatePiSessionModule(getPackageDir());
  const forkWorker = sessionModulePath !== undefined ? ForkWorker.start(sessionModulePath) : undefined;
  const transaction = new HandoffTransaction({
    git,
    store: ManifestStore.forAgentDir(agentDir),
    selectMux: (explicit) => selectMultiplexer(explicit, env, git),
    // Off the event loop when Pi's session module is on disk, so the TUI stays responsive; the
    // worker starts now and loads its modules while the worktree is being created.
    fork: (request) =>
      runFork(request, {
        worker: forkWorker,
        host: { SessionManager, CURRENT_SESSION_VERSION },
        onPhase: (phase) => ctx.ui.setStatus(STATUS_KEY, `handoff fork (${Math.round((Date.now() - started) / 1000)}s): ${phase}`),
      }),
    now: () => new Date(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    progress: (step, text) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      ctx.ui.setStatus(STATUS_KEY, `handoff ${step} (${seconds}s): ${text}`);
    },
    timeouts: {
      shellMs: envMs(env, "PI_HANDOFF_SHELL_TIMEOUT_MS", DEFAULT_TIMEOUTS.shellMs),
      confirmMs: envMs(env, "PI_HANDOFF_CONFIRM_TIMEOUT_MS", DEFAULT_TIMEOUTS.confirmMs),
      pollMs: DEFAULT_TIMEOUTS.pollMs,
    },
    faultAt: faultFromEnv(env),
  });
  let outcome: HandoffOutcome;
  try {
    outcome = await transaction.run({
      args: parsed.args,
      parent: {
        sessionFile,
        sessionFileExists: sessionFile !== undefined && (await fileExists(sessionFile)),
        sessionId: sessionManager.getSessionId(),
        leafId: sessionManager.getLeafId(),
        cwd: ctx.cwd,
        sessionDir: sessionManager.getSessionDir(),
      },
      model:
        ctx.model !== undefined
          ? {
              provider: ctx.model.provider,
              id: ctx.model.id,
              available: ctx.modelRegistry.find(ctx.model.provider, ctx.model.id) !== undefined,
            }
          : undefined,
      thinkingLevel: ctx.thinkingLevel ?? pi.getThinkingLevel(),
      projectTrusted: ctx.isProjectTrusted(),
      agentDir,
      piCommand: currentPiCommand(),
      extraPiArgs: mirroredPiFlags(process.argv, process.cwd()),
      env,
    });
  } finally {
    // Unused when the handoff was refused before the fork.
    forkWorker?.dispose();
    ctx.ui.setStatus(STATUS_KEY, undefined);
  }
  const level = outcome.code === "running" ? "info" : outcome.code === "launch_unconfirmed" ? "warning" : "error";
  report(ctx, outcome.message, level);
}

async function fileExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

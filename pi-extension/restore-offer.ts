/**
 * After a reboot: a Pi that starts in the TUI offers, once, to bring back the handoffs whose Pi is
 * gone (src/relaunch/restore-offer.ts decides which, and whether this Pi is the one to say it).
 *
 * Invariants:
 * - Decides nothing and starts nothing: one notice naming `/handoffs relaunch --all`.
 * - Off the start-up path: one unref'd timer `RESTORE_OFFER_DELAY_MS` after `session_start`
 *   (startup only), so Pi draws its screen first and a Herdr restore has resumed its panes' Pi
 *   (which then hold their leases and count as running); stopped at `session_shutdown`.
 * - Print mode offers nothing: a script's stderr is not the place for a suggestion.
 * - A failure to look is silent: the offer is a courtesy, `/handoffs` still lists everything.
 * - Never in place of a command's outcome: once the user ran a command of ours or was told
 *   something by it since start-up, the offer is not made (Pi's next info notice replaces the
 *   last one, see report.ts), nor claimed, so the next Pi to start still makes it.
 * - The recovery modules it looks with load when the timer fires, not with Pi.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { report, userActivityMark, userActivitySince } from "./report.ts";

/** How long after start-up the offer looks. */
export const RESTORE_OFFER_DELAY_MS = 3_000;

/**
 * What a look ended with: the offer shown, or why not (`failed`: it could not look, its settings in
 * the environment refused or the look threw; nothing is said).
 */
export type RestoreOfferLook = "offered" | "not_wanted" | "nothing_gone" | "offered_before" | "failed";

export interface RestoreOfferOptions {
  delayMs?: number;
  /** Told once each look ends (tests wait on it instead of on time). */
  onLooked?: (looked: RestoreOfferLook) => void;
}

export function registerRestoreOffer(pi: ExtensionAPI, options: RestoreOfferOptions = {}): void {
  let timer: NodeJS.Timeout | undefined;
  let generation = 0;
  pi.on("session_start", (event, ctx) => {
    if (event.reason !== "startup" || !ctx.hasUI) return;
    const mine = ++generation;
    const mark = userActivityMark();
    timer = setTimeout(() => {
      void look(ctx, () => mine === generation && !userActivitySince(mark)).then((looked) =>
        options.onLooked?.(looked),
      );
    }, options.delayMs ?? RESTORE_OFFER_DELAY_MS);
    timer.unref();
  });
  pi.on("session_shutdown", () => {
    generation += 1;
    if (timer !== undefined) clearTimeout(timer);
  });
}

async function look(ctx: ExtensionContext, current: () => boolean): Promise<RestoreOfferLook> {
  try {
    const [{ createRecoveryDeps, recoveryEnvProblem }, { restoreOffer }] = await Promise.all([
      import("../src/cli/deps.ts"),
      import("../src/relaunch/restore-offer.ts"),
    ]);
    if (recoveryEnvProblem(process.env) !== undefined) return "failed";
    if (!current()) return "not_wanted";
    const deps = createRecoveryDeps(process.env);
    const repo = await deps.git.findRepository(ctx.cwd);
    const file = ctx.sessionManager.getSessionFile();
    if (!current()) return "not_wanted";
    const outcome = await restoreOffer(
      deps,
      {
        ...(repo === undefined ? {} : { repoCommonDir: repo.commonDir }),
        session: { sessionId: ctx.sessionManager.getSessionId(), ...(file === undefined ? {} : { sessionFile: file }) },
      },
      "/handoffs",
      { stillWanted: current },
    );
    if (outcome.code !== "offer") return outcome.why;
    // Claimed: said now. A command that started in the moment since the last ask has not reported
    // yet, and its outcome, said later, takes this notice's place, not the other way round.
    report(ctx, `handoff-worktree: ${outcome.message}`, "info");
    return "offered";
  } catch {
    // Nothing to say: the offer is a courtesy (see the header).
    return "failed";
  }
}

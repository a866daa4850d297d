/**
 * The `pi-handoff` commands that move a branch: `rebase`, `land <handoff>` and the queue (`land
 * --all`, `land <handoff> <handoff>...`).
 *
 * Invariants:
 * - The options are checked before the handoff is looked up: bad input is said first.
 * - Outside Pi there is no project trust to ask: a repository's check runs only once approved
 *   (`--approve-repo-code`); a dry run approves nothing.
 * - Exit 1 when a landing's removal failed after it landed, or when the queue sent a child back.
 */
import { resolve } from "node:path";
import type { LandRequest } from "../../land/land-plan.ts";
import type { RebaseRequest } from "../../rebase/rebase.ts";
import type { ParsedRecoveryCommand } from "../command-line.ts";
import { type CliDeps, type CliIo, EXIT_OK, EXIT_REFUSED, Refusal, resolveId, UsageError } from "../io.ts";

export async function rebase(io: CliIo, id: string, request: RebaseRequest): Promise<number> {
  const [{ rebaseHandoff }, { createRebaseDeps }] = await Promise.all([
    import("../../rebase/rebase.ts"),
    import("../deps.ts"),
  ]);
  const outcome = await rebaseHandoff(createRebaseDeps(io.env, io.now), id, request, io.now);
  if (!outcome.ok)
    throw outcome.code === "not_found"
      ? new UsageError(outcome.message, "rebase")
      : new Refusal(outcome.message, "rebase");
  io.stdout(`${outcome.message}\n`);
  return EXIT_OK;
}

export async function land(io: CliIo, id: string, request: LandRequest): Promise<number> {
  const [{ landHandoff, removalFailedAfterLanding }, { createLandDeps }] = await Promise.all([
    import("../../land/land.ts"),
    import("../deps.ts"),
  ]);
  const outcome = await landHandoff(createLandDeps(io.env, io.now), id, request, io.now);
  if (!outcome.ok)
    throw outcome.code === "not_found" ? new UsageError(outcome.message, "land") : new Refusal(outcome.message, "land");
  io.stdout(`${outcome.message}\n`);
  return removalFailedAfterLanding(outcome) ? EXIT_REFUSED : EXIT_OK;
}

/**
 * `land --all` / `land <handoff> <handoff>...`: the queue (queue.ts) of one repository, the check
 * from the settings (a repository's only once approved: `--approve-repo-code`). Exit 1 when a
 * child was sent back (or the queue is busy); waiting children do not count.
 */
export async function landQueue(deps: CliDeps, io: CliIo, parsed: ParsedRecoveryCommand): Promise<number> {
  const ids: string[] = [];
  for (const name of parsed.handoffs ?? []) ids.push(await resolveId(deps, "land", name));
  let commonDir: string;
  let mainCheckout: string;
  if (ids.length > 0) {
    const manifests = await Promise.all(ids.map((id) => deps.store.read(id)));
    const repos = new Set(manifests.map((read) => (read.ok ? read.manifest.repo.commonDir : "")));
    const first = manifests[0];
    if (first === undefined || !first.ok || repos.size !== 1)
      throw new UsageError("The queue lands the handoffs of one repository at a time; these are of several.", "land");
    commonDir = first.manifest.repo.commonDir;
    mainCheckout = first.manifest.repo.root;
  } else {
    const dir = resolve(io.cwd ?? process.cwd(), parsed.repo ?? ".");
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined)
      throw new UsageError(
        `${dir} is not inside a git repository${parsed.repo === undefined ? ": run it in one, or give --repo DIR" : ""}.`,
        "land",
      );
    commonDir = repo.commonDir;
    mainCheckout = repo.mainCheckout;
  }
  if (parsed.flags.status === true) return queueStatusOf(deps, io, commonDir, mainCheckout, parsed.flags.json === true);
  const [{ loadHandoffConfig }, approval, { DEFAULT_CHECK_TIMEOUT_MS }, queue, words, { createQueueDeps }] =
    await Promise.all([
      import("../../config/load.ts"),
      import("../../config/post-create-approval.ts"),
      import("../../config/schema.ts"),
      import("../../queue/queue.ts"),
      import("../../queue/queue-words.ts"),
      import("../deps.ts"),
    ]);
  // Outside Pi there is no project trust to ask: the repository's check runs only once approved.
  const settings = await loadHandoffConfig({ cwd: mainCheckout, agentDir: deps.agentDir, projectTrusted: true });
  if (!settings.ok) throw new Refusal(settings.message, "land");
  const dryRun = parsed.flags["dry-run"] === true;
  const approved = await approval.approvedCheck({
    agentDir: deps.agentDir,
    config: settings.config,
    repoNeedsApproval: settings.repoNeedsApproval,
    // A dry run approves nothing: it shows the check, and says whether it still needs approving.
    approvedByFlag: !dryRun && parsed.flags["approve-repo-code"] === true,
  });
  const command = settings.config.check;
  const check =
    command === undefined
      ? undefined
      : { command, timeoutMs: settings.config.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS, env: io.env };
  const queueDeps = createQueueDeps(io.env, io.now);
  const request = {
    repoCommonDir: commonDir,
    ...(ids.length === 0 ? {} : { ids }),
    keepRebased: parsed.flags["keep-rebased"] === true,
    ...(parsed.flags["no-verify"] === true ? { noVerify: true } : {}),
  };
  if (dryRun) {
    const plan = await queue.planQueue(queueDeps, request);
    const shown = command === undefined ? "" : approval.checkText(command);
    const lines = words.describeQueuePlan(plan, check, shown);
    const last = await (await import("../../queue/queue-status.ts")).queueStatus(deps, commonDir, mainCheckout);
    if (last.ok && last.status.state === "interrupted") lines.push(...words.stoppedRunLines(last.status));
    if (!approved.ok) lines.push(approved.message.replace(/; nothing was landed\.$/, "."));
    io.stdout(`${lines.join("\n")}\n`);
    return EXIT_OK;
  }
  if (!approved.ok) throw new Refusal(approved.message, "land");
  const outcome = await queue.runQueue(queueDeps, { ...request, ...(check === undefined ? {} : { check }) }, io.now);
  if (!outcome.ok) throw new Refusal(outcome.message, "land");
  io.stdout(`${words.describeQueueReport(outcome.report, { resumed: outcome.resumed }).join("\n")}\n`);
  return outcome.report.sentBack.length === 0 ? EXIT_OK : EXIT_REFUSED;
}

/** `land --all --status [--json]`: the repository's current or last queue run, read only. */
async function queueStatusOf(
  deps: CliDeps,
  io: CliIo,
  commonDir: string,
  mainCheckout: string,
  json: boolean,
): Promise<number> {
  const [{ queueStatus }, { describeQueueStatus }] = await Promise.all([
    import("../../queue/queue-status.ts"),
    import("../../queue/queue-words.ts"),
  ]);
  const read = await queueStatus(deps, commonDir, mainCheckout);
  if (!read.ok) throw new Refusal(read.message, "land");
  io.stdout(
    json
      ? `${JSON.stringify(read.status, null, 2)}\n`
      : `${describeQueueStatus(read.status, (io.now?.() ?? new Date()).getTime()).join("\n")}\n`,
  );
  return EXIT_OK;
}

/**
 * The `pi-handoff` commands that read and change nothing: `list`, `inspect`, `env`, `forecast`, `tree`.
 *
 * Invariants:
 * - `--json` output is validated against the published schema (inventory/report-schema.ts,
 *   tree/tree-report.ts) before it is printed.
 * - `inspect` suggests only what would run: a checkout no removal may reach is said instead.
 */
import { resolve } from "node:path";
import { counted } from "../../text.ts";
import type { TreeScope } from "../../tree/tree.ts";
import {
  type CliDeps,
  type CliIo,
  EXIT_OK,
  landGitFor,
  listWidth,
  manifestsOf,
  prefix,
  Refusal,
  resolveId,
  UsageError,
} from "../io.ts";

export async function list(
  deps: CliDeps,
  io: CliIo,
  repoDir: string | undefined,
  all: boolean,
  json: boolean,
): Promise<number> {
  let repoCommonDir: string | undefined;
  let repoRoot: string | undefined;
  if (repoDir !== undefined) {
    // Named as an absolute path: `.` in a message says nothing once read elsewhere.
    const dir = resolve(io.cwd ?? process.cwd(), repoDir);
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined) throw new UsageError(`${dir} is not inside a git repository.`, "list");
    repoCommonDir = repo.commonDir;
    repoRoot = repo.mainCheckout;
  }
  const [{ buildInventory }, { InventoryReportSchema }] = await Promise.all([
    import("../../inventory/inventory.ts"),
    import("../../inventory/report-schema.ts"),
  ]);
  // Read once: the inventory and the forecast's column judge the same manifests.
  const entries = await deps.store.list();
  const inventory = await buildInventory(deps, {
    ...(repoCommonDir === undefined ? {} : { repoCommonDir }),
    includeRemoved: all,
    entries,
  });
  if (json) io.stdout(`${JSON.stringify(InventoryReportSchema.parse(inventory), null, 2)}\n`);
  else {
    // The forecast's short column: how far each target moved past its handoff, and what would conflict.
    const listed = new Set(inventory.handoffs.map((handoff) => handoff.id));
    const manifests = entries.flatMap((entry) => (entry.ok && listed.has(entry.id) ? [entry.manifest] : []));
    const [{ forecastHandoffs, forecastMark }, { formatInventory }] = await Promise.all([
      import("../../forecast/forecast.ts"),
      import("../../inventory/format.ts"),
    ]);
    const forecasts = await forecastHandoffs({ git: deps.git, landGit: await landGitFor(deps.env) }, manifests);
    const marks = new Map(forecasts.entries.map((entry) => [entry.id, forecastMark(entry) || "ok"]));
    const width = listWidth(io);
    io.stdout(
      `${formatInventory(inventory, {
        ...(repoRoot === undefined ? {} : { repo: repoRoot }),
        forecast: marks,
        ...(width === undefined ? {} : { width }),
      })}\n`,
    );
    // What killed processes left in the store is prune's to explain and sweep; say it is there.
    const leftovers = (await deps.store.leftovers()).length;
    if (leftovers > 0)
      io.stdout(
        `${counted(leftovers, "other file")} in the manifest store; pi-handoff prune --dry-run says what each is.\n`,
      );
  }
  return EXIT_OK;
}

export async function inspect(deps: CliDeps, io: CliIo, id: string, json: boolean): Promise<number> {
  const [
    { inspectHandoff, lastChildReport },
    { stepTimesOf },
    { InspectReportSchema, RECOVERY_JSON_VERSION },
    { formatReport },
  ] = await Promise.all([
    import("../../inventory/inventory.ts"),
    import("../../inventory/step-times.ts"),
    import("../../inventory/report-schema.ts"),
    import("../../inventory/format.ts"),
  ]);
  const found = await inspectHandoff(deps, id, { checkPorts: true });
  if (found.code === "not_found") throw new UsageError(found.message, "inspect");
  if (found.code === "invalid") throw new Refusal(found.message, "inspect");
  // Only what would run is suggested: a checkout no removal (nor reopening) may reach is said instead.
  const { withoutBlockedActions } = await import("../../remove/plan.ts");
  const { report: judged, blocked } = await withoutBlockedActions(deps, found.manifest, found.report);
  const inspected = { ...found, report: judged };
  const lastReport = await lastChildReport(deps.agentDir, id);
  const stepTimes = stepTimesOf(inspected.manifest);
  if (json) {
    const report = InspectReportSchema.parse({
      version: RECOVERY_JSON_VERSION,
      handoff: inspected.report,
      manifest: inspected.manifest,
      ...(lastReport === undefined ? {} : { lastReport }),
      ...(stepTimes === undefined ? {} : { stepTimes }),
    });
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const task = inspected.manifest.task;
    // The next steps as the user's shell runs them (a checkout without `pi-handoff` on PATH).
    const { recoveryCommand } = await import("../../child/pi-command.ts");
    io.stdout(
      `${formatReport(inspected.report, Date.now(), {
        cli: recoveryCommand(io.env),
        ...(task === undefined ? {} : { task }),
        ...(blocked === undefined ? {} : { blocked }),
        ...(lastReport === undefined ? {} : { lastReport }),
        ...(stepTimes === undefined ? {} : { stepTimes }),
      })}\n`,
    );
  }
  return EXIT_OK;
}

export async function env(deps: CliDeps, io: CliIo, id: string, json: boolean): Promise<number> {
  const [{ handoffEnvironment, nothingToExport }, { EnvReportSchema }] = await Promise.all([
    import("../../inventory/env.ts"),
    import("../../inventory/report-schema.ts"),
  ]);
  const found = await handoffEnvironment(deps.store, id);
  if (found.code === "not_found") throw new UsageError(found.message, "env");
  if (found.code !== "found") throw new Refusal(found.message, "env");
  if (json) io.stdout(`${JSON.stringify(EnvReportSchema.parse(found.report), null, 2)}\n`);
  else if (found.lines.length > 0) io.stdout(`${found.lines.join("\n")}\n`);
  else io.stderr(`${prefix(io, "env")}${nothingToExport(id)}\n`);
  return EXIT_OK;
}

export async function forecast(deps: CliDeps, io: CliIo, repoDir: string | undefined, json: boolean): Promise<number> {
  const manifests = await manifestsOf(deps, "forecast", repoDir);
  const [{ forecastHandoffs, formatForecast }, { ForecastReportSchema }] = await Promise.all([
    import("../../forecast/forecast.ts"),
    import("../../inventory/report-schema.ts"),
  ]);
  const result = await forecastHandoffs({ git: deps.git, landGit: await landGitFor(deps.env) }, manifests);
  for (const problem of result.problems) io.stderr(`${prefix(io, "forecast")}${problem}\n`);
  if (json) io.stdout(`${JSON.stringify(ForecastReportSchema.parse(result.entries), null, 2)}\n`);
  else io.stdout(`${formatForecast(result)}\n`);
  return EXIT_OK;
}

/**
 * `tree`: from a session file (a path to one), a handoff (named as everywhere), or the top-level
 * conversations of this repository (`--repo DIR`; outside a repository, of every one).
 */
export async function tree(
  deps: CliDeps,
  io: CliIo,
  name: string | undefined,
  repoDir: string | undefined,
  json: boolean,
): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  if (name !== undefined && repoDir !== undefined)
    throw new UsageError("Give a handoff, a session file or --repo DIR, not two of them.", "tree");
  const [{ buildTree, formatTree }, { TreeReportSchema }, { SessionUsageCache }, { RunCostReader }, { isFile }] =
    await Promise.all([
      import("../../tree/tree.ts"),
      import("../../tree/tree-report.ts"),
      import("../../session/usage.ts"),
      import("../../tree/run-costs.ts"),
      import("../../fs/probe.ts"),
    ]);
  let scope: TreeScope;
  const asFile = name === undefined ? undefined : resolve(cwd, name);
  if (name !== undefined && asFile !== undefined && name.endsWith(".jsonl") && (await isFile(asFile)))
    scope = { code: "session", file: asFile };
  else if (name !== undefined) scope = { code: "handoff", id: await resolveId(deps, "tree", name) };
  else {
    const dir = resolve(cwd, repoDir ?? ".");
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined && repoDir !== undefined)
      throw new UsageError(`${dir} is not inside a git repository.`, "tree");
    scope = repo === undefined ? { code: "repo" } : { code: "repo", commonDir: repo.commonDir };
  }
  const usage = SessionUsageCache.forAgentDir(deps.agentDir);
  const built = await buildTree({ ...deps, usage, runs: new RunCostReader(deps.env) }, scope);
  await usage.save();
  if (built.code === "not_found") throw new UsageError(built.message, "tree");
  if (json) io.stdout(`${JSON.stringify(TreeReportSchema.parse(built.report), null, 2)}\n`);
  else io.stdout(`${formatTree(built.report)}\n`);
  return EXIT_OK;
}

/**
 * The one inventory of handoffs shared by `pi-handoff` and `/handoffs`: every manifest in the agent
 * dir, each judged against reality (gather.ts collects the facts, classify.ts decides).
 *
 * Invariants:
 * - Read-only, except one fact a multiplexer reports that the manifest must follow: a pane that
 *   answers under new ids (a moved Herdr pane) gets them recorded by `inspectHandoff`, since its old
 *   ids are only an alias and every action on the handoff goes through them.
 * - Every manifest file is accounted for: a readable one becomes a report (or is counted among the
 *   hidden removed ones), an unreadable one is listed with its error, never skipped silently.
 * - Bounded: at most `CONCURRENCY` handoffs are examined at once, each call with its own timeout.
 */
import type { Manifest } from "../manifest/schema.ts";
import type { ListEntry, ManifestStore } from "../manifest/store.ts";
import { classify } from "./classify.ts";
import { FactGatherer, type GatherDeps, type GatherOptions } from "./gather.ts";
import { ChildReportStore, type ChildReport } from "../manifest/child-reports.ts";
import { RECOVERY_JSON_VERSION, type HandoffReport, type InventoryReport } from "./report-schema.ts";
import { mapLimit } from "../concurrency.ts";

const CONCURRENCY = 16;

export interface InventoryDeps extends GatherDeps {
  store: ManifestStore;
  agentDir: string;
}

export interface InventoryOptions {
  /** Only handoffs of the repository with this (canonical) common dir. */
  repoCommonDir?: string;
  /** Include removed handoffs (they are records only). */
  includeRemoved?: boolean;
  /** Only the handoffs whose manifest this keeps (the others are neither examined nor counted). */
  only?: (manifest: Manifest) => boolean;
  /** The store's entries, where the caller has just read them for something else too (read once). */
  entries?: readonly ListEntry[];
}

export async function buildInventory(deps: InventoryDeps, options: InventoryOptions = {}): Promise<InventoryReport> {
  const entries = options.entries ?? (await deps.store.list());
  const unreadable: InventoryReport["unreadable"] = [];
  const manifests: Manifest[] = [];
  let hiddenRemoved = 0;
  for (const entry of entries) {
    if (!entry.ok) {
      unreadable.push({ id: entry.id, path: entry.path, error: entry.error });
      continue;
    }
    const manifest = entry.manifest;
    if (options.repoCommonDir !== undefined && manifest.repo.commonDir !== options.repoCommonDir) continue;
    if (options.only !== undefined && !options.only(manifest)) continue;
    if (manifest.state === "removed" && options.includeRemoved !== true) {
      hiddenRemoved += 1;
      continue;
    }
    manifests.push(manifest);
  }
  const gatherer = new FactGatherer(deps);
  gatherer.prepare(manifests);
  // Every handoff's own readings first, while the batch of uncommitted changes runs; then each
  // completed with its changes (those the batch missed are asked alone, bounded again).
  const pending = await mapLimit(manifests, CONCURRENCY, (manifest) => gatherer.begin(manifest));
  const handoffs = await mapLimit(pending, CONCURRENCY, async (facts) => classify(await facts.complete()));
  return {
    version: RECOVERY_JSON_VERSION,
    agentDir: deps.agentDir,
    generatedAt: deps.now().toISOString(),
    handoffs,
    hiddenRemoved,
    unreadable,
  };
}

export type InspectOutcome =
  | { code: "found"; report: HandoffReport; manifest: Manifest }
  | { code: "not_found"; message: string }
  | { code: "invalid"; message: string };

/**
 * The child's newest report (`handoff_report`, `/handoff-report`) for `inspect`; undefined when it
 * sent none, or the store cannot be read (inspect shows the rest either way).
 */
export async function lastChildReport(agentDir: string, id: string): Promise<ChildReport | undefined> {
  try {
    const { reports } = await ChildReportStore.forAgentDir(agentDir).list(id);
    return reports.filter((report) => report.kind === "report").at(-1);
  } catch {
    return undefined;
  }
}

/** One handoff by id, judged the same way as in the inventory (and, with `checkPorts`, its ports tested). */
export async function inspectHandoff(
  deps: GatherDeps & { store: ManifestStore },
  id: string,
  options: GatherOptions = {},
): Promise<InspectOutcome> {
  const read = await deps.store.read(id);
  if (!read.ok) {
    return read.code === "not_found"
      ? { code: "not_found", message: `There is no handoff with id ${id} in ${deps.store.dir}.` }
      : { code: "invalid", message: read.message };
  }
  const report = classify(await new FactGatherer(deps, options).gather(read.manifest));
  const moved = report.workspace.code === "open" ? report.workspace.location : undefined;
  if (moved !== undefined && JSON.stringify(moved) !== JSON.stringify(read.manifest.mux)) {
    const manifest = await deps.store.update(id, (m) => {
      m.mux = moved;
    });
    return { code: "found", report: { ...report, mux: manifest.mux }, manifest };
  }
  return { code: "found", report, manifest: read.manifest };
}

/**
 * The handoff tree (`pi-handoff tree`, `/handoffs tree`): every conversation that handed off, its
 * handoffs' sessions under it, theirs under them, each node with its handoff as `list` judges it
 * and what it cost, itself and with everything under it.
 *
 * Invariants:
 * - An edge is a manifest: its `parent.sessionFile` is the parent node, its child session the
 *   child; a child session that handed off again is the parent of those manifests. A session
 *   reached twice (a cycle, a manifest naming another's session) is shown once, at its first place.
 * - Every manifest in scope is a node: a removed one stays (marked removed) and says whether its
 *   session file is still there; one without a session says so; an unreadable manifest (an older
 *   or newer format) is shown with what its file still says (id, branch, sessions) and why.
 * - A node's own figure is its session's usage after its fork point (src/session/usage.ts) plus the
 *   runs it started whose records say their cost (run-costs.ts); its total adds its children's
 *   totals, so each figure is counted once, in one node. A node's session is the one its manifest
 *   records, else the one a killed fork step left unrecorded, found as the inventory finds it.
 * - One walk and one set of figures (`walk`, `figuresOf`): the parent widget's total
 *   (`subtreeTotal`) is the `total` of the node `buildTree` makes from the same session, only
 *   without the inventory (which adds the handoffs' states, not figures), so it fits a widget's
 *   refresh. A session a handoff made counts only what follows that handoff's message in both.
 * - Read-only; the usage cache (the package's own file) is the only thing written, by the caller.
 * - Bounded: at most `CONCURRENCY` sessions are read at once; the inventory is the shared one.
 */
import { z } from "zod";
import { mapLimit } from "../concurrency.ts";
import { readJsonFile } from "../adoption/read-json.ts";
import type { ListEntry, ManifestStore } from "../manifest/store.ts";
import type { Manifest } from "../manifest/schema.ts";
import { addUsage, ZERO_USAGE, type SessionUsage, type SessionUsageCache, type UsageTotals } from "../session/usage.ts";
import { counted, printable } from "../text.ts";
import { describeChild, describeStatus } from "../inventory/format.ts";
import { unrecordedChildSession } from "../inventory/gather.ts";
import { buildInventory, type InventoryDeps } from "../inventory/inventory.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import type { RunCost, RunCostReader } from "./run-costs.ts";
import { TREE_JSON_VERSION, type TreeHandoff, type TreeNode, type TreeReport } from "./tree-report.ts";

const CONCURRENCY = 16;

export interface TreeDeps extends InventoryDeps {
  usage: SessionUsageCache;
  runs: RunCostReader;
}

/** Where the tree starts: the top-level conversations of a repository (or of all), one handoff, or one session file. */
export type TreeScope =
  | { code: "repo"; commonDir?: string }
  | { code: "handoff"; id: string }
  | { code: "session"; file: string };

/** What an unreadable manifest still says, read leniently. */
const LooseManifestSchema = z.looseObject({
  branch: z.string().optional().catch(undefined),
  state: z.string().optional().catch(undefined),
  createdAt: z.string().optional().catch(undefined),
  repo: z
    .looseObject({ commonDir: z.string().optional().catch(undefined) })
    .optional()
    .catch(undefined),
  parent: z
    .looseObject({
      sessionFile: z.string().optional().catch(undefined),
      sessionId: z.string().optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
  child: z
    .looseObject({
      sessionFile: z.string().optional().catch(undefined),
      sessionId: z.string().optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});

/** One handoff as an edge of the tree. */
interface Edge {
  id: string;
  createdAt: string;
  commonDir?: string;
  parentFile?: string;
  parentId?: string;
  childFile?: string;
  childId?: string;
  manifest?: Manifest;
  unreadable?: { path: string; error: string; branch?: string; state?: string };
}

async function edgesOf(entries: readonly ListEntry[]): Promise<Edge[]> {
  return mapLimit([...entries], CONCURRENCY, async (entry): Promise<Edge> => {
    if (entry.ok) {
      const { manifest } = entry;
      return {
        id: entry.id,
        createdAt: manifest.createdAt,
        commonDir: manifest.repo.commonDir,
        parentFile: manifest.parent.sessionFile,
        parentId: manifest.parent.sessionId,
        ...(manifest.child.sessionFile === undefined ? {} : { childFile: manifest.child.sessionFile }),
        ...(manifest.child.sessionId === undefined ? {} : { childId: manifest.child.sessionId }),
        manifest,
      };
    }
    const read = await readJsonFile(entry.path, LooseManifestSchema);
    const loose = read.ok ? read.value : {};
    return {
      id: entry.id,
      createdAt: loose.createdAt ?? "",
      ...(loose.repo?.commonDir === undefined ? {} : { commonDir: loose.repo.commonDir }),
      ...(loose.parent?.sessionFile === undefined ? {} : { parentFile: loose.parent.sessionFile }),
      ...(loose.parent?.sessionId === undefined ? {} : { parentId: loose.parent.sessionId }),
      ...(loose.child?.sessionFile === undefined ? {} : { childFile: loose.child.sessionFile }),
      ...(loose.child?.sessionId === undefined ? {} : { childId: loose.child.sessionId }),
      unreadable: {
        path: entry.path,
        error: entry.error,
        ...(loose.branch === undefined ? {} : { branch: loose.branch }),
        ...(loose.state === undefined ? {} : { state: loose.state }),
      },
    };
  });
}

/** A node before its figures: the session it stands for and the handoff that made it. */
interface Spot {
  edge?: Edge;
  sessionFile?: string;
  sessionId?: string;
  children: Spot[];
}

/** The node of the session a handoff made. */
function spotOf(edge: Edge): Spot {
  return {
    edge,
    ...(edge.childFile === undefined ? {} : { sessionFile: edge.childFile }),
    ...(edge.childId === undefined ? {} : { sessionId: edge.childId }),
    children: [],
  };
}

export type TreeOutcome = { code: "built"; report: TreeReport } | { code: "not_found"; message: string };

type Walk = { code: "walked"; roots: Spot[] } | { code: "not_found"; message: string };

/** A time as `Date.prototype.toISOString` writes it: every manifest's `createdAt` as the package writes it. */
const ISO_UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * `a.localeCompare(b)`, without the collator for two times written alike: their first difference
 * is a digit in both, which the collator orders as code units do. The collator's first use costs
 * tens of milliseconds, and nothing else in `tree --json` uses it.
 */
function compareTimes(a: string, b: string): number {
  if (ISO_UTC_TIME.test(a) && ISO_UTC_TIME.test(b)) return a < b ? -1 : a > b ? 1 : 0;
  return a.localeCompare(b);
}

/** The one walk of the manifests (`all`) from `scope` down, which the tree and the widget's total share. */
function walk(all: readonly Edge[], scope: TreeScope): Walk {
  const inScope =
    scope.code === "repo" && scope.commonDir !== undefined
      ? all.filter((edge) => edge.commonDir === scope.commonDir)
      : all;
  const byParent = new Map<string, Edge[]>();
  for (const edge of [...inScope].sort((a, b) => compareTimes(a.createdAt, b.createdAt))) {
    if (edge.parentFile === undefined) continue;
    byParent.set(edge.parentFile, [...(byParent.get(edge.parentFile) ?? []), edge]);
  }
  const seen = new Set<string>();
  const grow = (spot: Spot): Spot => {
    const file = spot.sessionFile;
    if (file === undefined || seen.has(file)) return spot;
    seen.add(file);
    spot.children = (byParent.get(file) ?? []).map((edge) => grow(spotOf(edge)));
    return spot;
  };

  if (scope.code === "handoff") {
    const edge = all.find((candidate) => candidate.id === scope.id);
    if (edge === undefined) return { code: "not_found", message: `There is no handoff with id ${scope.id}.` };
    return { code: "walked", roots: [grow(spotOf(edge))] };
  }
  if (scope.code === "session") {
    // The handoff that made the session, when one did: its own part starts after that handoff's message.
    const edge = all.find((candidate) => candidate.childFile === scope.file);
    const sessionId = edge?.childId ?? all.find((candidate) => candidate.parentFile === scope.file)?.parentId;
    const root: Spot = {
      ...(edge === undefined ? {} : { edge }),
      sessionFile: scope.file,
      ...(sessionId === undefined ? {} : { sessionId }),
      children: [],
    };
    return { code: "walked", roots: [grow(root)] };
  }
  const children = new Set(inScope.flatMap((edge) => (edge.childFile === undefined ? [] : [edge.childFile])));
  const roots = [...byParent.entries()]
    .filter(([file]) => !children.has(file))
    .map(([file, edges]) =>
      grow({
        sessionFile: file,
        ...(edges[0]?.parentId === undefined ? {} : { sessionId: edges[0].parentId }),
        children: [],
      }),
    );
  // A manifest that names no parent (an unreadable one that lost it) is a tree of its own.
  roots.push(...inScope.filter((edge) => edge.parentFile === undefined).map((edge) => grow(spotOf(edge))));
  return { code: "walked", roots };
}

function spotsUnder(roots: readonly Spot[]): Spot[] {
  const spots: Spot[] = [];
  const collect = (spot: Spot): void => {
    spots.push(spot);
    spot.children.forEach(collect);
  };
  roots.forEach(collect);
  return spots;
}

/** What a spot cost: its session, that session's usage and runs, itself (`own`) and with its subtree (`total`). */
interface Figure {
  file?: string;
  usage?: SessionUsage;
  runs: RunCost[];
  own: UsageTotals;
  total: UsageTotals;
}

type CostDeps = { usage: SessionUsageCache; runs: RunCostReader };

/**
 * The figures of every spot under `roots`. A spot's session is the one its manifest records, else
 * the one a killed fork step left unrecorded (found as the inventory finds it); its own part starts
 * after its handoff's message.
 */
async function figuresOf(deps: CostDeps, roots: readonly Spot[]): Promise<Map<Spot, Figure>> {
  const spots = spotsUnder(roots);
  const read = new Map(
    await mapLimit(spots, CONCURRENCY, async (spot) => {
      const manifest = spot.edge?.manifest;
      const found =
        spot.sessionFile === undefined && manifest !== undefined ? await unrecordedChildSession(manifest) : undefined;
      const file = spot.sessionFile ?? found?.sessionFile;
      const keys = [file, spot.sessionId ?? found?.sessionId].filter((key): key is string => key !== undefined);
      const usage = file === undefined ? undefined : await deps.usage.usageOf(file, spot.edge?.id);
      const runs = keys.length === 0 ? [] : await deps.runs.runsOf(keys);
      return [spot, { file, usage, runs }] as const;
    }),
  );
  const figures = new Map<Spot, Figure>();
  const sum = (spot: Spot): UsageTotals => {
    const { file, usage, runs } = read.get(spot) ?? { runs: [] };
    const own = runs.reduce(
      (total, run) => addUsage(total, runUsage(run)),
      usage?.code === "read" ? usage.own : { ...ZERO_USAGE },
    );
    const total = spot.children.reduce((subtotal, child) => addUsage(subtotal, sum(child)), own);
    figures.set(spot, {
      ...(file === undefined ? {} : { file }),
      ...(usage === undefined ? {} : { usage }),
      runs,
      own,
      total,
    });
    return total;
  };
  roots.forEach(sum);
  return figures;
}

export async function buildTree(
  deps: TreeDeps,
  scope: TreeScope,
  entries?: readonly ListEntry[],
): Promise<TreeOutcome> {
  // Read once: the inventory judges the same manifests the walk joined.
  const listed = entries ?? (await deps.store.list());
  const walked = walk(await edgesOf(listed), scope);
  if (walked.code === "not_found") return walked;
  const { roots } = walked;
  const ids = new Set(spotsUnder(roots).flatMap((spot) => (spot.edge?.manifest === undefined ? [] : [spot.edge.id])));
  // The sessions and runs are read while the inventory judges the handoffs (they share nothing).
  const figuring = figuresOf(deps, roots);
  const inventory =
    ids.size === 0
      ? undefined
      : await buildInventory(deps, {
          includeRemoved: true,
          only: (manifest) => ids.has(manifest.id),
          entries: listed,
        });
  const reports = new Map((inventory?.handoffs ?? []).map((report) => [report.id, report]));
  const now = deps.now();
  const figures = await figuring;

  const nodeOf = (spot: Spot): TreeNode => {
    const figure = figures.get(spot);
    const usage = figure?.usage?.code === "read" ? figure.usage : undefined;
    const file = figure?.file;
    const report = spot.edge === undefined ? undefined : reports.get(spot.edge.id);
    return {
      ...(spot.edge === undefined ? {} : { handoff: handoffOf(spot.edge, report, now.getTime()) }),
      session:
        file === undefined
          ? { code: "none" }
          : usage !== undefined
            ? { code: "read", file, bytes: usage.bytes, pending: usage.pending }
            : { code: "missing", file },
      usage: usage?.own ?? { ...ZERO_USAGE },
      forkPoint: usage?.forkPoint ?? "start",
      runs: figure?.runs ?? [],
      own: figure?.own ?? { ...ZERO_USAGE },
      total: figure?.total ?? { ...ZERO_USAGE },
      children: spot.children.map(nodeOf),
    };
  };
  const rootNodes = roots.map(nodeOf);
  return {
    code: "built",
    report: {
      version: TREE_JSON_VERSION,
      agentDir: deps.agentDir,
      generatedAt: now.toISOString(),
      roots: rootNodes,
      total: rootNodes.reduce((sum, root) => addUsage(sum, root.total), { ...ZERO_USAGE }),
    },
  };
}

/** A run's recorded cost as usage (pi-subagents records no cache tokens). */
function runUsage(run: RunCost): UsageTotals {
  if (run.cost === undefined) return { ...ZERO_USAGE };
  return { ...ZERO_USAGE, input: run.cost.inputTokens, output: run.cost.outputTokens, cost: run.cost.dollars };
}

function handoffOf(edge: Edge, report: HandoffReport | undefined, now: number): TreeHandoff {
  if (edge.unreadable !== undefined || edge.manifest === undefined || report === undefined) {
    const unreadable = edge.unreadable;
    return {
      code: "unreadable",
      id: edge.id,
      path: unreadable?.path ?? "",
      error: unreadable?.error ?? "It was not judged.",
      ...(unreadable?.branch === undefined ? {} : { branch: unreadable.branch }),
      ...(unreadable?.state === undefined ? {} : { state: unreadable.state }),
    };
  }
  const branch = report.branchState;
  const landed =
    (branch.code === "present" && branch.merged !== undefined) ||
    report.landing?.verdict === "landed" ||
    report.landing?.verdict === "landed_unrecorded";
  return {
    code: "handoff",
    id: report.id,
    branch: report.branch,
    state: report.state,
    status: describeStatus(report.status),
    statusCode: report.status.code,
    ...(report.child === undefined ? {} : { child: describeChild(report, now) }),
    ...(branch.code === "present" ? { ahead: branch.unmerged.total } : {}),
    ...(branch.code === "present" && branch.behind !== undefined ? { behind: branch.behind } : {}),
    landed,
    removed: report.state === "removed",
  };
}

/** `12,345 tokens, $0.0123`: the four token counts summed (the JSON has each), and the cost. */
export function describeUsage(usage: UsageTotals): string {
  const tokens = usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
  return `${Math.round(tokens).toLocaleString("en-US")} tokens, $${usage.cost.toFixed(usage.cost >= 1 ? 2 : 4)}`;
}

/** One node's words, after its place in the tree. */
function describeNode(node: TreeNode): string {
  const parts: string[] = [];
  const handoff = node.handoff;
  if (handoff === undefined) parts.push(node.session.code === "none" ? "(no session)" : node.session.file);
  else if (handoff.code === "handoff") {
    parts.push(`${handoff.branch} (${handoff.id})`);
    parts.push(handoff.child === undefined ? handoff.status : `${handoff.status}, child ${handoff.child}`);
    if (handoff.ahead !== undefined)
      parts.push(`${handoff.ahead} ahead, ${handoff.behind ?? "?"} behind${handoff.landed ? ", landed" : ""}`);
    else if (handoff.landed) parts.push("landed");
  } else {
    parts.push(
      `${handoff.branch ?? "?"} (${handoff.id})`,
      `manifest unreadable${handoff.state === undefined ? "" : ` (state ${handoff.state})`}: ${handoff.error}`,
    );
  }
  if (node.session.code === "missing") parts.push(`session file gone (${node.session.file})`);
  else if (node.session.code === "none" && handoff !== undefined) parts.push("no session");
  else if (node.session.code === "read" && node.session.pending) parts.push("being written");
  const runs = node.runs.length;
  if (runs > 0) {
    const unpriced = node.runs.filter((run) => run.cost === undefined).length;
    parts.push(`${counted(runs, "run")} started${unpriced === 0 ? "" : ` (${unpriced} without a recorded cost)`}`);
  }
  parts.push(`own ${describeUsage(node.own)}`);
  if (node.children.length > 0) parts.push(`total ${describeUsage(node.total)}`);
  return parts.join("  ");
}

/** The tree as text: one line per node, drawn with branches; the root's line names its session file. */
export function formatTree(report: TreeReport): string {
  if (report.roots.length === 0) return `No handoffs in ${report.agentDir}.`;
  const lines: string[] = [];
  const draw = (node: TreeNode, lead: string, branch: string): void => {
    lines.push(printable(`${lead}${branch}${describeNode(node)}`));
    const below = lead + (branch === "" ? "" : branch === "└─ " ? "   " : "│  ");
    node.children.forEach((child, index) => draw(child, below, index === node.children.length - 1 ? "└─ " : "├─ "));
  };
  for (const root of report.roots) draw(root, "", "");
  if (report.roots.length > 1)
    lines.push(`All ${counted(report.roots.length, "tree")}: ${describeUsage(report.total)}`);
  lines.push("(tokens: input + output + cache read + cache write as Pi records them; --json has each)");
  return lines.join("\n");
}

/**
 * The total of the tree under one session: its node's `total` in `buildTree` from that session (the
 * same walk and figures, so a session a handoff made counts only what follows its handoff message),
 * without the inventory, so it fits a widget's refresh. Undefined when the session has handed off nothing.
 */
export async function subtreeTotal(
  deps: { store: Pick<ManifestStore, "list"> } & CostDeps,
  sessionFile: string,
): Promise<UsageTotals | undefined> {
  const walked = walk(await edgesOf(await deps.store.list()), { code: "session", file: sessionFile });
  const root = walked.code === "walked" ? walked.roots[0] : undefined;
  if (root === undefined || root.children.length === 0) return undefined;
  return (await figuresOf(deps, [root])).get(root)?.total;
}

/** The widget's line for a subtree's total. */
export function subtreeLine(total: UsageTotals): string {
  return `tree total: ${describeUsage(total)} (this session and its handoffs)`;
}

/**
 * The parent widget's line with its subtree's total: `line()` answers at once with the last one
 * computed and starts a new computation when the last is older than `minIntervalMs` (none runs
 * twice at once); `onChange` is called when a computation changed the line.
 */
export class SubtreeTotalLine {
  readonly #deps: { store: Pick<ManifestStore, "list">; usage: SessionUsageCache; runs: () => RunCostReader };
  readonly #session: { file: string };
  readonly #onChange: () => void;
  readonly #minIntervalMs: number;
  #line: string | undefined;
  #computedAt = Number.NEGATIVE_INFINITY;
  #running = false;

  constructor(input: {
    store: Pick<ManifestStore, "list">;
    usage: SessionUsageCache;
    runs: () => RunCostReader;
    /** The session of the Pi that shows the widget. */
    session: { file: string };
    onChange: () => void;
    minIntervalMs?: number;
  }) {
    this.#deps = { store: input.store, usage: input.usage, runs: input.runs };
    this.#session = input.session;
    this.#onChange = input.onChange;
    this.#minIntervalMs = input.minIntervalMs ?? 10_000;
  }

  line(now: number = Date.now()): string | undefined {
    if (!this.#running && now - this.#computedAt >= this.#minIntervalMs) {
      this.#running = true;
      this.#computedAt = now;
      void this.#compute();
    }
    return this.#line;
  }

  async #compute(): Promise<void> {
    try {
      const total = await subtreeTotal(
        { store: this.#deps.store, usage: this.#deps.usage, runs: this.#deps.runs() },
        this.#session.file,
      );
      const line = total === undefined ? undefined : subtreeLine(total);
      if (line !== this.#line) {
        this.#line = line;
        this.#onChange();
      }
    } catch {
      // A widget line that cannot be computed now keeps the last one; the next refresh tries again.
    } finally {
      this.#running = false;
    }
  }
}

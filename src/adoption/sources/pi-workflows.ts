/**
 * Lineage source for pi-workflows run bundles (the readable layout of older releases):
 * `<agentDir>/workflows/runs/<dir>/` with `manifest.json`, `state.json` and `session/binding.json`.
 *
 * Invariants:
 * - Read-only, and only those three files per bundle: a workflow server's database (current
 *   releases) is never opened.
 * - A run is bound to its origin session's header id (not its file); a fork has a new id, so it
 *   can neither claim nor continue the run. The honest adoption is a notice naming the run and how
 *   to continue it: reopen the origin session.
 * - At most `MAX_BUNDLES` bundles are read; more are reported in a note.
 */
import { join } from "node:path";
import { z } from "zod";
import type { Ancestor } from "../ancestry.ts";
import { mapLimit } from "../../concurrency.ts";
import { listDir, readJsonFile } from "../read-json.ts";
import { cleanLine } from "../text.ts";
import type { AdoptedRun, LineageSource, ScanContext, SourceScan } from "../types.ts";

export const PI_WORKFLOWS_SOURCE = "pi-workflows";
const MAX_BUNDLES = 2_000;
const READ_CONCURRENCY = 16;

/** States in which the run can still move, if its origin session is reopened. */
const OPEN_STATES: ReadonlySet<string> = new Set(["running", "waiting"]);

const BindingSchema = z.looseObject({
  runId: z.string().min(1),
  piSessionId: z.string().optional(),
  piSessionFile: z.string().optional(),
  cwd: z.string().optional(),
});
const ManifestSchema = z.looseObject({
  runId: z.string().optional(),
  workflowName: z.string().optional(),
  status: z.string().optional(),
});
const StateSchema = z.looseObject({ status: z.string().optional() });

export function workflowRunsDir(agentDir: string): string {
  return join(agentDir, "workflows", "runs");
}

export function piWorkflowsSource(): LineageSource {
  async function readBundle(
    dir: string,
    ancestorsById: Map<string, Ancestor>,
    ancestorsByFile: Map<string, Ancestor>,
    notes: string[],
  ): Promise<AdoptedRun | undefined> {
    const binding = await readJsonFile(join(dir, "session", "binding.json"), BindingSchema);
    if (!binding.ok) {
      if (binding.code !== "missing") notes.push(`pi-workflows: ${binding.message}`);
      return undefined;
    }
    const owner =
      (binding.value.piSessionId === undefined ? undefined : ancestorsById.get(binding.value.piSessionId)) ??
      (binding.value.piSessionFile === undefined ? undefined : ancestorsByFile.get(binding.value.piSessionFile));
    if (owner === undefined) return undefined;
    const manifest = await readJsonFile(join(dir, "manifest.json"), ManifestSchema);
    const state = await readJsonFile(join(dir, "state.json"), StateSchema);
    for (const read of [manifest, state])
      if (!read.ok && read.code !== "missing") notes.push(`pi-workflows: ${read.message}`);
    const status =
      (state.ok ? state.value.status : undefined) ?? (manifest.ok ? manifest.value.status : undefined) ?? "unknown";
    const name =
      manifest.ok && manifest.value.workflowName !== undefined
        ? cleanLine(manifest.value.workflowName, 80)
        : "workflow";
    const originFile = binding.value.piSessionFile ?? owner.sessionFile;
    const reopen =
      originFile === undefined
        ? `reopen session ${owner.sessionId ?? owner.ref}`
        : `reopen its session: pi --session ${originFile}`;
    const open = OPEN_STATES.has(status);
    return {
      source: PI_WORKFLOWS_SOURCE,
      runId: binding.value.runId,
      outcome: "notice",
      state: status,
      title: `workflow "${name}"`,
      progress: open ? `bound to its origin session; to continue it, ${reopen}` : `ended ${status}`,
      owner: { key: binding.value.piSessionId ?? originFile ?? owner.ref, depth: owner.depth },
      paths: {
        runDir: dir,
        status: join(dir, "state.json"),
        outputs: [],
        sessionFiles: originFile === undefined ? [] : [originFile],
      },
      inspect: [
        `read ${join(dir, "manifest.json")}`,
        `read ${join(dir, "state.json")}`,
        open ? reopen : `reopen its session to see its results`,
      ],
    };
  }

  async function scan(context: ScanContext): Promise<SourceScan> {
    const byId = new Map<string, Ancestor>();
    const byFile = new Map<string, Ancestor>();
    for (const ancestor of context.lineage.ancestors) {
      if (ancestor.sessionId !== undefined && !byId.has(ancestor.sessionId)) byId.set(ancestor.sessionId, ancestor);
      for (const file of [ancestor.sessionFile, ancestor.ref])
        if (file !== undefined && !byFile.has(file)) byFile.set(file, ancestor);
    }
    if (byId.size === 0 && byFile.size === 0) return { runs: [], notes: [] };
    const root = workflowRunsDir(context.agentDir);
    const notes: string[] = [];
    let dirs = await listDir(root, "dirs");
    if (dirs.length > MAX_BUNDLES) {
      notes.push(`pi-workflows: ${dirs.length} run bundles in ${root}; only ${MAX_BUNDLES} were read.`);
      dirs = dirs.sort().slice(-MAX_BUNDLES);
    }
    const runs = await mapLimit(dirs, READ_CONCURRENCY, (name) => readBundle(join(root, name), byId, byFile, notes));
    return { runs: runs.filter((run): run is AdoptedRun => run !== undefined), notes };
  }

  // Bundles are notices, delivered once: there is nothing to watch.
  const refresh = async (runs: readonly AdoptedRun[]): Promise<SourceScan> => ({
    runs: runs.filter((run) => run.source === PI_WORKFLOWS_SOURCE),
    notes: [],
  });

  return { name: PI_WORKFLOWS_SOURCE, scan, refresh };
}

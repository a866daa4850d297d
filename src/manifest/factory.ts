/**
 * Builds the first version of a handoff's manifest: state `provisioning`, written before any
 * resource (worktree, pane, session) exists, so every later resource has an owner on disk.
 */
import { type Manifest, ManifestSchema, MANIFEST_VERSION } from "./schema.ts";

export interface NewManifestInput {
  id: string;
  now: Date;
  branch: string;
  base: Manifest["base"];
  repo: Manifest["repo"];
  parent: Manifest["parent"];
  worktree: Manifest["worktree"];
  mux: Manifest["mux"];
  task?: string;
  owner?: Manifest["owner"];
  setup?: Manifest["setup"];
  intent?: Manifest["intent"];
}

/** Throws if the input does not make a valid manifest (a programming error in the caller). */
export function newManifest(input: NewManifestInput): Manifest {
  const at = input.now.toISOString();
  const manifest: Manifest = {
    version: MANIFEST_VERSION,
    id: input.id,
    createdAt: at,
    updatedAt: at,
    state: "provisioning",
    history: [{ state: "provisioning", at }],
    branch: input.branch,
    base: input.base,
    repo: input.repo,
    parent: input.parent,
    worktree: input.worktree,
    mux: input.mux,
    child: {},
    ...(input.task === undefined ? {} : { task: input.task }),
    ...(input.owner === undefined ? {} : { owner: input.owner }),
    ...(input.setup === undefined ? {} : { setup: input.setup }),
    ...(input.intent === undefined ? {} : { intent: input.intent }),
  };
  return ManifestSchema.parse(manifest);
}

/**
 * A handoff manifest in the `running` state, written to a real store, for tests of what a parent
 * sees of its children (src/watch/watch.ts) or what an inventory makes of them, without making
 * a real handoff.
 */
import { join } from "node:path";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest, MuxLocation } from "../../src/manifest/schema.ts";
import type { ManifestStore } from "../../src/manifest/store.ts";

export interface RunningHandoff {
  branch: string;
  /** When it was made and acknowledged (ISO). */
  at: string;
  parent: { sessionFile: string; sessionId: string };
  child: { sessionFile?: string; pid?: number };
  /** Its worktree is `<worktreeRoot>/<branch>` (not created here). */
  worktreeRoot: string;
  mux?: MuxLocation;
  /** The repository and base it was made from (default: a made-up `/r` at `a...a`). */
  repo?: { root: string; base: { ref: string; sha: string } };
}

export async function storeRunningHandoff(store: ManifestStore, handoff: RunningHandoff): Promise<Manifest> {
  const manifest = newManifest({
    id: store.newId(handoff.branch),
    now: new Date(handoff.at),
    branch: handoff.branch,
    base: handoff.repo?.base ?? { ref: "main", sha: "a".repeat(40) },
    repo: { root: handoff.repo?.root ?? "/r", commonDir: join(handoff.repo?.root ?? "/r", ".git") },
    parent: { ...handoff.parent, leafId: null, cwd: handoff.repo?.root ?? "/r" },
    worktree: { path: join(handoff.worktreeRoot, handoff.branch) },
    mux: handoff.mux ?? { kind: "tmux" },
  });
  manifest.state = "running";
  manifest.child = { ...handoff.child, ackAt: handoff.at };
  const created = await store.create(manifest);
  if (!created.ok) throw new Error(created.message);
  return manifest;
}

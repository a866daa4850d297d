/**
 * Step 1 of the handoff: the manifest, the ownership record, written before any other resource.
 *
 * Invariants:
 * - The branch is claimed under the store lock, so two handoffs cannot take one branch; a handoff
 *   that failed before its worktree existed, or was removed, claims it no more (`holdsBranch`).
 * - The ports (settings `ports`) are chosen under that same lock, so two handoffs cannot take one
 *   port, and recorded with the settings' `env` filled in with them; too few free ports refuse
 *   with nothing written.
 * - Intent before creation: the window's name and server are in the manifest from its creation.
 * - A refusal here carries a code (`Refusal`), worded by notice.ts.
 */
import type { Manifest } from "../../manifest/schema.ts";
import { newManifest } from "../../manifest/factory.ts";
import { muxLabel } from "../../mux/label.ts";
import { ownerOf } from "../../manifest/owner.ts";
import { prepareTask } from "../../session/handoff-message.ts";
import { fillPortPlaceholders } from "../../config/schema.ts";
import { choosePorts, portsHeldBy } from "../../ports/reserve.ts";
import { loopbackProbe } from "../../ports/probe.ts";
import { environmentNote, type Refusal } from "../notice.ts";
import type { HandoffRequest, Plan } from "../preconditions.ts";
import type { StepContext } from "./step.ts";

/**
 * Step 1: the ownership record, claimed under the store lock so two handoffs cannot take one
 * branch, nor one port: the ports are chosen under that lock and recorded with the variables.
 */
export async function createManifest(
  ctx: StepContext,
  plan: Plan,
  request: HandoffRequest,
): Promise<{ ok: true; manifest: Manifest } | { ok: false; refusal: Refusal }> {
  const task = prepareTask(request.args.task).task;
  const manifest = newManifest({
    id: plan.id,
    now: ctx.deps.now(),
    branch: plan.branch,
    base: plan.base,
    repo: { root: plan.repo.mainCheckout, commonDir: plan.repo.commonDir },
    parent: {
      sessionFile: plan.parentSessionFile,
      sessionId: request.parent.sessionId,
      leafId: plan.leafId,
      cwd: request.parent.cwd,
    },
    worktree: { path: plan.worktreePath },
    // Where the window will be, and its name, before it exists (see the invariants).
    mux: plan.mux.serverLocation?.() ?? { kind: plan.mux.kind },
    intent: { windowLabel: muxLabel(plan.branch) },
    ...(task !== undefined ? { task } : {}),
    ...(plan.existing ? { setup: { existingBranch: true } } : {}),
    // Recovery waits for an unfinished handoff only while this process lives (owner.ts).
    owner: await ownerOf(),
  });
  // The first entry carries the checks before it (the manifest step goes on into the next one).
  const checked = ctx.takeEarlierSteps();
  if (checked.length > 0)
    manifest.history = manifest.history.map((entry, index) => (index === 0 ? { ...entry, steps: checked } : entry));
  const ports = plan.config.ports !== undefined && plan.config.ports.count > 0 ? plan.config.ports : undefined;
  const env = plan.config.env;
  const withEnvironment = (m: Manifest, reserved: readonly number[]): Manifest => ({
    ...m,
    ...(reserved.length > 0 ? { ports: [...reserved] } : {}),
    ...(env !== undefined && Object.keys(env).length > 0
      ? {
          env: Object.fromEntries(
            Object.entries(env).map(([name, value]) => [name, fillPortPlaceholders(value, reserved)]),
          ),
        }
      : {}),
  });
  const created = await ctx.deps.store.create(ports === undefined ? withEnvironment(manifest, []) : manifest, {
    conflictsWith: (existing) =>
      existing.repo.commonDir === plan.repo.commonDir && existing.branch === plan.branch && holdsBranch(existing),
    ...(ports === undefined
      ? {}
      : {
          reserve: async (others) => {
            const chosen = await choosePorts(ports, portsHeldBy(others), ctx.deps.portProbe ?? loopbackProbe, {
              recoveryCommand: ctx.recoveryCli,
            });
            return chosen.ok
              ? { ok: true, manifest: withEnvironment(manifest, chosen.ports) }
              : { ok: false, message: chosen.message };
          },
        }),
  });
  if (!created.ok && created.code === "unavailable") {
    return { ok: false, refusal: { code: "ports_unavailable", detail: created.message } };
  }
  if (!created.ok) {
    return {
      ok: false,
      refusal: {
        code: "branch_claimed",
        branch: plan.branch,
        handoffId: created.conflicting.id,
        state: created.conflicting.state,
      },
    };
  }
  const reserved = environmentNote(created.manifest, ctx.recoveryCli);
  if (reserved !== undefined) plan.notes.push(reserved);
  return { ok: true, manifest: created.manifest };
}

/** Whether a manifest still claims its branch (a failure before the worktree existed does not). */
function holdsBranch(manifest: Manifest): boolean {
  if (manifest.state === "removed") return false;
  if (manifest.state === "failed" && manifest.error?.step === "worktree") return false;
  return true;
}

/**
 * The `pi-handoff` commands that retire handoffs: `remove` and `prune`, printing what the plan
 * (remove/plan.ts, remove/prune.ts) does and loses before anything is done.
 *
 * Invariants:
 * - What a removal loses is printed before anything is removed; `--dry-run` prints the same plan
 *   and refusal the real run would (one `planRemoval`), and changes nothing.
 * - `prune` carries out exactly the actions it printed, each re-checked as it acts; `/handoffs`
 *   runs the plan it asked about (`carryOutPrune`).
 */
import { counted } from "../../text.ts";
import type { RemovalPlan, RemoveOptions } from "../../remove/plan.ts";
import type { planPrune } from "../../remove/prune.ts";
import { type CliDeps, type CliIo, EXIT_OK, EXIT_REFUSED, finish, prefix, Refusal, UsageError } from "../io.ts";

/** What `prune` found to do, and what it could not check or leaves alone (remove/prune.ts `planPrune`). */
type PrunePlan = Awaited<ReturnType<typeof planPrune>>;

export async function remove(
  deps: CliDeps,
  io: CliIo,
  id: string,
  options: RemoveOptions & { dryRun: boolean },
): Promise<number> {
  const [{ planRemoval }, { describeRemovalPlan }, { removeHandoff }] = await Promise.all([
    import("../../remove/plan.ts"),
    import("../../remove/words.ts"),
    import("../../remove/remove.ts"),
  ]);
  const printPlan = (plan: RemovalPlan, proceeding: boolean): void =>
    io.stdout(`${describeRemovalPlan(plan, proceeding ? "will" : "would").join("\n")}\n`);
  if (options.dryRun) {
    const planned = await planRemoval(deps, id, options);
    if (planned.plan !== undefined) printPlan(planned.plan, false);
    if (planned.code === "refused") {
      if (planned.reason === "not_found") throw new UsageError(planned.message, "remove");
      throw new Refusal(`Dry run: ${planned.message}`, "remove");
    }
    io.stdout("Dry run: nothing was removed.\n");
    return EXIT_OK;
  }
  const outcome = await removeHandoff(deps, id, options, printPlan);
  return finish(io, "remove", outcome.message, {
    done: outcome.code === "removed",
    notFound: outcome.code === "refused" && outcome.reason === "not_found",
  });
}

export async function prune(deps: CliDeps, io: CliIo, dryRun: boolean, merged: boolean): Promise<number> {
  const { planPrune } = await import("../../remove/prune.ts");
  return carryOutPrune(deps, io, await planPrune(deps, { merged }), dryRun);
}

/**
 * What `prune` prints of a plan and, unless a dry run, carries out exactly that plan's actions
 * (each re-checked as it acts), with its results; the exit status. `/handoffs` runs the plan it asked about.
 */
export async function carryOutPrune(
  deps: CliDeps,
  io: Pick<CliIo, "stdout" | "stderr" | "program">,
  { actions, problems, notes }: PrunePlan,
  dryRun: boolean,
): Promise<number> {
  const [{ describePruneAction }, { executePrune }] = await Promise.all([
    import("../../remove/words.ts"),
    import("../../remove/prune.ts"),
  ]);
  for (const problem of problems) io.stderr(`${prefix(io, "prune")}${problem}\n`);
  for (const note of notes) io.stdout(`${note}\n`);
  if (actions.length === 0) {
    io.stdout("Nothing to prune.\n");
    return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  }
  io.stdout(`${dryRun ? "Would do (dry run, nothing changed):" : "Pruning:"}\n`);
  for (const action of actions)
    io.stdout(
      `${describePruneAction(action)
        .map((line) => `  ${line}`)
        .join("\n")}\n`,
    );
  if (dryRun) return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  const results = await executePrune(deps, actions);
  let failed = problems.length > 0;
  for (const result of results) {
    if (!result.ok) {
      failed = true;
      io.stderr(`${prefix(io, "prune")}${result.message}\n`);
    } else if (result.note !== undefined) io.stdout(`${result.note}\n`);
  }
  io.stdout(`Done: ${results.filter((result) => result.ok).length} of ${counted(results.length, "action")}.\n`);
  return failed ? EXIT_REFUSED : EXIT_OK;
}

/**
 * The delivery ledger: which `(source, run, outcome)` triples this session (or any session it was
 * forked from) has already been told about. It lives in the session itself as custom entries, so
 * a restart reads it back and a fork inherits it with the copied history.
 *
 * Invariants:
 * - Append-only: a delivery adds one entry listing every triple the message carried; nothing is
 *   ever removed, so a triple once delivered stays delivered.
 * - Reading tolerates entries it cannot decode (skipped), and extra fields (kept by Pi, ignored).
 */
import { z } from "zod";
import { deliveryKey, type AdoptedRun, type LineageEntryView } from "./types.ts";

export const LINEAGE_LEDGER_TYPE = "handoff-worktree-lineage-ledger";

export const DeliveredTripleSchema = z.object({ source: z.string(), runId: z.string(), outcome: z.string() });
/** One delivered thing: an adopted run's outcome, or a handoff report (`source` says which). */
export type DeliveredTriple = z.infer<typeof DeliveredTripleSchema>;
export const LedgerEntryDataSchema = z.looseObject({
  version: z.literal(1),
  kind: z.string(),
  at: z.string(),
  delivered: z.array(DeliveredTripleSchema),
});
export type LedgerEntryData = z.infer<typeof LedgerEntryDataSchema>;

/** Every delivery key recorded in these entries (pass all of the session's entries). */
export function readLedger(entries: readonly LineageEntryView[]): Set<string> {
  const keys = new Set<string>();
  for (const entry of entries) {
    if (entry.type !== "custom" || entry.customType !== LINEAGE_LEDGER_TYPE) continue;
    const parsed = LedgerEntryDataSchema.safeParse(entry.data);
    if (!parsed.success) continue;
    for (const triple of parsed.data.delivered) keys.add(JSON.stringify([triple.source, triple.runId, triple.outcome]));
  }
  return keys;
}

export function ledgerEntryFor(runs: readonly DeliveredTriple[], kind: string, now: Date): LedgerEntryData {
  return {
    version: 1,
    kind,
    at: now.toISOString(),
    delivered: runs.map((run) => ({ source: run.source, runId: run.runId, outcome: run.outcome })),
  };
}

export function isDelivered(
  ledger: ReadonlySet<string>,
  run: Pick<AdoptedRun, "source" | "runId" | "outcome">,
): boolean {
  return ledger.has(deliveryKey(run));
}

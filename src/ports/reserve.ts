/**
 * Choosing a handoff's ports: `count` ports of the settings' range that no live handoff holds
 * (any repository's, as the manifests record them) and that the bind test finds free.
 *
 * Invariants:
 * - Called under the manifest store's lock (`ManifestStore.create`'s `reserve`), with every other
 *   manifest read under that lock, so two handoffs at once never get the same port.
 * - A handoff holds its ports until it is `removed` (remove, land --remove, prune); a removed one's
 *   ports are free for the next. An unreadable manifest holds nothing it could be asked about.
 * - Lowest first, from the range's start: the same settings give the same ports on a quiet machine,
 *   and a port freed by a removal is the next one taken.
 * - Bounded: each bind test by the probe's own timeout, the whole choice by `deadlineMs`; the
 *   answer when not enough are free says how many were found, of how many tried, and why the
 *   first one that failed did.
 */
import type { Manifest } from "../manifest/schema.ts";
import { formatWait } from "../text.ts";
import type { PortProbe } from "./probe.ts";
import type { Outcome } from "../outcome.ts";

export interface PortRequest {
  count: number;
  range: readonly [number, number];
}

export type PortChoice = Outcome<{ ports: number[] }, "ports_unavailable", { found: number[] }>;

/** How long a reservation may test ports before it gives up (it holds the store's lock meanwhile). */
export const RESERVE_DEADLINE_MS = 5_000;

/** Every port a live handoff of these manifests holds. */
export function portsHeldBy(manifests: Iterable<Manifest>): Set<number> {
  const held = new Set<number>();
  for (const manifest of manifests) {
    if (manifest.state === "removed") continue;
    for (const port of manifest.ports ?? []) held.add(port);
  }
  return held;
}

export async function choosePorts(
  request: PortRequest,
  held: ReadonlySet<number>,
  probe: PortProbe,
  /** `recoveryCommand`: how the user runs `pi-handoff` (src/child/pi-command.ts), named in a refusal. */
  options: { recoveryCommand: string; deadlineMs?: number; nowMs?: () => number },
): Promise<PortChoice> {
  const nowMs = options.nowMs ?? Date.now;
  const deadlineMs = options.deadlineMs ?? RESERVE_DEADLINE_MS;
  const deadline = nowMs() + deadlineMs;
  const [first, last] = request.range;
  const found: number[] = [];
  let tried = 0;
  let firstRefusal: string | undefined;
  for (let port = first; port <= last && found.length < request.count; port += 1) {
    if (held.has(port)) continue;
    if (nowMs() > deadline) {
      return unavailable(
        request,
        found,
        options.recoveryCommand,
        `gave up after ${formatWait(deadlineMs)} of bind tests (${tried} ports tried)`,
      );
    }
    tried += 1;
    const answer = await probe.check(port);
    if (answer.free) found.push(port);
    else firstRefusal ??= answer.reason;
  }
  if (found.length === request.count) return { ok: true, ports: found };
  const heldInRange = [...held].filter((port) => port >= first && port <= last).length;
  const why = [
    heldInRange > 0 ? `${heldInRange} held by other handoffs` : undefined,
    tried - found.length > 0
      ? `${tried - found.length} not free${firstRefusal === undefined ? "" : ` (first: ${firstRefusal})`}`
      : undefined,
  ].filter((part) => part !== undefined);
  return unavailable(
    request,
    found,
    options.recoveryCommand,
    why.length > 0 ? why.join(", ") : "the range has no other ports",
  );
}

function unavailable(request: PortRequest, found: number[], cli: string, why: string): PortChoice {
  const [first, last] = request.range;
  return {
    ok: false,
    code: "ports_unavailable",
    found,
    message: `Only ${found.length} of the ${request.count} ports asked for are free in ${first}-${last} (${why}); remove handoffs you no longer need (${cli} list), or widen "ports" in the settings.`,
  };
}

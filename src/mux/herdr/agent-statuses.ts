/**
 * What Herdr itself says each handoff child's agent is doing (`agent_status`: idle, working,
 * blocked, done, unknown), for the parent's live view of its children (watch/watch.ts).
 *
 * Invariants:
 * - Read-only: one `herdr pane list` per Herdr server among the manifests it is given (the watch
 *   gives only live children), per refresh; tmux knows no agent status and is never asked.
 * - Optional evidence: a server that does not answer, or a pane it no longer lists, leaves that
 *   child without a status (the session tail and the lease decide alone); nothing here throws.
 * - Each call is bounded by the Herdr health wait (`PI_HANDOFF_HERDR_PING_TIMEOUT_MS`): a
 *   server that hangs delays one refresh of the widget by about that much, not more.
 */
import { readWaits } from "../../config/waits.ts";
import type { AgentStatusesOf } from "../terminal.ts";
import { HerdrMultiplexer } from "./herdr.ts";

export function herdrAgentStatuses(env: Readonly<Record<string, string | undefined>>): AgentStatusesOf {
  const { herdrPingMs } = readWaits(env, ["herdrPingMs"]);
  // One backend per server for the life of the watch, not one per refresh.
  const backends = new Map<string | undefined, HerdrMultiplexer>();
  const backendFor = (socketPath: string | undefined): HerdrMultiplexer => {
    let backend = backends.get(socketPath);
    if (backend === undefined) {
      backend = HerdrMultiplexer.fromEnvironment(
        socketPath === undefined ? env : { ...env, HERDR_SOCKET_PATH: socketPath },
        { timeoutMs: herdrPingMs },
      );
      backends.set(socketPath, backend);
    }
    return backend;
  };
  return async (manifests) => {
    // Pane ids are per server: group the live Herdr children by the socket their manifest records.
    const bySocket = new Map<string | undefined, { id: string; paneId: string }[]>();
    for (const manifest of manifests) {
      const mux = manifest.mux;
      if (manifest.state === "removed" || mux.kind !== "herdr" || mux.paneId === undefined) continue;
      const group = bySocket.get(mux.socketPath) ?? [];
      group.push({ id: manifest.id, paneId: mux.paneId });
      bySocket.set(mux.socketPath, group);
    }
    const statuses = new Map<string, string>();
    await Promise.all(
      [...bySocket].map(async ([socketPath, children]) => {
        const listed = await backendFor(socketPath).paneAgentStatuses();
        if (!listed.ok) return;
        for (const child of children) {
          const status = listed.statuses.get(child.paneId);
          if (status !== undefined) statuses.set(child.id, status);
        }
      }),
    );
    return statuses;
  };
}

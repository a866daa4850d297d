/**
 * Whether a TCP port is free on this machine: the bind test a reservation (reserve.ts) and
 * `pi-handoff inspect` ask. The only module that opens sockets (test/unit/ownership-rules.test.ts).
 *
 * Invariants:
 * - A port is free when it can be bound on 127.0.0.1 and on ::1, where servers started for a
 *   handoff listen; a system without IPv6 (::1 cannot be bound at all) is asked about 127.0.0.1 only.
 * - Each bind is closed again at once and bounded by `BIND_TIMEOUT_MS`; nothing listens after an
 *   answer, and no connection is ever accepted.
 * - An answer that is not "bound" is never "free": an error other than the address being in use
 *   (no permission, a timeout) is `free: false` with its reason, so a port is never reserved on a guess.
 */
import { createServer } from "node:net";
import { errorClause } from "../errors.ts";
import { formatWait } from "../text.ts";

export type PortAnswer = { free: true } | { free: false; inUse: boolean; reason: string };

/** The bind test, as a port the reservation and recovery take (tests pass fakes). */
export interface PortProbe {
  check(port: number): Promise<PortAnswer>;
}

/** The loopback addresses a handoff's servers are reached on from the parent. */
export const LOOPBACK_ADDRESSES = ["127.0.0.1", "::1"] as const;
const BIND_TIMEOUT_MS = 2_000;

/** Codes that say the address family is not there (no IPv6), not that the port is taken. */
const FAMILY_MISSING = new Set(["EADDRNOTAVAIL", "EAFNOSUPPORT"]);

type BindAnswer = { code: "bound" } | { code: "in_use" } | { code: "no_family" } | { code: "error"; reason: string };

function bindOnce(port: number, host: string): Promise<BindAnswer> {
  return new Promise((resolve) => {
    const server = createServer();
    let settled = false;
    const finish = (answer: BindAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (server.listening) server.close(() => resolve(answer));
      else resolve(answer);
    };
    const timer = setTimeout(
      () =>
        finish({ code: "error", reason: `binding ${host}:${port} took longer than ${formatWait(BIND_TIMEOUT_MS)}` }),
      BIND_TIMEOUT_MS,
    );
    server.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") finish({ code: "in_use" });
      else if (error.code !== undefined && FAMILY_MISSING.has(error.code)) finish({ code: "no_family" });
      else finish({ code: "error", reason: `${host}:${port} could not be bound (${errorClause(error)})` });
    });
    server.once("listening", () => {
      // A bind that completes after the timeout answered is closed at once: nothing stays listening.
      if (settled) server.close();
      else finish({ code: "bound" });
    });
    // `exclusive`: never share a handle with a cluster primary; no backlog is needed for a bind test.
    server.listen({ port, host, exclusive: true, backlog: 1 });
  });
}

/** The real bind test on 127.0.0.1 and ::1. */
export const loopbackProbe: PortProbe = {
  async check(port) {
    for (const host of LOOPBACK_ADDRESSES) {
      const answer = await bindOnce(port, host);
      if (answer.code === "in_use") return { free: false, inUse: true, reason: `something listens on ${host}:${port}` };
      if (answer.code === "error") return { free: false, inUse: false, reason: answer.reason };
      // IPv4 must be there; a missing IPv6 only means no server can listen on ::1 either.
      if (answer.code === "no_family" && host === "127.0.0.1")
        return { free: false, inUse: false, reason: `${host} cannot be bound on this machine` };
    }
    return { free: true };
  },
};

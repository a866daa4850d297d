/**
 * Every terminal's location schema in one discriminated union: what a manifest records as `mux`.
 *
 * Invariants:
 * - Each terminal's location is defined here, once (a strict object: `kind` plus optional strings,
 *   in the order they are written, so a manifest's bytes are stable and an unknown field is a
 *   decoding error); adding a terminal adds its schema here and its descriptor to
 *   src/mux/registry.ts. It lives with the manifest, below src/mux/, because the manifest records
 *   it and the settings name its kinds: the terminals' code imports it, never the other way.
 * - Only schemas: nothing here constructs a backend, so the manifest's schema can import it without
 *   loading any terminal's code.
 */
import { z } from "zod";

/** A location schema for `kind` with these optional string fields (ids, a socket path). */
function locationSchema<K extends string, F extends string>(kind: K, ...fields: F[]) {
  const optional = Object.fromEntries(fields.map((field) => [field, z.string().optional()])) as Record<
    F,
    z.ZodOptional<z.ZodString>
  >;
  return z.strictObject({ kind: z.literal(kind), ...optional });
}

/**
 * Where a handoff's Herdr workspace is: the server's socket (`$HERDR_SOCKET_PATH`), the workspace,
 * its tab and the root pane, as Herdr prints their ids (any id Herdr prints: protocol.ts).
 */
export const HerdrLocationSchema = locationSchema("herdr", "socketPath", "workspaceId", "tabId", "paneId");
export type HerdrLocation = z.infer<typeof HerdrLocationSchema>;

/**
 * Where a handoff's tmux window is: the server's socket (`$TMUX`'s first field), the session, the
 * window and its pane, as tmux prints their ids (`$3`, `@5`, `%7`), and which server made them
 * (`server`: its pid and start time, `<pid>:<start>`). A tmux server started again on the same
 * socket (after a reboot, or `kill-server`) numbers its panes from `%0` again: without `server`,
 * another window's pane would be taken for the handoff's.
 */
export const TmuxLocationSchema = locationSchema("tmux", "socketPath", "sessionId", "windowId", "paneId", "server");
export type TmuxLocation = z.infer<typeof TmuxLocationSchema>;

/**
 * Where a handoff's zellij tab is: the socket directory its CLI finds sessions in
 * (`ZELLIJ_SOCKET_DIR`, else zellij's own default), the session's name, the tab's stable id and its
 * terminal pane (`terminal_<n>`), as `zellij action list-tabs/list-panes` print them.
 */
export const ZellijLocationSchema = locationSchema("zellij", "socketDir", "sessionName", "tabId", "paneId");
export type ZellijLocation = z.infer<typeof ZellijLocationSchema>;

export const MuxLocationSchema = z.discriminatedUnion("kind", [
  TmuxLocationSchema,
  HerdrLocationSchema,
  ZellijLocationSchema,
]);
export type MuxLocation = z.infer<typeof MuxLocationSchema>;
export type MuxKind = MuxLocation["kind"];

/** Every kind, in the order `--mux` lists them. */
export const MUX_KINDS = ["tmux", "herdr", "zellij"] as const satisfies readonly MuxKind[];

export function isMuxKind(value: string): value is MuxKind {
  return (MUX_KINDS as readonly string[]).includes(value);
}

/** The kinds as a sentence lists them: `tmux, herdr or zellij` (each through `word`). */
export function listMuxKinds(word: (kind: MuxKind) => string = (kind) => kind): string {
  const words = MUX_KINDS.map(word);
  return `${words.slice(0, -1).join(", ")} or ${words.at(-1) ?? ""}`;
}

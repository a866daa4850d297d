/**
 * Every terminal's location schema in one discriminated union: what a manifest records as `mux`.
 *
 * Invariants:
 * - The union and the list of kinds are built from each terminal's own `location.ts`; adding a
 *   terminal adds its schema here and its descriptor to registry.ts, nothing else outside its folder.
 * - Only schemas: nothing here constructs a backend, so the manifest's schema can import it without
 *   loading any terminal's code.
 */
import { z } from "zod";
import { HerdrLocationSchema } from "./herdr/location.ts";
import { TmuxLocationSchema } from "./tmux/location.ts";
import { ZellijLocationSchema } from "./zellij/location.ts";

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

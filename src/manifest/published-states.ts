/**
 * The words a handoff's child publishes for what it is doing (src/child/child-state.ts writes
 * them beside its lease; the terminals show them, src/mux/herdr/sidebar-report.ts): a vocabulary
 * below both, so a terminal names a child's state without loading the child's code.
 *
 * Invariants: the one list of published states; pure constants, no outside call.
 */
export const PUBLISHED_STATES = [
  "starting",
  "working",
  "waiting_input",
  "compacting",
  "idle",
  "moved",
  "exited",
] as const;
export type PublishedState = (typeof PUBLISHED_STATES)[number];

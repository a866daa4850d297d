/**
 * A multiplexer location in words, for notices, recovery and the CLI alike.
 *
 * Invariants: pure; names only what the location records ("no ... window" when it records none).
 */
import type { MuxLocation } from "../manifest/schema.ts";

/** Where a handoff's child lives, as a user finds it. */
export function describeLocation(location: MuxLocation): string {
  if (location.kind === "tmux") {
    return location.windowId !== undefined ? `tmux window ${location.windowId} (pane ${location.paneId ?? "?"})` : "no tmux window";
  }
  return location.workspaceId !== undefined ? `Herdr workspace ${location.workspaceId} (pane ${location.paneId ?? "?"})` : "no Herdr workspace";
}

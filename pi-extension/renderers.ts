/**
 * How this package's messages look in the TUI: compact by default, the full text when expanded.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Box, Text } from "@earendil-works/pi-tui";
import { HANDOFF_MESSAGE_TYPE, HandoffDetailsSchema } from "../src/session/handoff-message.ts";

export function registerRenderers(pi: ExtensionAPI): void {
  pi.registerMessageRenderer(HANDOFF_MESSAGE_TYPE, (message, { expanded, outputPad }, theme) => {
    const parsed = HandoffDetailsSchema.safeParse(message.details);
    const content = typeof message.content === "string" ? message.content : "";
    let text: string;
    if (!parsed.success) {
      text = content;
    } else {
      const d = parsed.data;
      const title = theme.fg("accent", "⇢ Handed off to a worktree");
      const summary = `${title} ${theme.bold(d.branch)} from ${d.baseRef} (${d.baseSha.slice(0, 12)})\n${theme.fg("dim", d.worktreePath)}`;
      const task = d.hasTask ? "\nwith a task" : "\nno task: waiting for you";
      text = expanded ? `${summary}\n\n${content}` : `${summary}${theme.fg("dim", task)}`;
    }
    const box = new Box(outputPad, 1, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(text, 0, 0));
    return box;
  });
}

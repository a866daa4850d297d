/**
 * What the Herdr backend tells Herdr about the agents in its panes (the child's session, its state
 * for the sidebar) and what it reads back (each pane's agent status and session).
 *
 * Invariants:
 * - Reports go out under Herdr's own Pi source and label (`herdr:pi`/`pi`), sequenced as Herdr's
 *   own Pi integration sequences them, so Herdr takes them (src/terminal/state.rs
 *   `accept_hook_report`); a session path Herdr would refuse (relative, control characters) is
 *   never sent.
 * - Where Herdr's own Pi integration is installed (`herdrPiIntegrationInstalled`), it reports, and
 *   the child must not report beside it under the same source.
 * - Reading statuses is read-only and optional evidence: a failure is a value, never a throw.
 */
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { MuxLocation } from "../../manifest/schema.ts";
import type { MuxResult, PaneAgent } from "../types.ts";
import { publicFailure, type HerdrClient } from "./client.ts";
import { paneOf } from "./paths.ts";
import {
  LIVE_AGENT_STATUSES,
  PaneListSchema,
  PI_AGENT_LABEL,
  PI_AGENT_SOURCE,
  type HerdrPaneInfo,
} from "./protocol.ts";

/** The states `pane report-agent --state` takes. */
export type HerdrAgentState = "idle" | "working" | "blocked";

export async function reportChildSession(
  client: HerdrClient,
  location: MuxLocation,
  sessionFile: string,
): Promise<MuxResult<object>> {
  const pane = paneOf(location, client.socketPath);
  if (!pane.ok) return pane;
  if (!isAbsolute(sessionFile) || /\p{Cc}/u.test(sessionFile)) {
    return {
      ok: false,
      code: "invalid_session_file",
      message: `The session file ${JSON.stringify(sessionFile)} cannot be reported to Herdr.`,
    };
  }
  const reported = await client.send(
    [
      "pane",
      "report-agent-session",
      pane.paneId,
      "--source",
      PI_AGENT_SOURCE,
      "--agent",
      PI_AGENT_LABEL,
      "--agent-session-path",
      sessionFile,
      // Without a sequence number and a recognised start, Herdr drops a report for the official
      // Pi source without a word once its own Pi integration has reported (src/terminal/state.rs
      // set_agent_session_ref_for_session_start); the scheme is that integration's own.
      "--seq",
      String(nextReportSequence()),
      "--session-start-source",
      "startup",
    ],
    "pane report-agent-session",
    { socketPath: pane.socketPath },
  );
  return reported.ok ? { ok: true } : publicFailure(reported);
}

/**
 * This pane's agent state for Herdr's sidebar, sent as Herdr's own Pi integration sends it
 * (`pane report-agent --source herdr:pi --agent pi`, sequenced, with the session's path): Herdr
 * drops an unsequenced report once a sequenced one was taken (src/terminal/state.rs
 * `accept_hook_report`). Only for a child whose Pi runs without Herdr's own integration.
 */
export async function reportAgentState(
  client: HerdrClient,
  paneId: string,
  report: { state: HerdrAgentState; seq: number; sessionFile?: string },
): Promise<MuxResult<object>> {
  const sent = await client.send(
    [
      "pane",
      "report-agent",
      paneId,
      "--source",
      PI_AGENT_SOURCE,
      "--agent",
      PI_AGENT_LABEL,
      "--state",
      report.state,
      "--seq",
      String(report.seq),
      ...reportableSession(report.sessionFile),
    ],
    "pane report-agent",
  );
  return sent.ok ? { ok: true } : publicFailure(sent);
}

/**
 * The session this pane's Pi started on, with why (`--session-start-source`: startup, new, resume,
 * fork) and a sequence number: what Herdr needs to take a session from the child itself before its
 * process detection has caught up (`set_agent_session_ref_for_session_start`).
 */
export async function reportAgentSessionStart(
  client: HerdrClient,
  paneId: string,
  report: { seq: number; sessionFile: string; startSource?: string },
): Promise<MuxResult<object>> {
  const session = reportableSession(report.sessionFile);
  if (session.length === 0) return { ok: true };
  const sent = await client.send(
    [
      "pane",
      "report-agent-session",
      paneId,
      "--source",
      PI_AGENT_SOURCE,
      "--agent",
      PI_AGENT_LABEL,
      "--seq",
      String(report.seq),
      ...session,
      ...(report.startSource === undefined ? [] : ["--session-start-source", report.startSource]),
    ],
    "pane report-agent-session",
  );
  return sent.ok ? { ok: true } : publicFailure(sent);
}

/**
 * Herdr's `agent_status` of every pane on this server, by pane id (one `pane list`), for a
 * parent's cheap refresh of its children. Read-only; a server that does not answer is a failure
 * the caller shows as "not known".
 */
export async function paneAgentStatuses(
  client: HerdrClient,
): Promise<MuxResult<{ statuses: ReadonlyMap<string, string> }>> {
  const listed = await client.call(["pane", "list"], PaneListSchema, "pane list", { socketPath: client.socketPath });
  if (!listed.ok) return publicFailure(listed);
  return { ok: true, statuses: new Map(listed.result.panes.map((pane) => [pane.pane_id, pane.agent_status])) };
}

/**
 * Herdr's view of the agent in a pane: its status, the session it reported, and (while an agent
 * is detected) the foreground pids, so recovery can name a writer even where process facts cannot be read.
 */
export async function paneAgent(
  client: HerdrClient,
  pane: HerdrPaneInfo,
  socketPath: string | undefined,
): Promise<PaneAgent | undefined> {
  const session = pane.agent_session;
  const sessionFile =
    session !== undefined && session.kind === "path" && session.agent === PI_AGENT_LABEL ? session.value : undefined;
  if (pane.agent_status === "unknown" && sessionFile === undefined && pane.agent === undefined) return undefined;
  let pids: number[] | undefined;
  // Herdr may see its Pi running while it cannot tell the state (a Pi it resumed after a restart
  // reads `unknown` once its restored state is dropped): the agent label still says one runs.
  if (LIVE_AGENT_STATUSES.has(pane.agent_status) || pane.agent === PI_AGENT_LABEL) {
    const info = await client.processInfo(pane.pane_id, socketPath);
    if (info.ok) {
      const { shell_pid: shellPid, foreground_process_group_id: foreground } = info.result.process_info;
      // Herdr still shows a Pi for a tick or two after its shell got the foreground back (an idle
      // "process exit" first, src/pane.rs foreground_shell_agent_action): the shell is no agent.
      if (shellPid === undefined || foreground !== shellPid)
        pids = info.result.process_info.foreground_processes.map((process) => process.pid);
    }
  }
  return {
    status: pane.agent_status,
    ...(pane.agent !== undefined ? { label: pane.agent } : {}),
    ...(sessionFile !== undefined ? { sessionFile } : {}),
    ...(pids !== undefined ? { pids } : {}),
  };
}

/**
 * The sequence number of a session report: increasing within this process and, being microseconds
 * of the clock as Herdr's own Pi integration counts them, above every report a Pi made before.
 */
let lastReportSequence = 0;
function nextReportSequence(): number {
  lastReportSequence = Math.max(lastReportSequence + 1, Date.now() * 1000);
  return lastReportSequence;
}

/** `--agent-session-path <file>` for a path Herdr takes (absolute, no control characters), else nothing. */
function reportableSession(sessionFile: string | undefined): string[] {
  if (sessionFile === undefined || !isAbsolute(sessionFile) || /\p{Cc}/u.test(sessionFile)) return [];
  return ["--agent-session-path", sessionFile];
}

/**
 * Whether Herdr's own Pi integration is installed for this agent dir (`herdr integration install
 * pi` writes `<agent dir>/extensions/herdr-agent-state.ts`, marked `HERDR_INTEGRATION_ID=pi`;
 * src/integration/targets.rs): then it reports Pi's state itself, and the child must not report
 * beside it under the same source.
 */
export function herdrPiIntegrationInstalled(agentDir: string): boolean {
  try {
    return readFileSync(join(agentDir, "extensions", HERDR_PI_INTEGRATION_FILE), "utf8").includes(
      "HERDR_INTEGRATION_ID=pi",
    );
  } catch {
    return false;
  }
}

const HERDR_PI_INTEGRATION_FILE = "herdr-agent-state.ts";

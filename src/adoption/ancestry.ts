/**
 * The ancestry of a session: follow `parentSession` from header to header.
 *
 * Invariants:
 * - Reads header lines only (`readSessionHeader`), never whole session files, and writes nothing.
 * - At most `MAX_LINEAGE_DEPTH` ancestors; a cycle (a header pointing back into the chain) stops
 *   the walk with a note, it never loops.
 * - Never throws: a missing or unreadable ancestor is recorded as such and ends the walk there
 *   (its own parent cannot be known), and a bare session id in place of a path is looked up
 *   beside the session that names it and otherwise kept as an id.
 */
import { readdirSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { readSessionHeader } from "../session/header.ts";

export const MAX_LINEAGE_DEPTH = 8;

export interface SessionIdentity {
  /** The session file, when there is one. */
  sessionFile?: string | undefined;
  /** The header id. */
  sessionId?: string | undefined;
  /** The header timestamp (creation time), in ms. */
  createdAt?: number | undefined;
  cwd?: string | undefined;
}

export interface Ancestor extends SessionIdentity {
  /** 1 for the parent, 2 for the grandparent, ... */
  depth: number;
  /** The `parentSession` value exactly as the child's header holds it. */
  ref: string;
  /**
   * When the session one level below was created from this one (that session's header
   * timestamp): what this ancestor had delivered before then is already in the copied history.
   */
  forkedAt?: number | undefined;
  /** How the header was found: read from a file, or known only by id (file missing/unknown). */
  found: "file" | "id-only" | "missing" | "invalid";
}

export interface Lineage {
  current: SessionIdentity;
  ancestors: Ancestor[];
  notes: string[];
}

export interface CurrentSessionInput {
  sessionFile?: string | undefined;
  sessionId?: string | undefined;
  /** The current header's `parentSession`. */
  parentSession?: string | undefined;
  /** The current header's timestamp (ISO). */
  timestamp?: string | undefined;
  cwd?: string | undefined;
}

function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** A `parentSession` value that names a file (absolute path or something with a separator or suffix). */
function looksLikePath(ref: string): boolean {
  return isAbsolute(ref) || ref.includes("/") || ref.includes("\\") || ref.endsWith(".jsonl");
}

/**
 * A bare session id: Pi names files `<timestamp>_<id>.jsonl`, so the file of an id is looked up in
 * the directory of the session that refers to it (where Pi keeps the sessions of one cwd).
 */
function findSessionFileById(id: string, nearFile: string | undefined): string | undefined {
  if (nearFile === undefined || !/^[A-Za-z0-9._-]+$/.test(id)) return undefined;
  let names: string[];
  try {
    names = readdirSync(dirname(nearFile));
  } catch {
    return undefined;
  }
  const match = names.find((name) => name.endsWith(`_${id}.jsonl`));
  return match === undefined ? undefined : join(dirname(nearFile), match);
}

export function walkLineage(current: CurrentSessionInput, maxDepth = MAX_LINEAGE_DEPTH): Lineage {
  const notes: string[] = [];
  const ancestors: Ancestor[] = [];
  const seen = new Set<string>();
  const remember = (identity: SessionIdentity): void => {
    if (identity.sessionFile !== undefined) seen.add(`file:${canonical(identity.sessionFile)}`);
    if (identity.sessionId !== undefined) seen.add(`id:${identity.sessionId}`);
  };
  const currentIdentity: SessionIdentity = {
    sessionFile: current.sessionFile,
    sessionId: current.sessionId,
    createdAt: parseTime(current.timestamp),
    cwd: current.cwd,
  };
  remember(currentIdentity);

  let ref = current.parentSession;
  let childFile = current.sessionFile;
  let childCreatedAt = currentIdentity.createdAt;
  for (let depth = 1; ref !== undefined && ref.length > 0; depth += 1) {
    if (depth > maxDepth) {
      notes.push(`The lineage is deeper than ${maxDepth} sessions; older ancestors were not looked at.`);
      break;
    }
    const step = stepUp({ depth, ref, forkedAt: childCreatedAt }, childFile, seen);
    if (step.ancestor !== undefined) ancestors.push(step.ancestor);
    if (step.kind === "stop") {
      notes.push(step.note);
      break;
    }
    remember(step.ancestor);
    ref = step.parentRef;
    childFile = step.file;
    childCreatedAt = step.ancestor.createdAt;
  }
  return { current: currentIdentity, ancestors, notes };
}

type Step =
  /** The walk ends here, with a note why (and the ancestor as far as it is known, if at all). */
  | { kind: "stop"; ancestor?: Ancestor; note: string }
  /** The ancestor was read from `file`; its own parent is `parentRef`. */
  | { kind: "read"; ancestor: Ancestor; file: string; parentRef: string | undefined };

/**
 * One step up the chain: the session `base.ref` names (its child's file is `childFile`), unless
 * it is one already `seen` (a cycle) or cannot be read.
 */
function stepUp(
  base: Pick<Ancestor, "depth" | "ref" | "forkedAt">,
  childFile: string | undefined,
  seen: ReadonlySet<string>,
): Step {
  const { ref } = base;
  const isPath = looksLikePath(ref);
  const file = isPath ? ref : findSessionFileById(ref, childFile);
  const cycleKeys = [
    file === undefined ? undefined : `file:${canonical(file)}`,
    isPath ? undefined : `id:${ref}`,
  ].filter((key): key is string => key !== undefined);
  if (cycleKeys.some((key) => seen.has(key)))
    return { kind: "stop", note: `The lineage loops back to ${ref}; the walk stopped there.` };
  if (file === undefined) {
    // A bare id whose file is not beside its child: known by id only, and its parent is unknown.
    return {
      kind: "stop",
      ancestor: { ...base, sessionId: ref, found: "id-only" },
      note: `Ancestor ${ref} is known only by its session id; its own ancestors were not followed.`,
    };
  }
  const read = readSessionHeader(file);
  if (!read.ok) {
    return {
      kind: "stop",
      ancestor: {
        ...base,
        sessionFile: file,
        ...(isPath ? {} : { sessionId: ref }),
        found: read.code === "missing" ? "missing" : "invalid",
      },
      note: read.code === "missing" ? `Ancestor session ${file} is missing; the walk stopped there.` : read.message,
    };
  }
  const header = read.header;
  if (seen.has(`id:${header.id}`))
    return { kind: "stop", note: `The lineage loops back to session ${header.id}; the walk stopped there.` };
  return {
    kind: "read",
    ancestor: {
      ...base,
      sessionFile: file,
      sessionId: header.id,
      createdAt: parseTime(header.timestamp),
      cwd: header.cwd,
      found: "file",
    },
    file,
    parentRef: header.parentSession,
  };
}

/**
 * Every value another extension may have recorded an ancestor under: the `parentSession`
 * reference as written, the file, its real path, and the header id (pi-subagents records the
 * session file, or the bare id for a session that is not saved).
 */
export function ancestorKeys(ancestor: Ancestor): string[] {
  const keys = new Set<string>([ancestor.ref]);
  if (ancestor.sessionFile !== undefined) {
    keys.add(ancestor.sessionFile);
    keys.add(canonical(ancestor.sessionFile));
  }
  if (ancestor.sessionId !== undefined) keys.add(ancestor.sessionId);
  return [...keys];
}

/** Owner key -> the ancestor it belongs to (the nearest one wins if two share a key). */
export function ownerIndex(lineage: Lineage): Map<string, Ancestor> {
  const index = new Map<string, Ancestor>();
  for (const ancestor of lineage.ancestors) {
    for (const key of ancestorKeys(ancestor)) if (!index.has(key)) index.set(key, ancestor);
  }
  return index;
}

/** A short human name for an ancestor: `parent session <file>` etc. */
export function describeAncestor(ancestor: Pick<Ancestor, "depth" | "sessionFile" | "sessionId" | "ref">): string {
  const level =
    ancestor.depth === 1
      ? "parent session"
      : ancestor.depth === 2
        ? "grandparent session"
        : `ancestor session (${ancestor.depth} levels up)`;
  return `${level} ${ancestor.sessionFile ?? ancestor.sessionId ?? ancestor.ref}`;
}

/**
 * Delivering messages into a Pi session at idle points, each at most once: the state machine
 * shared by lineage adoption (session.ts) and handoff reports (reports from a child
 * to its parent), behind a small host port so it runs and is tested without Pi.
 *
 * Invariants:
 * - Delivered only at idle points: `flush` sends nothing while the host is busy or while a settle
 *   is awaited (a turn expected to start, e.g. a handoff child's kickoff); the next `settled()`
 *   (Pi's `agent_settled`) or `release()` (a grace timer) delivers what waits.
 * - Every delivery is followed at once by one ledger entry of the keys it carried; a key in the
 *   ledger (this session's, or one inherited through a fork) or already queued is never queued
 *   again (`known`), so nothing is delivered twice, across restarts too (the ledger is read back
 *   from the session's own entries).
 * - Messages never trigger a turn unless the owner asks (`triggerTurn`): the work they describe was
 *   done by another conversation, and acting on it is the user's call.
 * - A host failure (the runtime went away between the idle check and the send) stops the queue:
 *   nothing is half-delivered, nothing retried on a dead runtime; a note says why, and `onStop`
 *   lets the owner end what feeds it (its poll).
 * - `Poll` never overlaps itself, is unref'd (never keeps Pi alive) and stops for good on `stop()`.
 */
import { errorClause } from "../errors.ts";
import { LINEAGE_LEDGER_TYPE, ledgerEntryFor, type DeliveredTriple } from "./ledger.ts";

export interface DeliveryMessage {
  customType: string;
  content: string;
  display: boolean;
  details?: unknown;
}

/** What the queue needs from Pi. */
export interface DeliveryHost {
  /** Sends a message into the session (idle and without a turn: Pi appends it at once). */
  send(message: DeliveryMessage, options: { triggerTurn: boolean }): void;
  /** Appends a custom entry (not in the model's context) to the session. */
  appendEntry(customType: string, data: unknown): void;
  /** Whether the agent is idle now (false, not a throw, once the runtime is gone). */
  isIdle(): boolean;
}

export interface PendingDelivery {
  kind: string;
  message: DeliveryMessage;
  /** The keys this delivery records (none for a reminder, which repeats known facts). */
  records: readonly DeliveredTriple[];
}

export interface DeliveryQueueOptions {
  /** Hold everything until the first `settled()`/`release()` (a turn is about to start). */
  waitForSettle: boolean;
  triggerTurn?: boolean;
  now?: () => Date;
  /** Called once when the queue stops (a failed send, or `stop()`): e.g. to end the poll that feeds it. */
  onStop?: () => void;
}

export function tripleKey(triple: DeliveredTriple): string {
  return JSON.stringify([triple.source, triple.runId, triple.outcome]);
}

export class DeliveryQueue {
  private readonly host: DeliveryHost;
  private readonly ledger: Set<string>;
  private readonly queued = new Set<string>();
  private queue: PendingDelivery[] = [];
  private waiting: boolean;
  private stopped = false;
  private readonly triggerTurn: boolean;
  private readonly now: () => Date;
  private readonly onStop: (() => void) | undefined;
  readonly notes: string[] = [];

  constructor(host: DeliveryHost, ledger: Set<string>, options: DeliveryQueueOptions) {
    this.host = host;
    this.ledger = ledger;
    this.waiting = options.waitForSettle;
    this.triggerTurn = options.triggerTurn ?? false;
    this.now = options.now ?? (() => new Date());
    this.onStop = options.onStop;
  }

  /** Whether a settle is still awaited before anything may be delivered. */
  get awaitingSettle(): boolean {
    return this.waiting;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Delivered already (ledger) or waiting to be. */
  known(triple: DeliveredTriple): boolean {
    const key = tripleKey(triple);
    return this.ledger.has(key) || this.queued.has(key);
  }

  /** Every key delivered or queued (a snapshot). */
  knownKeys(): ReadonlySet<string> {
    return new Set([...this.ledger, ...this.queued]);
  }

  enqueue(delivery: PendingDelivery): void {
    if (this.stopped) return;
    for (const triple of delivery.records) this.queued.add(tripleKey(triple));
    this.queue.push(delivery);
  }

  /** Drops what waits of `kind` (e.g. an outdated reminder), then queues `delivery` if given. */
  replace(kind: string, delivery: PendingDelivery | undefined): void {
    this.queue = this.queue.filter((item) => item.kind !== kind);
    if (delivery !== undefined) this.enqueue(delivery);
  }

  /** An idle point: Pi settled after a turn. */
  settled(): void {
    this.waiting = false;
    this.flush();
  }

  /** The awaited settle is not coming (no turn started): deliver at the next idle point. */
  release(): void {
    this.settled();
  }

  /**
   * Deliver everything queued, now, if and only if the host is at an idle point; `triggerTurn`
   * overrides the owner's choice for this flush (a delivery at session start never races a prompt).
   */
  flush(options: { triggerTurn?: boolean } = {}): void {
    if (this.stopped || this.waiting || this.queue.length === 0 || !this.idle()) return;
    const items = this.queue;
    this.queue = [];
    const triggerTurn = options.triggerTurn ?? this.triggerTurn;
    for (const item of items) {
      try {
        this.host.send(item.message, { triggerTurn });
        if (item.records.length > 0) {
          this.host.appendEntry(LINEAGE_LEDGER_TYPE, ledgerEntryFor(item.records, item.kind, this.now()));
          for (const triple of item.records) this.ledger.add(tripleKey(triple));
        }
      } catch (error) {
        this.notes.push(`delivery failed: ${errorClause(error)}`);
        this.stop();
        return;
      }
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.queue = [];
    this.onStop?.();
  }

  private idle(): boolean {
    try {
      return this.host.isIdle();
    } catch {
      // A context from a replaced runtime: this session is over.
      return false;
    }
  }
}

/** A repeating check that never overlaps itself and never keeps the process alive. */
export class Poll {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = false;
  private readonly tick: () => Promise<void>;
  private readonly ms: number;

  constructor(tick: () => Promise<void>, ms: number) {
    this.tick = tick;
    this.ms = ms;
  }

  get active(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.run(), this.ms);
    this.timer.unref();
  }

  /** Stops the repetition (it can be started again, unless `stop` was called). */
  pause(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.stopped = true;
    this.pause();
  }

  private async run(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      await this.tick();
    } catch {
      // A failed check is retried on the next tick; the tick records its own notes.
    } finally {
      this.running = false;
    }
  }
}

/**
 * The exit grace (src/process/exit-grace.ts) on a real socket: output that reached the pipe before
 * the grace's timer fired is read, even when the event loop came late to it (a loaded machine); a
 * pipe that stays open and silent ends the call after the grace, destroyed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { graceAfterExit } from "../../src/process/exit-grace.ts";

const cleanups: Array<() => void> = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A connected pair of sockets: what `writer` writes, `reader` reads, through the kernel. */
async function socketPair(): Promise<{ reader: net.Socket; writer: net.Socket }> {
  const dir = mkdtempSync(join(tmpdir(), "phw-grace-"));
  const path = join(dir, "s");
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once("connection", resolve));
  const writer = net.connect(path);
  await new Promise<void>((resolve) => writer.once("connect", () => resolve()));
  const reader = await accepted;
  cleanups.push(() => {
    reader.destroy();
    writer.destroy();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { reader, writer };
}

function busyFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // The loop is late, as on a loaded machine.
  }
}

describe("the exit grace", () => {
  it("keeps output that was in the pipe when its timer fired, though the loop came to the pipe late", async () => {
    const { reader, writer } = await socketPair();
    const received: Buffer[] = [];
    reader.on("data", (chunk: Buffer) => received.push(chunk));
    const ended = new Promise<void>((resolve) => graceAfterExit([reader], resolve, 20));
    writer.write("2\n");
    // The answer sits in the kernel's buffer while the loop is busy past the grace.
    busyFor(100);
    await ended;
    expect(Buffer.concat(received).toString()).toBe("2\n");
    expect(reader.destroyed).toBe(true);
  });

  it("ends a silent pipe that stays open after the grace, destroyed, and waits again while bytes arrive", async () => {
    const { reader, writer } = await socketPair();
    const received: Buffer[] = [];
    reader.on("data", (chunk: Buffer) => received.push(chunk));
    let done = false;
    const ended = new Promise<void>((resolve) =>
      graceAfterExit(
        [reader],
        () => {
          done = true;
          resolve();
        },
        50,
      ),
    );
    const drip = setInterval(() => writer.write("x"), 20);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(done).toBe(false);
    clearInterval(drip);
    await ended;
    expect(received.length).toBeGreaterThan(0);
    expect(reader.destroyed).toBe(true);
    expect(writer.destroyed).toBe(false);
  });

  it("ends a pipe that never stops at the most it waits after the exit, with what arrived", async () => {
    const { reader, writer } = await socketPair();
    let received = 0;
    reader.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    const drip = setInterval(() => writer.write("x"), 10);
    cleanups.push(() => clearInterval(drip));
    const started = Date.now();
    await new Promise<void>((resolve) => graceAfterExit([reader], resolve, 30, 300));
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(300);
    expect(received).toBeGreaterThan(0);
    expect(reader.destroyed).toBe(true);
  });

  it("does nothing once cancelled", async () => {
    const { reader } = await socketPair();
    let done = false;
    const grace = graceAfterExit(
      [reader],
      () => {
        done = true;
      },
      10,
    );
    grace.cancel();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(done).toBe(false);
    expect(reader.destroyed).toBe(false);
  });
});

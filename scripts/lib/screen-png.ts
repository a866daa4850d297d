/**
 * Terminal screens (text with ANSI SGR colour codes, as `tmux capture-pane -e -p -J` prints them)
 * rendered to one PNG: monospace text on a dark background, each screen under its own title,
 * stacked or side by side. Pure JavaScript (pureimage and the DejaVu fonts from devDependencies),
 * so it runs offline on any machine with Node and no system packages.
 *
 * Invariants:
 * - Pure: text in, PNG bytes out; the only files read are the two font files (once per process).
 * - Honours the 16 basic colours (30-37, 90-97, 40-47, 100-107), 256 colours (38;5 / 48;5),
 *   truecolor (38;2 / 48;2), bold (the bold face), dim, reverse and underline; every other escape
 *   sequence is dropped, never drawn.
 * - One character is one cell (the screens come from a terminal grid); a character the font lacks
 *   is drawn as the font's missing-glyph box, so the grid never shifts.
 * - Glyphs are rasterised once per (character, face) and then blitted, so a full screen takes well
 *   under a second rather than one vector fill per cell.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import * as PImage from "pureimage";

export type Rgb = readonly [number, number, number];

export interface ScreenPanel {
  title: string;
  /** The screen: lines separated by `\n`, with ANSI SGR sequences. */
  text: string;
}

export interface ScreenPngOptions {
  /** Font size in pixels (default 15: a whole-pixel cell width for DejaVu Sans Mono). */
  fontSize?: number;
  /** `stacked` (default): one screen under the other; `side-by-side`: next to each other. */
  layout?: "stacked" | "side-by-side";
  /** Columns per screen (default: the longest line of any screen). */
  columns?: number;
  /** Rows per screen (default: the most lines of any screen, trailing blank lines dropped). */
  rows?: number;
}

/** The geometry of a rendering, for callers (and tests) that need to find a cell. */
export interface ScreenLayout {
  width: number;
  height: number;
  cellWidth: number;
  cellHeight: number;
  columns: number;
  rows: number;
  /** Top-left pixel of each screen's first cell. */
  origins: { x: number; y: number }[];
}

export const BACKGROUND: Rgb = [0x1d, 0x1f, 0x21];
export const FOREGROUND: Rgb = [0xd0, 0xd3, 0xd0];
const TITLE_BACKGROUND: Rgb = [0x33, 0x37, 0x3d];
const TITLE_FOREGROUND: Rgb = [0xf0, 0xf0, 0xf0];
const FRAME: Rgb = [0x4a, 0x4f, 0x57];
const DEFAULT_FONT_SIZE = 15;
const MARGIN = 16;
const GAP = 16;
const PADDING = 8;

/** The 16 basic colours (a Tango-like palette: readable on a dark background). */
export const PALETTE_16: readonly Rgb[] = [
  [0x2e, 0x34, 0x36],
  [0xef, 0x29, 0x29],
  [0x8a, 0xe2, 0x34],
  [0xfc, 0xe9, 0x4f],
  [0x72, 0x9f, 0xcf],
  [0xad, 0x7f, 0xa8],
  [0x34, 0xe2, 0xe2],
  [0xd3, 0xd7, 0xcf],
  [0x55, 0x57, 0x53],
  [0xff, 0x6e, 0x6e],
  [0xb5, 0xf5, 0x7a],
  [0xff, 0xf5, 0x8a],
  [0x9c, 0xc4, 0xf0],
  [0xd8, 0xa8, 0xd2],
  [0x7a, 0xf5, 0xf5],
  [0xee, 0xee, 0xec],
];

/** xterm's 256-colour table: the 16 above, a 6x6x6 cube, then 24 greys. */
export function color256(index: number): Rgb {
  if (index < 16) return PALETTE_16[index] ?? FOREGROUND;
  if (index < 232) {
    const n = index - 16;
    const level = (v: number) => (v === 0 ? 0 : 55 + v * 40);
    return [level(Math.floor(n / 36)), level(Math.floor(n / 6) % 6), level(n % 6)];
  }
  const grey = 8 + (index - 232) * 10;
  return [grey, grey, grey];
}

interface CellStyle {
  fg: Rgb | undefined;
  bg: Rgb | undefined;
  bold: boolean;
  dim: boolean;
  underline: boolean;
  reverse: boolean;
}

export interface Cell {
  ch: string;
  style: CellStyle;
}

const PLAIN_STYLE: CellStyle = {
  fg: undefined,
  bg: undefined,
  bold: false,
  dim: false,
  underline: false,
  reverse: false,
};

/** One screen's text as a grid of styled cells (SGR state carries across lines, as in a terminal). */
export function parseAnsiScreen(text: string): Cell[][] {
  const rows: Cell[][] = [];
  let style: CellStyle = { ...PLAIN_STYLE };
  for (const line of text.replace(/\r/g, "").split("\n")) {
    const row: Cell[] = [];
    let i = 0;
    while (i < line.length) {
      const ch = line[i] ?? "";
      if (ch === "\u001b") {
        const next = line[i + 1];
        if (next === "[") {
          // CSI: parameters, then one final byte; only `m` (SGR) means anything here.
          let end = i + 2;
          while (end < line.length && !/[@-~]/.test(line[end] ?? "")) end++;
          if (line[end] === "m") style = applySgr(style, line.slice(i + 2, end));
          i = end + 1;
          continue;
        }
        if (next === "]") {
          // OSC (a title, a hyperlink): up to BEL or ST; never drawn.
          let end = i + 2;
          while (end < line.length && line[end] !== "\u0007" && !(line[end] === "\u001b" && line[end + 1] === "\\"))
            end++;
          i = line[end] === "\u0007" ? end + 1 : end + 2;
          continue;
        }
        i += 2;
        continue;
      }
      const code = ch.codePointAt(0) ?? 0;
      const width = code > 0xffff ? 2 : 1;
      if (code >= 0x20) row.push({ ch: String.fromCodePoint(code), style });
      i += width;
    }
    rows.push(row);
  }
  while (
    rows.length > 0 &&
    (rows.at(-1) ?? []).every((cell) => cell.ch === " " && cell.style.bg === undefined && !cell.style.reverse)
  )
    rows.pop();
  return rows;
}

function applySgr(current: CellStyle, params: string): CellStyle {
  const style = { ...current };
  // tmux may separate sub-parameters with `:` (38:5:n); treat them like `;`.
  const codes = params === "" ? [0] : params.split(/[;:]/).map((part) => (part === "" ? 0 : Number(part)));
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i] ?? 0;
    if (code === 0) Object.assign(style, PLAIN_STYLE);
    else if (code === 1) style.bold = true;
    else if (code === 2) style.dim = true;
    else if (code === 4) style.underline = true;
    else if (code === 7) style.reverse = true;
    else if (code === 22) {
      style.bold = false;
      style.dim = false;
    } else if (code === 24) style.underline = false;
    else if (code === 27) style.reverse = false;
    else if (code >= 30 && code <= 37) style.fg = PALETTE_16[code - 30];
    else if (code >= 90 && code <= 97) style.fg = PALETTE_16[code - 90 + 8];
    else if (code === 39) style.fg = undefined;
    else if (code >= 40 && code <= 47) style.bg = PALETTE_16[code - 40];
    else if (code >= 100 && code <= 107) style.bg = PALETTE_16[code - 100 + 8];
    else if (code === 49) style.bg = undefined;
    else if (code === 38 || code === 48) {
      const mode = codes[i + 1];
      let color: Rgb | undefined;
      if (mode === 5) {
        color = color256(clampByte(codes[i + 2] ?? 0));
        i += 2;
      } else if (mode === 2) {
        color = [clampByte(codes[i + 2] ?? 0), clampByte(codes[i + 3] ?? 0), clampByte(codes[i + 4] ?? 0)];
        i += 4;
      }
      if (code === 38) style.fg = color;
      else style.bg = color;
    }
  }
  return style;
}

function clampByte(value: number): number {
  return Number.isFinite(value) ? Math.max(0, Math.min(255, Math.round(value))) : 0;
}

// ---------------------------------------------------------------------------------------------
// Fonts and glyphs

const REGULAR = "PHW DejaVu Sans Mono";
const BOLD = "PHW DejaVu Sans Mono Bold";
/** For symbols the monospace face lacks (such as ⟲): DejaVu Sans has far more of them. */
const FALLBACK = "PHW DejaVu Sans";

/** The part of opentype.js's Font this needs (pureimage ships no types for it). */
interface GlyphLookup {
  charToGlyphIndex(ch: string): number;
}

let monospace: GlyphLookup | undefined;

function loadFonts(): GlyphLookup {
  if (monospace !== undefined) return monospace;
  const require = createRequire(import.meta.url);
  const fontDir = join(dirname(require.resolve("dejavu-fonts-ttf/package.json")), "ttf");
  const regular = PImage.registerFont(join(fontDir, "DejaVuSansMono.ttf"), REGULAR).loadSync();
  PImage.registerFont(join(fontDir, "DejaVuSansMono-Bold.ttf"), BOLD).loadSync();
  PImage.registerFont(join(fontDir, "DejaVuSans.ttf"), FALLBACK).loadSync();
  monospace = regular.font as unknown as GlyphLookup;
  return monospace;
}

interface Metrics {
  cellWidth: number;
  cellHeight: number;
  baseline: number;
}

function metricsFor(fontSize: number): Metrics {
  const probe = PImage.make(8, 8);
  const ctx = probe.getContext("2d");
  ctx.font = `${fontSize}px ${REGULAR}`;
  const measured = PImage.measureText(ctx, "M");
  // DejaVu Sans Mono advances 0.602 em: at 15 px that is 9.03 px, so box drawing joins up.
  const cellWidth = Math.max(1, Math.round(measured.width));
  // The font's own line height (ascender + descender), as terminals use it: box-drawing lines
  // span it exactly, so borders join from row to row.
  const ascent = measured.emHeightAscent;
  const descent = Math.abs(measured.emHeightDescent);
  const cellHeight = Math.ceil(ascent + descent);
  const baseline = Math.round(ascent);
  return { cellWidth, cellHeight, baseline };
}

/** Coverage (0-255) of one glyph over one cell, rasterised once and cached. */
class GlyphCache {
  private readonly cache = new Map<string, Uint8Array>();
  private readonly metrics: Metrics;
  private readonly fontSize: number;
  private readonly lookup: GlyphLookup;

  constructor(metrics: Metrics, fontSize: number) {
    this.metrics = metrics;
    this.fontSize = fontSize;
    this.lookup = loadFonts();
  }

  coverage(ch: string, bold: boolean): Uint8Array {
    const key = `${bold ? "b" : "r"}${ch}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const { cellWidth, cellHeight, baseline } = this.metrics;
    const mask = new Uint8Array(cellWidth * cellHeight);
    if (ch.trim() !== "") {
      // Drawn white on black with room around it, so strokes that overhang the cell are kept.
      const pad = cellWidth;
      const bitmap = PImage.make(cellWidth + 2 * pad, cellHeight);
      const ctx = bitmap.getContext("2d");
      ctx.fillStyle = "#000000";
      ctx.fillRect(0, 0, bitmap.width, bitmap.height);
      ctx.fillStyle = "#ffffff";
      const face = this.lookup.charToGlyphIndex(ch) === 0 ? FALLBACK : bold ? BOLD : REGULAR;
      ctx.font = `${this.fontSize}px ${face}`;
      ctx.fillText(ch, pad, baseline);
      for (let y = 0; y < cellHeight; y++) {
        for (let x = 0; x < cellWidth; x++) {
          mask[y * cellWidth + x] = bitmap.data[(y * bitmap.width + x + pad) * 4] ?? 0;
        }
      }
    }
    this.cache.set(key, mask);
    return mask;
  }
}

// ---------------------------------------------------------------------------------------------
// Drawing

class Canvas {
  readonly width: number;
  readonly height: number;
  readonly bitmap: PImage.Bitmap;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.bitmap = PImage.make(width, height);
    this.fill(0, 0, width, height, BACKGROUND);
  }

  fill(x0: number, y0: number, w: number, h: number, [r, g, b]: Rgb): void {
    const data = this.bitmap.data;
    for (let y = Math.max(0, y0); y < Math.min(this.height, y0 + h); y++) {
      for (let x = Math.max(0, x0); x < Math.min(this.width, x0 + w); x++) {
        const at = (y * this.width + x) * 4;
        data[at] = r;
        data[at + 1] = g;
        data[at + 2] = b;
        data[at + 3] = 255;
      }
    }
  }

  /** Blends `color` over what is there with the glyph's coverage. */
  blit(x0: number, y0: number, mask: Uint8Array, w: number, h: number, [r, g, b]: Rgb): void {
    const data = this.bitmap.data;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const alpha = (mask[y * w + x] ?? 0) / 255;
        if (alpha === 0) continue;
        const at = ((y0 + y) * this.width + x0 + x) * 4;
        data[at] = Math.round((data[at] ?? 0) * (1 - alpha) + r * alpha);
        data[at + 1] = Math.round((data[at + 1] ?? 0) * (1 - alpha) + g * alpha);
        data[at + 2] = Math.round((data[at + 2] ?? 0) * (1 - alpha) + b * alpha);
      }
    }
  }
}

function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [
    Math.round(a[0] * (1 - t) + b[0] * t),
    Math.round(a[1] * (1 - t) + b[1] * t),
    Math.round(a[2] * (1 - t) + b[2] * t),
  ];
}

/** Where everything goes, from the screens' sizes (exported so tests can find a cell's pixels). */
export function layoutScreens(panels: readonly ScreenPanel[], options: ScreenPngOptions = {}): ScreenLayout {
  loadFonts();
  const fontSize = options.fontSize ?? DEFAULT_FONT_SIZE;
  const { cellWidth, cellHeight } = metricsFor(fontSize);
  const grids = panels.map((panel) => parseAnsiScreen(panel.text));
  const columns = options.columns ?? Math.max(1, ...grids.flatMap((grid) => grid.map((row) => row.length)));
  const rows = options.rows ?? Math.max(1, ...grids.map((grid) => grid.length));
  const titleHeight = cellHeight + PADDING;
  const panelWidth = columns * cellWidth + 2 * PADDING;
  const panelHeight = titleHeight + rows * cellHeight + 2 * PADDING;
  const sideBySide = options.layout === "side-by-side";
  const count = Math.max(1, panels.length);
  const width = 2 * MARGIN + (sideBySide ? count * panelWidth + (count - 1) * GAP : panelWidth);
  const height = 2 * MARGIN + (sideBySide ? panelHeight : count * panelHeight + (count - 1) * GAP);
  const origins = panels.map((_, index) => ({
    x: MARGIN + (sideBySide ? index * (panelWidth + GAP) : 0) + PADDING,
    y: MARGIN + (sideBySide ? 0 : index * (panelHeight + GAP)) + titleHeight + PADDING,
  }));
  return { width, height, cellWidth, cellHeight, columns, rows, origins };
}

/** Renders the screens to PNG bytes. */
export async function renderScreenPng(panels: readonly ScreenPanel[], options: ScreenPngOptions = {}): Promise<Buffer> {
  const layout = layoutScreens(panels, options);
  const fontSize = options.fontSize ?? DEFAULT_FONT_SIZE;
  const metrics = metricsFor(fontSize);
  const glyphs = new GlyphCache(metrics, fontSize);
  const { cellWidth, cellHeight, columns, rows } = layout;
  const canvas = new Canvas(layout.width, layout.height);

  panels.forEach((panel, index) => {
    const origin = layout.origins[index] ?? { x: 0, y: 0 };
    const titleHeight = cellHeight + PADDING;
    const left = origin.x - PADDING;
    const top = origin.y - PADDING - titleHeight;
    const panelWidth = columns * cellWidth + 2 * PADDING;
    const panelHeight = titleHeight + rows * cellHeight + 2 * PADDING;
    // A frame, a title bar, then the screen.
    canvas.fill(left - 1, top - 1, panelWidth + 2, panelHeight + 2, FRAME);
    canvas.fill(left, top, panelWidth, panelHeight, BACKGROUND);
    canvas.fill(left, top, panelWidth, titleHeight, TITLE_BACKGROUND);
    const title = [...panel.title].slice(0, columns);
    title.forEach((ch, column) => {
      canvas.blit(
        left + PADDING + column * cellWidth,
        top + PADDING / 2,
        glyphs.coverage(ch, true),
        cellWidth,
        cellHeight,
        TITLE_FOREGROUND,
      );
    });

    const grid = parseAnsiScreen(panel.text);
    for (let row = 0; row < Math.min(rows, grid.length); row++) {
      const cells = grid[row] ?? [];
      for (let column = 0; column < Math.min(columns, cells.length); column++) {
        const cell = cells[column];
        if (cell === undefined) continue;
        const x = origin.x + column * cellWidth;
        const y = origin.y + row * cellHeight;
        let fg = cell.style.fg ?? FOREGROUND;
        let bg = cell.style.bg;
        if (cell.style.reverse) [fg, bg] = [bg ?? BACKGROUND, fg];
        if (cell.style.dim) fg = mix(fg, bg ?? BACKGROUND, 0.45);
        if (bg !== undefined) canvas.fill(x, y, cellWidth, cellHeight, bg);
        canvas.blit(x, y, glyphs.coverage(cell.ch, cell.style.bold), cellWidth, cellHeight, fg);
        if (cell.style.underline) canvas.fill(x, y + cellHeight - 2, cellWidth, 1, fg);
      }
    }
  });

  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    out.on("end", () => resolve());
    out.on("error", reject);
  });
  await PImage.encodePNGToStream(canvas.bitmap, out);
  await ended;
  return Buffer.concat(chunks);
}

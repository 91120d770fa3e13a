import type { Box } from './image';

/**
 * Groups items into text lines by their boxes: lines top to bottom, items left to right within a line.
 *
 * An item joins a line when its box's vertical extent overlaps the line's by at least half the smaller
 * of the two heights. Comparing overlap rather than top edges keeps a line together when its boxes
 * differ in height (a capital next to a lower-case word) and keeps two close lines apart.
 */
export function groupIntoLines<T>(items: readonly T[], boxOf: (item: T) => Box): T[][] {
  const centreY = (item: T): number => boxOf(item)[1] + boxOf(item)[3];
  const byCentre = [...items].sort((a, b) => centreY(a) - centreY(b) || boxOf(a)[0] - boxOf(b)[0]);
  const lines: { top: number; bottom: number; items: T[] }[] = [];
  for (const item of byCentre) {
    const [, y0, , y1] = boxOf(item);
    const line = lines.find((l) => {
      const overlap = Math.min(l.bottom, y1) - Math.max(l.top, y0);
      return overlap >= 0.5 * Math.min(l.bottom - l.top, y1 - y0);
    });
    if (line) {
      line.top = Math.min(line.top, y0);
      line.bottom = Math.max(line.bottom, y1);
      line.items.push(item);
    } else {
      lines.push({ top: y0, bottom: y1, items: [item] });
    }
  }
  lines.sort((a, b) => a.top + a.bottom - (b.top + b.bottom));
  return lines.map((l) => l.items.sort((a, b) => boxOf(a)[0] - boxOf(b)[0]));
}

/** Sorts boxes in reading order: by line, top to bottom, then left to right. */
export function sortReadingOrder(boxes: readonly Box[]): Box[] {
  return groupIntoLines(boxes, (b) => b).flat();
}

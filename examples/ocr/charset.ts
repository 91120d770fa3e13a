import * as fs from 'node:fs';
import { TritonError } from 'tstriton';

/** Options of {@link buildCharset}. */
export interface CharsetOptions {
  /** Append a space after the dictionary, as PaddleOCR's `use_space_char` (true for PP-OCRv4). */
  readonly useSpaceChar?: boolean;
}

/**
 * The CTC classes of a PaddleOCR recogniser: index 0 is the blank, then one entry per dictionary
 * line, then (by default) a space.
 */
export function buildCharset(dictionaryText: string, options: CharsetOptions = {}): readonly string[] {
  const lines = dictionaryText.split(/\r?\n/);
  // A final newline ends the last entry; it does not add an empty one.
  if (lines.at(-1) === '') lines.pop();
  const empty = lines.indexOf('');
  if (empty >= 0) {
    throw new TritonError('INVALID_CONFIG', `dictionary: line ${empty + 1} is empty; expected one character per line`);
  }
  return ['', ...lines, ...((options.useSpaceChar ?? true) ? [' '] : [])];
}

/** Reads a PaddleOCR dictionary file (UTF-8, one character per line) into CTC classes. */
export function loadCharset(path: string, options: CharsetOptions = {}): readonly string[] {
  return buildCharset(fs.readFileSync(path, 'utf8'), options);
}

/** Throws unless the recogniser's class count equals the charset's length. */
export function checkCharset(classCount: number, charset: readonly string[]): void {
  if (classCount !== charset.length) {
    throw new TritonError(
      'INVALID_CONFIG',
      `recognition: the model scores ${classCount} classes, the dictionary gives ${charset.length} (blank + ${charset.length - 2} lines + space)`,
    );
  }
}

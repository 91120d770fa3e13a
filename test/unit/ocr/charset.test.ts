import { TritonError } from 'tstriton';
import { buildCharset, checkCharset, loadCharset } from '../../../examples/ocr/charset';
import { ocrModelFiles } from '../../../examples/ocr/ocr-model-files';

describe('buildCharset', () => {
  it.each([
    ['a final newline', 'a\nb\n'],
    ['no final newline', 'a\nb'],
    ['CRLF line ends', 'a\r\nb\r\n'],
  ])('puts the blank first and the space last, with %s', (_name, text) => {
    expect(buildCharset(text)).toEqual(['', 'a', 'b', ' ']);
  });

  it('leaves the space out when asked', () => {
    expect(buildCharset('a\nb\n', { useSpaceChar: false })).toEqual(['', 'a', 'b']);
  });

  it('rejects an empty line inside the dictionary', () => {
    expect(() => buildCharset('a\n\nb\n')).toThrow(/line 2 is empty/);
  });
});

describe('the PP-OCRv4 dictionary', () => {
  const charset = loadCharset(ocrModelFiles().dictionary);

  it('has 6623 lines, giving 6625 classes with the blank and the space', () => {
    expect(charset).toHaveLength(6625);
    expect(charset[0]).toBe('');
    expect(charset[6624]).toBe(' ');
    // The dictionary holds no space of its own: the appended one is the only one.
    expect(charset.indexOf(' ')).toBe(6624);
  });

  it('covers printed English', () => {
    for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.,:-') expect(charset).toContain(ch);
  });
});

describe('checkCharset', () => {
  it('accepts a matching class count and names both counts otherwise', () => {
    const charset = buildCharset('a\nb\n');
    expect(() => checkCharset(4, charset)).not.toThrow();
    let caught: unknown;
    try {
      checkCharset(5, charset);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(TritonError);
    expect((caught as TritonError).code).toBe('INVALID_CONFIG');
    expect((caught as TritonError).message).toBe('recognition: the model scores 5 classes, the dictionary gives 4 (blank + 2 lines + space)');
  });
});

/**
 * Values read off the wire, which may be of any type and any size: how error messages show them and how
 * decoders store them under client-chosen keys.
 */

/** How many characters of a value an error message shows. */
const SHOWN = 64;
/** How deep into arrays and objects an error message looks. */
const SHOWN_DEPTH = 3;

/**
 * A short rendering of a value a client sent, for error messages: JSON-like (strings quoted, BigInt integers
 * as their digits), cut after 64 characters. It never throws, whatever the value: a BigInt (which
 * `JSON.stringify` refuses), an object without a prototype (which `String` refuses), a string of megabytes.
 */
export function describeValue(value: unknown): string {
  const text = render(value, SHOWN + 1, 0);
  if (text.length <= SHOWN) return text;
  // Never cut between the two halves of a surrogate pair.
  const cut = isHighSurrogate(text.charCodeAt(SHOWN - 1)) ? SHOWN - 1 : SHOWN;
  return `${text.slice(0, cut)}...`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Renders `value`, stopping once `budget` characters are written (the caller cuts the rest). */
function render(value: unknown, budget: number, depth: number): string {
  switch (typeof value) {
    case 'string':
      // Cut before quoting: a huge string is never copied whole.
      return JSON.stringify(value.length > budget ? value.slice(0, budget + 1) : value);
    case 'bigint':
      return value.toString();
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'object':
      if (value === null) return 'null';
      if (ArrayBuffer.isView(value)) return `${value.constructor.name}(${value.byteLength} bytes)`;
      return Array.isArray(value) ? renderList('[', ']', value, (v) => render(v, budget, depth + 1), budget, depth) : renderObject(value, budget, depth);
    default:
      return typeof value;
  }
}

function renderObject(value: object, budget: number, depth: number): string {
  // Object.keys reads own keys, with or without a prototype; values are read as plain data, never called.
  const record = value as Record<string, unknown>;
  const key = (k: string) => `${JSON.stringify(k.length > budget ? k.slice(0, budget) : k)}:${render(record[k], budget, depth + 1)}`;
  return renderList('{', '}', Object.keys(record), key, budget, depth);
}

function renderList<T>(open: string, close: string, items: readonly T[], show: (item: T) => string, budget: number, depth: number): string {
  if (items.length === 0) return `${open}${close}`;
  if (depth >= SHOWN_DEPTH) return `${open}...${close}`;
  let text = open;
  for (let i = 0; i < items.length; i++) {
    if (text.length > budget) return text;
    text += (i > 0 ? ',' : '') + show(items[i] as T);
  }
  return text + close;
}

/**
 * Stores `value` under a key a client chose, as an own property even for `__proto__`, as `JSON.parse` does
 * (a plain assignment would replace the object's prototype instead).
 */
export function setEntry<V>(record: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
  else record[key] = value;
}

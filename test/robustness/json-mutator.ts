import type { Rng } from './helpers';

/**
 * JSON documents as trees that keep what a JS value cannot: integer literals beyond 2^53, `__proto__` keys,
 * duplicate keys and nesting past any limit. The fuzzers mutate valid requests in this form and write them out
 * with `serialize`.
 */
export type JsonNode = { readonly t: 'lit'; readonly text: string } | { readonly t: 'arr'; items: JsonNode[] } | { readonly t: 'obj'; entries: [string, JsonNode][] };

/** A literal written as it is: a number, `true`, a quoted string, or any text at all. */
export function lit(text: string): JsonNode {
  return { t: 'lit', text };
}

/** The tree of a plain JSON value (BigInt as its digits). */
export function fromValue(v: unknown): JsonNode {
  if (Array.isArray(v)) return { t: 'arr', items: v.map(fromValue) };
  if (typeof v === 'bigint') return lit(v.toString());
  if (typeof v === 'object' && v !== null) return { t: 'obj', entries: Object.entries(v).map(([k, x]) => [k, fromValue(x)]) };
  return lit(JSON.stringify(v));
}

export function serialize(n: JsonNode): string {
  switch (n.t) {
    case 'lit':
      return n.text;
    case 'arr':
      return `[${n.items.map(serialize).join(',')}]`;
    default:
      return `{${n.entries.map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  }
}

/** The entry `key` of an object node, if the node is an object that has it. */
export function entry(n: JsonNode | undefined, key: string): JsonNode | undefined {
  return n?.t === 'obj' ? n.entries.find(([k]) => k === key)?.[1] : undefined;
}

/** Sets entry `key` of an object node (replacing the first one of that name). */
export function setEntryOf(n: JsonNode, key: string, value: JsonNode): void {
  if (n.t !== 'obj') return;
  const i = n.entries.findIndex(([k]) => k === key);
  if (i >= 0) n.entries[i] = [key, value];
  else n.entries.push([key, value]);
}

/** Keys a request knows, and some that attack the parser's objects. */
const KEYS = [
  'name', 'datatype', 'shape', 'data', 'parameters', 'inputs', 'outputs', 'id', 'binary_data_size', 'binary_data', 'binary_data_output',
  'classification', 'shared_memory_region', 'shared_memory_byte_size', 'shared_memory_offset', 'priority', 'timeout', 'sequence_id',
  'sequence_start', 'triton_x', 'headers', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', '\u65e5\u672c',
];

/** Literals at the edges: integers beyond every width, non-finite floats, strings of every kind. */
const LITERALS = [
  '0', '-1', '1', '2', '4', '1.5', '-0', '1e308', '1e400', '-1e400', '12345678901234567890', '-9223372036854775809',
  '18446744073709551616', '9223372036854775807', '4294967296', '9007199254740993', '2147483648', '1e-7', '1E2', '-2147483649',
  '""', '"FP32"', '"BYTES"', '"INT64"', '"FP16"', '"fp32"', '"INPUT0"', '"INPUT1"', '"OUTPUT0"', '"add_sub"', '"\\u65e5\\u672c\\u0000"',
  '"\\ud800"', '"%ZZ"', '"__proto__"', '"\\"q\\""', '"1"', '"-1"', 'true', 'false', 'null', '[]', '{}', '[[]]', '[null]',
];

/** A random JSON value, from the edge literals, long strings, arrays, objects and nesting near the depth limit. */
export function randomNode(r: Rng, depth = 0): JsonNode {
  const kind = r.int(depth > 2 ? 3 : 8);
  switch (kind) {
    case 0:
    case 1:
      return lit(r.pick(LITERALS));
    case 2:
      return lit(String(r.int(20) - 5));
    case 3:
      return { t: 'arr', items: Array.from({ length: 1 + r.int(4) }, () => randomNode(r, depth + 1)) };
    case 4:
      return { t: 'obj', entries: Array.from({ length: 1 + r.int(3) }, (): [string, JsonNode] => [r.pick(KEYS), randomNode(r, depth + 1)]) };
    case 5: {
      // Around the server's jsonMaxDepth (100): both sides of the limit.
      const d = 90 + r.int(40);
      return lit(`${'['.repeat(d)}${r.chance(0.5) ? '12345678901234567890' : '1'}${']'.repeat(d)}`);
    }
    case 6:
      return lit(JSON.stringify(r.pick(['x', '\u00e9', '\u65e5', '\u0000', '\ud83d\ude00']).repeat(1 + r.int(3000))));
    default:
      return lit(JSON.stringify(String.fromCharCode(...Array.from({ length: r.int(12) }, () => r.int(0x3000)))));
  }
}

interface Slot {
  readonly parent: Extract<JsonNode, { t: 'arr' | 'obj' }>;
  readonly index: number;
}

function slots(n: JsonNode, out: Slot[] = []): Slot[] {
  if (n.t === 'arr') n.items.forEach((c, i) => (out.push({ parent: n, index: i }), slots(c, out)));
  if (n.t === 'obj') n.entries.forEach(([, c], i) => (out.push({ parent: n, index: i }), slots(c, out)));
  return out;
}

function get(s: Slot): JsonNode {
  return s.parent.t === 'arr' ? (s.parent.items[s.index] as JsonNode) : (s.parent.entries[s.index] as [string, JsonNode])[1];
}

function set(s: Slot, v: JsonNode): void {
  if (s.parent.t === 'arr') s.parent.items[s.index] = v;
  else (s.parent.entries[s.index] as [string, JsonNode])[1] = v;
}

/**
 * Applies one random mutation in place (or returns a new root): delete a field or element, replace a value with
 * an edge value, swap its type, wrap it, duplicate it, add a key (`__proto__` included), or rename a key.
 * Returns a label for failure messages.
 */
export function mutate(root: JsonNode, r: Rng): { root: JsonNode; label: string } {
  const all = slots(root);
  if (all.length === 0 || r.chance(0.02)) return { root: randomNode(r), label: 'replace the root' };
  const s = r.pick(all);
  const where = s.parent.t === 'obj' ? `'${(s.parent.entries[s.index] as [string, JsonNode])[0]}'` : `element ${s.index}`;
  switch (r.int(7)) {
    case 0:
      if (s.parent.t === 'arr') s.parent.items.splice(s.index, 1);
      else s.parent.entries.splice(s.index, 1);
      return { root, label: `delete ${where}` };
    case 1:
    case 2:
      set(s, randomNode(r));
      return { root, label: `replace ${where}` };
    case 3: {
      // A type swap: an array becomes an object of the same values, a scalar becomes a string of its text.
      const v = get(s);
      const swapped: JsonNode =
        v.t === 'arr' ? { t: 'obj', entries: v.items.map((x, i): [string, JsonNode] => [String(i), x]) } : v.t === 'obj' ? { t: 'arr', items: v.entries.map(([, x]) => x) } : lit(JSON.stringify(v.text));
      set(s, swapped);
      return { root, label: `swap the type of ${where}` };
    }
    case 4:
      set(s, r.chance(0.5) ? { t: 'arr', items: [get(s)] } : { t: 'obj', entries: [[r.pick(KEYS), get(s)]] });
      return { root, label: `wrap ${where}` };
    case 5:
      if (s.parent.t === 'arr') s.parent.items.splice(s.index, 0, get(s));
      else s.parent.entries.push([r.pick(KEYS), randomNode(r)]);
      return { root, label: `duplicate or add next to ${where}` };
    default:
      if (s.parent.t === 'obj') {
        const [, v] = s.parent.entries[s.index] as [string, JsonNode];
        s.parent.entries[s.index] = [r.pick(KEYS), v];
        return { root, label: `rename ${where}` };
      }
      set(s, lit(r.pick(LITERALS)));
      return { root, label: `replace ${where} with an edge literal` };
  }
}

import { TritonError } from '../base/errors';
import { integerProblem, parseInteger, type ScalarSpec } from './text-format-scalars';
import type { FieldSpec, MessageSpec, ScalarType, ValueSpec } from './text-format-schema';

/**
 * Appends the fields of `obj` (JSON form of message `spec`) to `out` as protobuf text format lines indented by
 * `depth` levels, in the order of the object's keys. `path` names `obj` in error messages (`input[0].`).
 *
 * @throws TritonError `INVALID_CONFIG` for a key that is not a field of `spec` or a value that does not fit it.
 */
export function writeMessage(obj: Record<string, unknown>, spec: MessageSpec, path: string, depth: number, out: string[]): void {
  for (const [key, value] of Object.entries(obj)) {
    if (value === undefined) continue;
    const field = spec.fields.get(key);
    if (!field) throw formatError(`unknown field '${path}${key}' in ${spec.fullName}`);
    if (field.mapKey !== undefined) writeMap(value, field, field.mapKey, `${path}${key}`, depth, out);
    else if (field.repeated) {
      if (!Array.isArray(value)) throw formatError(`field '${path}${key}' is repeated and expects an array, got ${show(value)}`);
      value.forEach((item: unknown, i) => writeValue(key, item, field.value, `${path}${key}[${i}]`, depth, out));
    } else {
      writeValue(key, value, field.value, `${path}${key}`, depth, out);
    }
  }
}

function writeMap(value: unknown, field: FieldSpec, keyType: ScalarType, path: string, depth: number, out: string[]): void {
  if (!isPlainObject(value)) throw formatError(`field '${path}' is a map and expects an object, got ${show(value)}`);
  const pad = '  '.repeat(depth);
  for (const [key, item] of Object.entries(value)) {
    const itemPath = `${path}[${JSON.stringify(key)}]`;
    out.push(`${pad}${field.name} {`);
    out.push(`${pad}  key: ${mapKeyText(key, keyType, itemPath)}`);
    writeValue('value', item, field.value, itemPath, depth + 1, out);
    out.push(`${pad}}`);
  }
}

function writeValue(name: string, value: unknown, spec: ValueSpec, path: string, depth: number, out: string[]): void {
  const pad = '  '.repeat(depth);
  if (spec.kind !== 'message') {
    out.push(`${pad}${name}: ${scalarText(value, spec, path)}`);
    return;
  }
  if (!isPlainObject(value)) throw formatError(`field '${path}' expects an object (${spec.message.fullName}), got ${show(value)}`);
  if (Object.values(value).every((v) => v === undefined)) {
    out.push(`${pad}${name} {}`);
    return;
  }
  out.push(`${pad}${name} {`);
  writeMessage(value, spec.message, `${path}.`, depth + 1, out);
  out.push(`${pad}}`);
}

/** A map key (always a string in JSON) as its key type writes it. */
function mapKeyText(key: string, type: ScalarType, path: string): string {
  if (type === 'string' || type === 'bytes') return quote(key, type);
  if (type === 'bool') {
    if (key === 'true' || key === 'false') return key;
    throw formatError(`map '${path}' has bool keys, got ${JSON.stringify(key)}`);
  }
  const value = parseInteger(key);
  if (value === undefined || !/^-?[0-9]+$/.test(key)) throw formatError(`map '${path}' has ${type} keys, got ${JSON.stringify(key)}`);
  const problem = integerProblem(value, type, path);
  if (problem) throw formatError(problem);
  return String(value);
}

function scalarText(value: unknown, spec: ScalarSpec, path: string): string {
  if (spec.kind === 'enum') {
    const e = spec.enum;
    if (typeof value === 'string' && e.numbers.has(value)) return value;
    const name = typeof value === 'number' ? e.names.get(value) : undefined;
    if (name !== undefined) return name;
    throw formatError(`field '${path}' expects a value of ${e.fullName}, got ${show(value)}`);
  }
  switch (spec.type) {
    case 'string':
    case 'bytes':
      if (typeof value === 'string') return quote(value, spec.type);
      throw formatError(`field '${path}' expects a string, got ${show(value)}`);
    case 'bool':
      if (typeof value === 'boolean') return String(value);
      throw formatError(`field '${path}' expects a boolean, got ${show(value)}`);
    case 'float':
    case 'double':
      if (typeof value !== 'number') throw formatError(`field '${path}' expects a number, got ${show(value)}`);
      if (Number.isNaN(value)) return 'nan';
      if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
      // String(-0) is "0"; the sign is kept so that the text reads back as the same number.
      return Object.is(value, -0) ? '-0' : String(value);
    default: {
      // 64-bit integers may come as decimal strings, as protobuf's JSON mapping prints them.
      const text =
        typeof value === 'number' && Number.isInteger(value) ? String(value)
        : typeof value === 'string' && /^-?[0-9]+$/.test(value) ? value
        : undefined;
      if (text === undefined) throw formatError(`field '${path}' expects an integer, got ${show(value)}`);
      const problem = integerProblem(BigInt(text), spec.type, path);
      if (problem) throw formatError(problem);
      return String(BigInt(text));
    }
  }
}

/**
 * A string literal in double quotes. Quotes, backslashes and control characters are escaped; other characters
 * are written as they are (UTF-8 in the file), which every text format parser reads back unchanged. Bytes
 * fields hold one character per byte, so their characters beyond ASCII are written as octal escapes.
 */
function quote(value: string, type: 'string' | 'bytes'): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f || (type === 'bytes' && code > 0x7f)) {
      if (code > 0xff) throw formatError(`bytes value ${JSON.stringify(value)} holds a character beyond a byte`);
      out += `\\${code.toString(8).padStart(3, '0')}`;
    } else out += ch;
  }
  return `${out}"`;
}

function formatError(message: string): TritonError {
  return new TritonError('INVALID_CONFIG', `cannot write config.pbtxt: ${message}`);
}

function show(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value) ?? String(value);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

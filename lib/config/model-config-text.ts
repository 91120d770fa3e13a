import { readScalar, type ScalarSpec, type ScalarValue } from './text-format-scalars';
import { modelConfigSpec, type FieldSpec, type MessageSpec, type ValueSpec } from './text-format-schema';
import { describeToken, TextFormatTokenizer, type TextToken } from './text-format-tokenizer';
import { writeMessage } from './text-format-writer';
import type { ModelConfigJson } from './triton-model-config';

/**
 * Parses a `config.pbtxt` (protobuf text format of `inference.ModelConfig`) into the JSON form Triton prints for
 * `GET /v2/models/{m}/config`: proto field names, enum names, numbers, maps as objects, oneof members under their
 * own names. Only the fields written in the text appear; no defaults are filled in.
 *
 * @param text - The file's content.
 * @param file - Name used as the prefix of error messages (`file:line:column: ...`).
 * @throws TritonError `INVALID_CONFIG` at the first problem: a syntax error, an unknown field or enum value, a
 * value of the wrong type or out of range, a non-repeated field (or a second member of a oneof) given twice.
 */
export function parseModelConfigText(text: string, file: string): ModelConfigJson {
  const tokens = new TextFormatTokenizer(text, file);
  return new MessageReader(tokens).readFields(modelConfigSpec(), undefined);
}

/**
 * Writes a model config JSON (as {@link parseModelConfigText} returns it, or the complete form that
 * `buildModelConfigJson` builds) as `config.pbtxt` text: two-space indentation, fields in the order of the object's
 * keys, enums bare, one entry per element of a repeated field or map; empty lists and maps are left out.
 *
 * @throws TritonError `INVALID_CONFIG` when a key is not a field of `inference.ModelConfig` or a value does not fit
 * its field's type.
 */
export function formatModelConfigText(config: ModelConfigJson): string {
  const lines: string[] = [];
  writeMessage(config, modelConfigSpec(), '', 0, lines);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

/** The body of a message that closes with `closer`, opened by field `owner`. */
interface Enclosing {
  readonly closer: '}' | '>';
  readonly owner: string;
}

/** Recursive-descent reader of message bodies. */
class MessageReader {
  constructor(private readonly tokens: TextFormatTokenizer) {}

  /** Reads fields of `spec` up to the closing symbol of `enclosing`, or to the end of the text at the top level. */
  readFields(spec: MessageSpec, enclosing: Enclosing | undefined): Record<string, unknown> {
    const { tokens } = this;
    const out: Record<string, unknown> = {};
    for (;;) {
      const token = tokens.peek();
      if (enclosing && tokens.tryConsume(enclosing.closer)) return out;
      if (token.kind === 'end') {
        if (!enclosing) return out;
        throw tokens.error(token, `expected '${enclosing.closer}' to close '${enclosing.owner}', got end of file`);
      }
      if (token.kind !== 'identifier') {
        const closing = enclosing ? ` or '${enclosing.closer}' to close '${enclosing.owner}'` : '';
        throw tokens.error(token, `expected a field name${closing}, got ${describeToken(token)}`);
      }
      tokens.next();
      const field = spec.fields.get(token.text);
      if (!field) throw tokens.error(token, `unknown field '${token.text}' in ${spec.fullName}`);
      this.checkNotSet(out, spec, field, token);
      this.readField(out, field);
      // Text format allows one ',' or ';' after any field.
      if (!tokens.tryConsume(',')) tokens.tryConsume(';');
    }
  }

  /** Refuses a non-repeated field given twice and a second member of a oneof, as protobuf's text parser does. */
  private checkNotSet(out: Record<string, unknown>, spec: MessageSpec, field: FieldSpec, at: TextToken): void {
    if (field.repeated) return;
    if (Object.hasOwn(out, field.name)) throw this.tokens.error(at, `field '${field.name}' given twice in ${spec.fullName}`);
    if (field.oneof === undefined) return;
    for (const other of spec.fields.values()) {
      if (other.oneof === field.oneof && Object.hasOwn(out, other.name)) {
        const oneof = `oneof '${field.oneof}' of ${spec.fullName}`;
        throw this.tokens.error(at, `field '${field.name}' cannot be set with '${other.name}': both belong to ${oneof}`);
      }
    }
  }

  private readField(out: Record<string, unknown>, field: FieldSpec): void {
    const { tokens } = this;
    const isMessage = field.value.kind === 'message' || field.mapKey !== undefined;
    const colon = tokens.tryConsume(':');
    if (!colon && !isMessage) {
      throw tokens.error(tokens.peek(), `expected ':' after field '${field.name}', got ${describeToken(tokens.peek())}`);
    }
    if (!field.repeated) {
      out[field.name] = this.readValue(field.value, field.name);
      return;
    }
    const values: unknown[] = [];
    if (tokens.tryConsume('[')) {
      if (!tokens.tryConsume(']')) {
        for (;;) {
          values.push(this.readElement(field));
          if (tokens.tryConsume(']')) break;
          const token = tokens.peek();
          if (!tokens.tryConsume(',')) {
            throw tokens.error(token, `expected ',' or ']' in the list of '${field.name}', got ${describeToken(token)}`);
          }
        }
      }
    } else {
      values.push(this.readElement(field));
    }
    // An empty list sets nothing, as for a repeated field that is not written at all.
    if (values.length === 0) return;
    if (field.mapKey === undefined) {
      const list = (out[field.name] ??= []) as unknown[];
      list.push(...values);
      return;
    }
    const map = (out[field.name] ??= {}) as Record<string, unknown>;
    for (const [key, value] of values as [string, unknown][]) {
      // Defined rather than assigned: a key such as "__proto__" must become an entry, not the object's prototype.
      Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }

  /** One element of a repeated field; for a map, its `[key, value]` entry. */
  private readElement(field: FieldSpec): unknown {
    if (field.mapKey === undefined) return this.readValue(field.value, field.name);
    const keySpec: ScalarSpec = { kind: 'scalar', type: field.mapKey };
    const entry = this.readMessage(mapEntrySpec(field, keySpec), field.name);
    const key = entry.key ?? defaultValue(keySpec);
    return [String(key), entry.value ?? defaultValue(field.value)];
  }

  private readValue(spec: ValueSpec, field: string): unknown {
    return spec.kind === 'message' ? this.readMessage(spec.message, field) : readScalar(this.tokens, spec, field);
  }

  private readMessage(spec: MessageSpec, owner: string): Record<string, unknown> {
    const { tokens } = this;
    const open = tokens.peek();
    if (tokens.tryConsume('{')) return this.readFields(spec, { closer: '}', owner });
    if (tokens.tryConsume('<')) return this.readFields(spec, { closer: '>', owner });
    throw tokens.error(open, `expected '{' or '<' to open '${owner}' (${spec.fullName}), got ${describeToken(open)}`);
  }
}

const entrySpecs = new WeakMap<FieldSpec, MessageSpec>();

/** The entry message of a map field, `{ key, value }`, as the text format writes each entry. */
function mapEntrySpec(field: FieldSpec, key: ScalarSpec): MessageSpec {
  let spec = entrySpecs.get(field);
  if (!spec) {
    spec = {
      fullName: `${field.name} entry`,
      fields: new Map<string, FieldSpec>([
        ['key', { name: 'key', value: key, repeated: false }],
        ['value', { name: 'value', value: field.value, repeated: false }],
      ]),
    };
    entrySpecs.set(field, spec);
  }
  return spec;
}

/** What a map entry holds for a key or value it leaves out: the proto3 default of the type. */
function defaultValue(spec: ValueSpec): ScalarValue | Record<string, unknown> {
  if (spec.kind === 'message') return {};
  if (spec.kind === 'enum') return spec.enum.defaultName;
  if (spec.type === 'string' || spec.type === 'bytes') return '';
  return spec.type === 'bool' ? false : 0;
}

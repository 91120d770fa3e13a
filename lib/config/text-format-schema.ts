import * as path from 'node:path';
import { Enum, MapField, Root, Type, type Field } from 'protobufjs';
import { TritonError } from '../base/errors';
import { PROTO_DIR } from '../protocol/protos';

/** Protobuf scalar types as `.proto` files spell them. */
export type ScalarType =
  | 'double'
  | 'float'
  | 'int32'
  | 'uint32'
  | 'sint32'
  | 'fixed32'
  | 'sfixed32'
  | 'int64'
  | 'uint64'
  | 'sint64'
  | 'fixed64'
  | 'sfixed64'
  | 'bool'
  | 'string'
  | 'bytes';

const SCALAR_TYPES: ReadonlySet<string> = new Set<ScalarType>([
  'double',
  'float',
  'int32',
  'uint32',
  'sint32',
  'fixed32',
  'sfixed32',
  'int64',
  'uint64',
  'sint64',
  'fixed64',
  'sfixed64',
  'bool',
  'string',
  'bytes',
]);

/** A protobuf enum: its full name and both directions between names and numbers. */
export interface EnumSpec {
  /** Full name without the leading dot, e.g. `inference.DataType`. */
  readonly fullName: string;
  /** Value name → number. */
  readonly numbers: ReadonlyMap<string, number>;
  /** Number → value name (the first name declared, should aliases share a number). */
  readonly names: ReadonlyMap<number, string>;
  /** Name of the value numbered 0, the proto3 default. */
  readonly defaultName: string;
}

/** What a single (non-repeated) value of a field holds. */
export type ValueSpec =
  | { readonly kind: 'scalar'; readonly type: ScalarType }
  | { readonly kind: 'enum'; readonly enum: EnumSpec }
  | { readonly kind: 'message'; readonly message: MessageSpec };

/** One field of a message, as the text format needs it. */
export interface FieldSpec {
  /** Proto field name (snake_case). */
  readonly name: string;
  /** Type of one value; for a map field, the type of the map's values. */
  readonly value: ValueSpec;
  /** Declared `repeated` (map fields are repeated entry messages in the text format, and count as repeated). */
  readonly repeated: boolean;
  /** For `map<k, v>` fields: the key's scalar type. */
  readonly mapKey?: ScalarType;
  /** Name of the oneof the field belongs to. */
  readonly oneof?: string;
}

/** A message type: its full name and its fields by proto name. */
export interface MessageSpec {
  /** Full name without the leading dot, e.g. `inference.ModelConfig`. */
  readonly fullName: string;
  /** Fields by proto name, in declaration order. */
  readonly fields: ReadonlyMap<string, FieldSpec>;
}

let modelConfig: MessageSpec | undefined;

/**
 * The schema of `inference.ModelConfig`, read by reflection from the project's `model_config.proto` on first use
 * and kept for the life of the process.
 */
export function modelConfigSpec(): MessageSpec {
  if (!modelConfig) {
    const file = path.join(PROTO_DIR, 'model_config.proto');
    let root: Root;
    try {
      // keepCase: the text format names fields as the .proto does, not in camelCase.
      root = new Root().loadSync(file, { keepCase: true });
      root.resolveAll();
    } catch (err) {
      // Only a broken install gets here: the .proto is copied next to the build.
      throw new TritonError('INTERNAL', `cannot load the ModelConfig schema from ${file}: ${(err as Error).message}`, { cause: err });
    }
    modelConfig = new SpecBuilder().message(root.lookupType('inference.ModelConfig'));
  }
  return modelConfig;
}

/** Turns reflection objects into specs, sharing one spec per type so recursive types stay finite. */
class SpecBuilder {
  private readonly messages = new Map<Type, MessageSpec>();
  private readonly enums = new Map<Enum, EnumSpec>();

  message(type: Type): MessageSpec {
    const known = this.messages.get(type);
    if (known) return known;
    const fields = new Map<string, FieldSpec>();
    const spec: MessageSpec = { fullName: trimDot(type.fullName), fields };
    // Registered before its fields are walked, so a field of its own type finds it.
    this.messages.set(type, spec);
    for (const field of type.fieldsArray) fields.set(field.name, this.field(field));
    return spec;
  }

  private field(field: Field): FieldSpec {
    const oneof = field.partOf ? { oneof: field.partOf.name } : {};
    if (field instanceof MapField) {
      return { name: field.name, value: this.value(field), repeated: true, mapKey: scalarType(field.keyType, field), ...oneof };
    }
    return { name: field.name, value: this.value(field), repeated: field.repeated, ...oneof };
  }

  private value(field: Field): ValueSpec {
    const resolved = field.resolvedType;
    if (resolved instanceof Type) return { kind: 'message', message: this.message(resolved) };
    if (resolved instanceof Enum) return { kind: 'enum', enum: this.enumSpec(resolved) };
    return { kind: 'scalar', type: scalarType(field.type, field) };
  }

  private enumSpec(e: Enum): EnumSpec {
    let spec = this.enums.get(e);
    if (!spec) {
      const numbers = new Map<string, number>(Object.entries(e.values));
      const names = new Map<number, string>();
      for (const [name, number] of numbers) if (!names.has(number)) names.set(number, name);
      spec = { fullName: trimDot(e.fullName), numbers, names, defaultName: names.get(0) ?? [...numbers.keys()][0] ?? '' };
      this.enums.set(e, spec);
    }
    return spec;
  }
}

function scalarType(type: string, field: Field): ScalarType {
  if (!SCALAR_TYPES.has(type)) {
    // Only reachable if the .proto shipped with the package is broken: every type resolves after resolveAll().
    throw new TritonError('INTERNAL', `model_config.proto: field ${field.fullName} has unresolved type ${type}`);
  }
  return type as ScalarType;
}

function trimDot(name: string): string {
  return name.startsWith('.') ? name.slice(1) : name;
}

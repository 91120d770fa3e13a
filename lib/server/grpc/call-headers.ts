import type * as http2 from 'node:http2';
import { GrpcStatus } from '../../base/errors';
import type { GrpcCallStatus } from './grpc-status';

/** A metadata value: text, or bytes for a key ending in `-bin`. */
export type MetadataValue = string | Buffer;

/**
 * The custom metadata of a call, as its handler reads it (the two methods of grpc-js's `Metadata` the handlers
 * use): keys in lower case, values in the order received, `-bin` values decoded from base64.
 */
export class CallMetadata {
  private readonly entries = new Map<string, MetadataValue[]>();

  /** Every value of `key`; empty when the call has none. */
  get(key: string): MetadataValue[] {
    return this.entries.get(key.toLowerCase()) ?? [];
  }

  /** The first value of each key. */
  getMap(): Record<string, MetadataValue> {
    const map: Record<string, MetadataValue> = {};
    for (const [key, values] of this.entries) if (values.length > 0) map[key] = values[0] as MetadataValue;
    return map;
  }

  add(key: string, value: MetadataValue): void {
    const values = this.entries.get(key);
    if (values) values.push(value);
    else this.entries.set(key, [value]);
  }
}

/** What a call's request headers say, past the path and the content type. */
export interface CallHeaders {
  readonly metadata: CallMetadata;
  /** When the call must be over, in ms since the epoch; Infinity without `grpc-timeout`. */
  readonly deadline: number;
  /** `grpc-encoding`: how compressed messages are compressed (`identity` when absent). */
  readonly encoding: string;
}

/** `grpc-timeout`: up to 8 digits and a unit (gRPC over HTTP/2), found as grpc-js finds it. */
const TIMEOUT = /(\d{1,8})\s*([HMSmun])/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** The request headers that describe the transport, not the call: a handler does not see them in its metadata. */
const TRANSPORT_HEADERS = new Set(['grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding', 'te', 'content-type']);
/** Metadata keys and text values gRPC allows; an entry outside them is left out, as grpc-js leaves it out. */
const LEGAL_KEY = /^[0-9a-z_.-]+$/;
const LEGAL_TEXT = /^[ -~]*$/;

/**
 * Reads a call's request headers: its metadata, deadline and message encoding. A `grpc-timeout` that is not one
 * gives the status the call must end with instead (INTERNAL, grpc-js's answer).
 */
export function parseCallHeaders(headers: http2.IncomingHttpHeaders): CallHeaders | GrpcCallStatus {
  let deadline = Infinity;
  const timeout = headers['grpc-timeout'];
  if (timeout !== undefined) {
    const m = TIMEOUT.exec(String(timeout));
    if (!m) return { code: GrpcStatus.INTERNAL, details: `Invalid grpc-timeout value "${String(timeout)}"` };
    deadline = Date.now() + ((Number(m[1]) * (UNIT_MS[m[2] as string] as number)) | 0);
  }
  const encoding = headers['grpc-encoding'];
  return { metadata: metadataOf(headers), deadline, encoding: typeof encoding === 'string' ? encoding : 'identity' };
}

/** The custom metadata among `headers`: neither pseudo-headers nor transport headers. */
function metadataOf(headers: http2.IncomingHttpHeaders): CallMetadata {
  const metadata = new CallMetadata();
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined || key.startsWith(':') || TRANSPORT_HEADERS.has(key) || !LEGAL_KEY.test(key)) continue;
    const values = Array.isArray(value) ? value : [value];
    if (key.endsWith('-bin')) {
      // Node joins a repeated header's values with ', '; base64 has no comma.
      const split = key.startsWith('grpc-') ? values : values.flatMap((v) => v.split(','));
      for (const v of split) metadata.add(key, Buffer.from(v.trim(), 'base64'));
    } else {
      for (const v of values) if (LEGAL_TEXT.test(v)) metadata.add(key, v);
    }
  }
  return metadata;
}

import { TritonError } from '../../errors';

/**
 * One %-escaped segment of a request path (a model or region name), decoded. A malformed escape (`%ZZ`, a
 * cut-off UTF-8 sequence) is the client's mistake: INVALID_ARGUMENT naming the segment, never a URIError.
 */
export function decodeSegment(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    const shown = raw.length > 200 ? `${raw.slice(0, 200)}...` : raw;
    throw new TritonError('INVALID_ARGUMENT', `malformed percent-encoding in the request path: '${shown}' (expected %XX escapes of UTF-8 bytes)`);
  }
}

/**
 * The origin form (`/path?query`) of an absolute-form request target (`http://host:port/path?query`), as a
 * server must accept it (RFC 9112, 3.2.2); anything else is returned as it is.
 */
export function originForm(target: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (!m) return target;
  const rest = target.slice(m[0].length);
  return rest === '' ? '/' : rest.startsWith('?') ? `/${rest}` : rest;
}

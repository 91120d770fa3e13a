import { TritonError } from '../../base/errors';

/** The origin form of a request target and its path, as both the restricted-API check and the routers see them. */
export interface RequestTarget {
  /** `/path?query`. */
  readonly url: string;
  /** `/path`: everything before the first `?`. */
  readonly path: string;
}

/**
 * The origin form and path of a request target (origin or absolute form). A target with a fragment (`#...`) is
 * refused, INVALID_ARGUMENT: a fragment is no part of an HTTP request target (RFC 9112, 3.2), and it would split
 * the one path in two, since express's URL parser cuts at `#` where this path does not. With no `#` (node's parser
 * refuses whitespace and non-ASCII bytes in a target), express routes exactly the path returned here.
 */
export function requestTarget(target: string): RequestTarget {
  if (target.includes('#')) {
    const shown = target.length > 200 ? `${target.slice(0, 200)}...` : target;
    throw new TritonError('INVALID_ARGUMENT', `malformed request target '${shown}': a fragment ('#') is not part of an HTTP request target (expected /path[?query], with '#' percent-encoded as %23)`);
  }
  const url = target.charCodeAt(0) === 47 ? target : originForm(target);
  const q = url.indexOf('?');
  return { url, path: q < 0 ? url : url.slice(0, q) };
}

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

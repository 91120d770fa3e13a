import { TritonError } from '../base/errors';

/**
 * Compiles a header forward pattern (Triton's `--http-header-forward-pattern`); the pattern is matched against
 * the whole lower-case header name. An invalid pattern is a configuration error.
 */
export function headerMatcher(pattern: string | undefined, setting: string): ((name: string) => boolean) | undefined {
  if (!pattern) return undefined;
  let re: RegExp;
  try {
    re = new RegExp(`^(?:${pattern})$`, 'i');
  } catch (err) {
    throw new TritonError('INVALID_CONFIG', `invalid TritonConfig: ${setting}: ${(err as Error).message}`);
  }
  return (name) => re.test(name);
}

/** Adds the matching headers to a request's parameters (explicit parameters win). */
export function forwardHeaders(
  parameters: Record<string, unknown>,
  headers: Iterable<[string, string | string[] | Buffer | undefined]>,
  matches: ((name: string) => boolean) | undefined,
): void {
  if (!matches) return;
  for (const [name, value] of headers) {
    if (value === undefined || Buffer.isBuffer(value) || name.startsWith('triton_') || !matches(name) || name in parameters) continue;
    parameters[name] = Array.isArray(value) ? value.join(', ') : value;
  }
}

import * as fs from 'node:fs';
import * as path from 'node:path';
import { TritonError } from '../base/errors';

/**
 * True when `name` can name a model folder: one path segment, so that `<repository>/<name>` stays inside the
 * repository whatever the name says (no `/`, `\`, `.`, `..`, NUL, and not empty).
 */
export function isModelName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

/**
 * Refuses a load of a name that is not a model folder's name, in Triton's words for a model it cannot find
 * (`failed to poll from model repository`), with why; nothing is read, written or recorded for it.
 */
export function refuseModelName(name: string): TritonError {
  return new TritonError(
    'INVALID_ARGUMENT',
    `failed to load '${shown(name)}', failed to poll from model repository: a model name is one folder name, without '/', '\\', '..' or NUL`,
  );
}

/**
 * True when `rel`, a path a load request's `file:` parameter names, is a plain relative file path: segments
 * separated by `/`, none empty, `.` or `..`, no `\` (a Windows separator) and no NUL.
 */
export function isRelativeFilePath(rel: string): boolean {
  return rel.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..' && !/[\\\0]/.test(segment));
}

/**
 * The absolute path of `file`, named by a config field relative to `base`, when it lies inside `root` (the
 * model's folder) both as written and after symbolic links are followed; otherwise why not. A file that does not
 * exist is judged by the links of the folders above it (its load then fails naming the missing file).
 */
export function fileInside(root: string, base: string, file: string): { path: string } | { reason: string } {
  if (file.includes('\0')) return { reason: 'holds a NUL character' };
  const full = path.resolve(base, file);
  const realRoot = realpathOrSelf(root);
  const real = realpathOrSelf(full);
  if (!isWithin(path.resolve(root), full) && !isWithin(realRoot, full)) return { reason: `names ${full}, which is outside the model's folder ${root}` };
  if (!isWithin(realRoot, real)) return { reason: `names ${full}, which leads to ${real}, outside the model's folder ${root}` };
  return { path: full };
}

/** True when `child` is `parent` or lies below it. */
function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** `p` with its symbolic links followed, as far as it exists (a missing tail is kept as written). */
function realpathOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    const parent = path.dirname(p);
    return parent === p ? p : path.join(realpathOrSelf(parent), path.basename(p));
  }
}

function shown(name: string): string {
  const printable = name.replace(/\0/g, '\\0');
  return printable.length > 200 ? `${printable.slice(0, 200)}...` : printable;
}

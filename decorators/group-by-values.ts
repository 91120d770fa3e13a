import { TritonError, type OutputValue, type Request, type Tensor } from '../lib';
import { batchedNames, batchInputs, partsOf, plainInputs } from './batch-inputs';
import { batchContext, describeRequest, parameterKey, totalRows, withInputs, type BatchContext, type BatchOutputs } from './context';
import { makeBatchDecorator, misuse, namesAndOptions, type BatchDecorator } from './decorate';
import { constantPadder, type PadFn } from './pad';
import { extentsOf, narrower, withExtents } from './row-extents';
import { checkRows, dimsOf, gatherRows, isTyped, rowKey, sameDims, scatterRows } from './tensor-rows';

/** Options of `@groupByValues`. */
export interface GroupByValuesOptions {
  /** Request parameters to group by as well (a request's rows all share its parameters). */
  readonly parameters?: readonly string[];
  /**
   * Makes the groups' outputs the same shape before they are merged into one batch, e.g. `constantPadder(-1)`.
   * The padding is removed again per request when `@batch` splits the outputs. Without it, groups are padded
   * with zeros (empty for BYTES) as long as no response keeps any padding; a request with rows in groups of
   * different output shapes needs it.
   */
  readonly padFn?: PadFn;
}

/** Rows of one group: their positions in the batch, and per request (by index) its rows in the group. */
interface Group {
  readonly rows: number[];
  readonly members: Map<number, number[]>;
}

/**
 * Splits the batch into groups of rows with equal values of the named inputs (and parameters), calls the
 * wrapped function once per group, one after the other, and merges the outputs back in the original row order.
 * Goes below `@batch`. Rows compare bytewise with their dims, so inputs of different shapes simply form
 * different groups; groups whose outputs differ in shape are padded to merge and cut back per request.
 */
export function groupByValues(...names: string[]): BatchDecorator;
export function groupByValues(...args: [...names: string[], options: GroupByValuesOptions]): BatchDecorator;
export function groupByValues(...args: unknown[]): BatchDecorator {
  const { names, options } = namesAndOptions<GroupByValuesOptions>('groupByValues', args);
  const parameters = options.parameters ?? [];
  if (names.length + parameters.length === 0) throw misuse('@groupByValues needs at least one input name or parameter to group by');
  if (options.padFn !== undefined && typeof options.padFn !== 'function') throw misuse('@groupByValues: padFn must be a function, e.g. constantPadder(0)');
  return makeBatchDecorator('groupByValues', async (fn, self, inputs, context) => {
    const { requests, rows } = context;
    const keyParts = names.map((name) => {
      const parts = partsOf(inputs, context, name);
      if (!parts) {
        throw new TritonError('INFERENCE_FAILED', `@groupByValues: input "${name}" is not a batched input of this batch (batched: ${batchedNames(inputs, context).join(', ') || 'none'})`);
      }
      return parts;
    });
    const groups = new Map<string, Group>();
    let position = 0;
    requests.forEach((r, i) => {
      const byParameters = parameters.map((p) => parameterKey(r.parameters[p])).join('\u0001');
      for (let row = 0; row < (rows[i] as number); row++, position++) {
        const key = `${keyParts.map((parts) => rowKey(parts[i] as Tensor, row)).join('\u0000')}\u0002${byParameters}`;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { rows: [], members: new Map() }));
        group.rows.push(position);
        const own = group.members.get(i);
        if (own) own.push(row);
        else group.members.set(i, [row]);
      }
    });
    if (groups.size <= 1) return fn.call(self, inputs, context);

    const batched = batchedNames(inputs, context);
    const plain = plainInputs(inputs, context);
    const parts = new Map(batched.map((n) => [n, partsOf(inputs, context, n) as readonly Tensor[]]));
    const results: BatchOutputs[] = [];
    for (const group of groups.values()) {
      const members = [...group.members];
      const subRequests = members.map(([i, own]): Request => {
        const sub: Record<string, Tensor> = {};
        for (const n of batched) sub[n] = gatherRows((parts.get(n) as readonly Tensor[])[i] as Tensor, own);
        return withInputs(requests[i] as Request, sub);
      });
      const sub = batchContext(
        subRequests,
        members.map(([, own]) => own.length),
        context,
      );
      try {
        const out = await fn.call(self, batchInputs(subRequests, batched, '@groupByValues', plain), sub.context);
        if (typeof out !== 'object' || out === null) {
          throw new TritonError('INFERENCE_FAILED', `@groupByValues: the function must return an object of outputs, got ${out === null ? 'null' : typeof out}`);
        }
        results.push(out);
      } finally {
        sub.dispose();
      }
    }
    return merge(results, [...groups.values()].map((g) => g.rows), context, options.padFn);
  });
}

/**
 * Scatters each group's output rows back to their batch positions. Groups whose outputs differ in shape are
 * padded first (by `padFn`, or with zeros / empty elements), and the dims each row had before are recorded so
 * that `@batch` cuts every response back. Without `padFn` that is only allowed when no response keeps any of
 * the padding, i.e. no request has rows in groups of different shapes.
 */
function merge(results: readonly BatchOutputs[], groupRows: readonly (readonly number[])[], context: BatchContext, padFn: PadFn | undefined): BatchOutputs {
  const total = totalRows(context.rows);
  const names = Object.keys(results[0] as BatchOutputs).sort();
  results.forEach((r, g) => {
    const own = Object.keys(r).sort();
    if (own.join('\0') !== names.join('\0')) {
      throw new TritonError('INFERENCE_FAILED', `@groupByValues: every group must return the same outputs; group 0 returned [${names.join(', ')}], group ${g} returned [${own.join(', ')}]`);
    }
    for (const n of names) checkRows(r[n], (groupRows[g] as readonly number[]).length, `@groupByValues: output "${n}" of group ${g}`);
  });
  const ragged = names.filter((n) => results.some((r) => !sameDims(dimsOf(r[n] as OutputValue), dimsOf((results[0] as BatchOutputs)[n] as OutputValue))));
  const padded = padFn ? padFn(results) : ragged.length > 0 ? constantPadder()(results) : results;
  if (!Array.isArray(padded) || padded.length !== results.length) {
    throw new TritonError('INFERENCE_FAILED', `@groupByValues: padFn must return one output object per group (${results.length}), got ${Array.isArray(padded) ? padded.length : typeof padded}`);
  }
  const merged: BatchOutputs = {};
  const extents: Record<string, (readonly number[] | undefined)[]> = {};
  for (const name of names) {
    const values = padded.map((r) => (r as BatchOutputs)[name] as OutputValue);
    const first = values[0] as OutputValue;
    values.forEach((value, g) => {
      checkRows(value, (groupRows[g] as readonly number[]).length, `@groupByValues: output "${name}" of group ${g} after padFn`);
      if (!sameDims(dimsOf(value), dimsOf(first))) {
        throw new TritonError(
          'INFERENCE_FAILED',
          `@groupByValues: output "${name}" has dims [${dimsOf(first).join(',')}] in group 0 but [${dimsOf(value).join(',')}] in group ${g} after padFn; padFn must pad the groups to one shape`,
        );
      }
      const sameKind = isTyped(value.data) ? value.data.constructor === first.data.constructor : !isTyped(first.data);
      if (!sameKind || (value.dtype !== undefined && first.dtype !== undefined && value.dtype !== first.dtype)) {
        throw new TritonError('INFERENCE_FAILED', `@groupByValues: output "${name}" has another datatype in group ${g} than in group 0`);
      }
    });
    merged[name] = scatterRows(
      values.map((value, g) => ({ rows: groupRows[g] as readonly number[], value })),
      total,
    );
    const perRow = new Array<readonly number[] | undefined>(total);
    let any = false;
    results.forEach((r, g) => {
      const before = dimsOf(r[name] as OutputValue);
      const own = sameDims(before, dimsOf(first)) ? undefined : before;
      const inner = extentsOf(r)?.[name];
      (groupRows[g] as readonly number[]).forEach((row, j) => {
        const e = narrower(own, inner?.[j]);
        if (e) {
          perRow[row] = e;
          any = true;
        }
      });
    });
    if (any) extents[name] = perRow;
    if (!padFn && ragged.includes(name)) checkNoVisiblePadding(name, perRow, dimsOf(first), context);
  }
  return withExtents(merged, extents);
}

/** Fails when a request's rows have different real dims: its response would keep padding whose value nobody chose. */
function checkNoVisiblePadding(name: string, perRow: readonly (readonly number[] | undefined)[], full: readonly number[], context: BatchContext): void {
  let start = 0;
  context.rows.forEach((n, i) => {
    const own = Array.from(perRow.slice(start, start + n), (e) => e ?? full);
    start += n;
    const differing = own.find((e) => !sameDims(e, own[0] as readonly number[]));
    if (differing) {
      throw new TritonError(
        'INFERENCE_FAILED',
        `@groupByValues: output "${name}" has dims [${(own[0] as readonly number[]).join(',')}] and [${differing.join(',')}] in rows of ${describeRequest(context.requests, i)}, ` +
          'so its response must keep padding; give a padFn (e.g. constantPadder(0)) to choose the pad value',
      );
    }
  });
}

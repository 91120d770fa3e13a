import type { BatchOutputs } from './context';

/**
 * Row extents: how much of each row of an output is real, when a batch-level decorator padded it.
 *
 * A batch output is one tensor, so all its rows share one shape; `@padBatch` and `@groupByValues` (with a
 * `padFn`) record, per output and per row, the non-batch dims the row had before padding. `@batch` cuts each
 * request's slice back to them when it splits the outputs. They travel on the outputs object under a symbol,
 * so user code never sees them and batch-level decorators that return the outputs object as it is keep them.
 */
const EXTENTS: unique symbol = Symbol('tstriton.rowExtents');

/** Per output name, per row: the row's real non-batch dims, or undefined when the row is not padded. */
export type RowExtents = Readonly<Record<string, readonly (readonly number[] | undefined)[]>>;

type WithExtents = BatchOutputs & { [EXTENTS]?: RowExtents };

/** The row extents carried by `outputs`, if any. */
export function extentsOf(outputs: BatchOutputs): RowExtents | undefined {
  return (outputs as WithExtents)[EXTENTS];
}

/** `outputs` with `extents` attached (a new object unless there are none to attach). */
export function withExtents(outputs: BatchOutputs, extents: RowExtents): BatchOutputs {
  if (Object.keys(extents).length === 0) return outputs;
  const out: WithExtents = { ...outputs };
  Object.defineProperty(out, EXTENTS, { value: extents, enumerable: false });
  return out;
}

/** Element-wise minimum of two extents; undefined means "the full row". */
export function narrower(a: readonly number[] | undefined, b: readonly number[] | undefined): readonly number[] | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.map((d, i) => Math.min(d, b[i] ?? d));
}

/**
 * The dims one request's slice is cut back to: the element-wise maximum of its rows' extents (a response is
 * one rectangular tensor). Undefined when any of its rows is unpadded, or when it has no rows.
 */
export function requestExtent(rows: readonly (readonly number[] | undefined)[]): readonly number[] | undefined {
  let out: number[] | undefined;
  for (const r of rows) {
    if (!r) return undefined;
    out = out ? out.map((d, i) => Math.max(d, r[i] ?? d)) : [...r];
  }
  return out;
}

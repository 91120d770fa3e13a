import { checkFamilySpec, checkLabels, checkUpdate, type CustomMetricFamily, type CustomMetrics, type MetricFamilySpec } from '../../callable/custom-metrics';
import { TritonError } from '../../base/errors';
import type { FromWorker } from './messages';

/**
 * `context.metrics` in a worker thread: checks every call where it is made (so the callable gets the error), and
 * sends families and updates to the main thread, which applies them to the server's registry. Updates travel on
 * the same port as results, so a batch's updates are applied before its responses are.
 */
export class WorkerMetrics implements CustomMetrics {
  private readonly families = new Map<string, CustomMetricFamily>();

  constructor(private readonly post: (message: FromWorker) => void) {}

  family(spec: MetricFamilySpec): CustomMetricFamily {
    const checked = checkFamilySpec(spec);
    const known = this.families.get(checked.name);
    if (known) {
      if (JSON.stringify(known.spec) !== JSON.stringify(checked)) {
        throw new TritonError('INVALID_ARGUMENT', `custom metric family '${checked.name}' is registered already as ${JSON.stringify(known.spec)}; got ${JSON.stringify(checked)}`);
      }
      return known;
    }
    this.post({ type: 'metric-family', spec: checked });
    const post = this.post;
    const family: CustomMetricFamily = {
      spec: checked,
      metric(labels) {
        const values = checkLabels(checked, labels);
        const send = (op: 'increment' | 'set' | 'observe', value: number) => {
          checkUpdate(checked, op, value);
          post({ type: 'metric', name: checked.name, labels: values, op, value });
        };
        return {
          increment: (value = 1) => send('increment', value),
          set: (value) => send('set', value),
          observe: (value) => send('observe', value),
        };
      },
    };
    this.families.set(checked.name, family);
    return family;
  }
}

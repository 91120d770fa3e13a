import { workers, type Triton } from 'tstriton';
import { FEATURES, SCORES } from './scorer';

/**
 * Binds `scorer` as a first binding often is: one worker thread, batches of up to 8 rows, no queue delay.
 * `tstriton analyze --module examples/scorer/model.ts --model scorer` finds better settings.
 */
export default function bindScorer(triton: Triton): void {
  triton.bind({
    modelName: 'scorer',
    inferFunc: workers({ module: require.resolve('./scorer'), devices: ['cpu'] }),
    inputs: [{ name: 'features', dtype: 'FP32', shape: [FEATURES] }],
    outputs: [{ name: 'scores', dtype: 'FP32', shape: [SCORES] }],
    config: { maxBatchSize: 8 },
  });
}

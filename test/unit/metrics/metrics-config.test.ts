import { DEFAULT_QUANTILES, parseMetricsConfig } from '../../../lib/metrics/metrics-config';

describe('parseMetricsConfig (Triton --metrics-config)', () => {
  it('defaults to Triton: counters on, summaries and histograms off, Triton quantiles', () => {
    expect(parseMetricsConfig(undefined)).toEqual({ counterLatencies: true, summaryLatencies: false, histogramLatencies: false, summaryQuantiles: DEFAULT_QUANTILES });
    expect(DEFAULT_QUANTILES.map((q) => q.quantile)).toEqual([0.5, 0.9, 0.95, 0.99, 0.999]);
  });

  it.each([
    ['summary_latencies=true', { summaryLatencies: true }],
    ['histogram_latencies=true', { histogramLatencies: true }],
    ['counter_latencies=false', { counterLatencies: false }],
    [' summary_latencies = true ; summary_quantiles=0.5:0.05,0.99:0.001 ', { summaryLatencies: true, summaryQuantiles: [{ quantile: 0.5, error: 0.05 }, { quantile: 0.99, error: 0.001 }] }],
  ])('reads %s', (text, expected) => {
    expect(parseMetricsConfig(text)).toMatchObject(expected);
  });

  it.each([
    ['summary_latency=true', /unknown metrics config 'summary_latency'/],
    ['summary_latencies=yes', /summary_latencies must be true or false, got 'yes'/],
    ['summary_quantiles=0.5', /summary_quantiles must be <quantile>:<error>/],
    ['summary_quantiles=1.5:0.1', /got '1.5:0.1'/],
  ])('refuses %s', (text, message) => {
    expect(() => parseMetricsConfig(text)).toThrow(message);
  });
});

/** perf_analyzer's defaults, which `tstriton perf` keeps. */
export const PERF_DEFAULTS = {
  measurementIntervalMs: 5000,
  stabilityPercentage: 10,
  maxTrials: 10,
  sequenceLength: 20,
  numOfSequences: 4,
} as const;

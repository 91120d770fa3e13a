import { FRONT_END_YOUNG_GENERATION_MB, frontEndResourceLimits } from '../../../lib/server/front-end/front-end-heap';

describe('frontEndResourceLimits', () => {
  it.each<[string, string[], object]>([
    ['caps the young generation of a front-end thread', [], { maxYoungGenerationSizeMb: FRONT_END_YOUNG_GENERATION_MB }],
    ['leaves it to a --max-semi-space-size node was started with', ['--max-semi-space-size=32'], {}],
    ['in either spelling', ['--max_semi_space_size', '64'], {}],
  ])('%s', (_name, execArgv, limits) => {
    expect(frontEndResourceLimits(execArgv)).toEqual(limits);
  });
});

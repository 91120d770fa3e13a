import { frontEndResourceLimits } from '../../../lib/server/front-end/front-end-heap';

describe('frontEndResourceLimits', () => {
  it.each<[string, number, string[], object]>([
    ['sets the young generation of a front-end thread', 48, [], { maxYoungGenerationSizeMb: 48 }],
    ['leaves it to V8 at 0', 0, [], {}],
    ['leaves it to a --max-semi-space-size node was started with', 48, ['--max-semi-space-size=32'], {}],
    ['in either spelling', 48, ['--max_semi_space_size', '64'], {}],
  ])('%s', (_name, megabytes, execArgv, limits) => {
    expect(frontEndResourceLimits(megabytes, execArgv)).toEqual(limits);
  });
});

import { spawnSync } from 'node:child_process';
import { TritonConfig } from '../../../lib/config/triton-config';
import { validateOrThrow } from '../../../lib/config/validate';
import { markingTriggerFlags } from '../../../lib/server/marking-triggers';

describe('V8 marking triggers', () => {
  it('sets both flags by default', () => {
    const config = new TritonConfig();
    expect(markingTriggerFlags({ soft: config.incrementalMarkingSoftTrigger, hard: config.incrementalMarkingHardTrigger }, [])).toEqual([
      '--incremental-marking-soft-trigger=80',
      '--incremental-marking-hard-trigger=95',
    ]);
  });

  it('leaves a trigger of 0 to V8', () => {
    expect(markingTriggerFlags({ soft: 0, hard: 90 }, [])).toEqual(['--incremental-marking-hard-trigger=90']);
    expect(markingTriggerFlags({ soft: 0, hard: 0 }, [])).toEqual([]);
  });

  it('leaves a flag node was started with, in either spelling', () => {
    expect(markingTriggerFlags({ soft: 80, hard: 95 }, ['--incremental_marking_soft_trigger=50'])).toEqual(['--incremental-marking-hard-trigger=95']);
    expect(markingTriggerFlags({ soft: 80, hard: 95 }, ['--max-old-space-size=512', '--incremental-marking-hard-trigger=99'])).toEqual([
      '--incremental-marking-soft-trigger=80',
    ]);
  });

  it('takes the triggers from the environment and refuses percentages out of range', () => {
    const config = TritonConfig.fromEnv({ TSTRITON_INCREMENTAL_MARKING_SOFT_TRIGGER: '0', TSTRITON_INCREMENTAL_MARKING_HARD_TRIGGER: '90' });
    expect([config.incrementalMarkingSoftTrigger, config.incrementalMarkingHardTrigger]).toEqual([0, 90]);
    expect(() => validateOrThrow(new TritonConfig({ incrementalMarkingSoftTrigger: 101 }), 'TritonConfig')).toThrow(/incrementalMarkingSoftTrigger/);
    expect(() => validateOrThrow(new TritonConfig({ incrementalMarkingHardTrigger: -1 }), 'TritonConfig')).toThrow(/incrementalMarkingHardTrigger/);
  });

  it('sets flags V8 knows: node accepts each on its command line', () => {
    // V8 ignores an unknown flag given to setFlagsFromString; on the command line node refuses it.
    for (const flag of markingTriggerFlags({ soft: 80, hard: 95 }, [])) {
      const run = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
      expect({ flag, status: run.status, stderr: run.stderr }).toEqual({ flag, status: 0, stderr: '' });
    }
    const bad = spawnSync(process.execPath, ['--incremental-marking-no-such-trigger=80', '-e', '0'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
  });
});

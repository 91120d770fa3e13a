import { TritonError } from '../../../lib/base/errors';
import { describedVersion, servingVersion } from '../../../lib/model/serving-version';
import type { ModelState } from '../../../lib/model/model-view';
import { thrownBy } from '../../helpers/caught';

const v = (version: string, state: ModelState) => ({ version, state });

describe('servingVersion', () => {
  it.each([
    ['the highest ready version when none is named', undefined, [v('1', 'READY'), v('3', 'READY'), v('2', 'READY')], '3'],
    ['the highest ready one while a higher one loads', undefined, [v('1', 'READY'), v('2', 'LOADING')], '1'],
    ['the highest ready one while a higher one is unloaded', '', [v('2', 'UNAVAILABLE'), v('1', 'READY')], '1'],
    ['the version named', '2', [v('1', 'READY'), v('2', 'READY')], '2'],
    ['a version numbered 10 above 9', undefined, [v('9', 'READY'), v('10', 'READY')], '10'],
  ])('picks %s', (_what, version, versions, picked) => {
    expect(servingVersion('m', version, versions).version).toBe(picked);
  });

  it.each([
    ['a name never known', undefined, [], 'MODEL_NOT_FOUND', "Request for unknown model: 'm' is not found"],
    ['a name never known, with a version', '1', [], 'MODEL_NOT_FOUND', "Request for unknown model: 'm' is not found"],
    ['a known model with no ready version', undefined, [v('1', 'UNAVAILABLE'), v('2', 'LOADING'), v('3', 'UNLOADING')], 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' has no available versions"],
    ['a version the model does not have', '4', [v('1', 'READY')], 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' version 4 is not found"],
    ['a version that is not ready', '2', [v('1', 'READY'), v('2', 'LOADING')], 'MODEL_VERSION_NOT_READY', "Request for unknown model: 'm' version 2 is not at ready state"],
  ])('refuses %s as Triton does', (_what, version, versions, code, message) => {
    const err = thrownBy<TritonError>(() => servingVersion('m', version, versions));
    expect([err.code, err.message]).toEqual([code, message]);
  });
});

describe('describedVersion', () => {
  it('picks the highest version or the one named, whatever its state', () => {
    const versions = [v('1', 'READY'), v('2', 'UNAVAILABLE')];
    expect(describedVersion('m', undefined, versions).version).toBe('2');
    expect(describedVersion('m', '1', versions).version).toBe('1');
  });

  it('refuses a name never known and a version the model does not have', () => {
    expect(thrownBy<TritonError>(() => describedVersion('m', undefined, [])).code).toBe('MODEL_NOT_FOUND');
    expect(thrownBy<TritonError>(() => describedVersion('m', '5', [v('1', 'READY')])).message).toBe("Request for unknown model: 'm' version 5 is not found");
  });
});

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
    expect(servingVersion('m', version, versions, undefined).version).toBe(picked);
  });

  it.each([
    ['a name never known', undefined, [], undefined, 'MODEL_NOT_FOUND', "Request for unknown model: 'm' is not found"],
    ['a name never known, with a version', '1', [], undefined, 'MODEL_NOT_FOUND', "Request for unknown model: 'm' is not found"],
    ['a known model with no ready version', undefined, [v('1', 'UNAVAILABLE'), v('2', 'LOADING'), v('3', 'UNLOADING')], undefined, 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' has no available versions"],
    ['a model whose versions failed to build', undefined, [], ['1', '2'], 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' has no available versions"],
    ['a version that failed to build', '2', [], ['1', '2'], 'MODEL_VERSION_NOT_READY', "Request for unknown model: 'm' version 2 is not at ready state"],
    ['a version a failed load did not try', '3', [], ['1', '2'], 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' version 3 is not found"],
    ['a version the model does not have', '4', [v('1', 'READY')], undefined, 'MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'm' version 4 is not found"],
    ['a version that is not ready', '2', [v('1', 'READY'), v('2', 'LOADING')], undefined, 'MODEL_VERSION_NOT_READY', "Request for unknown model: 'm' version 2 is not at ready state"],
  ] as [string, string | undefined, { version: string; state: ModelState }[], string[] | undefined, string, string][])('refuses %s as Triton does', (_what, version, versions, failed, code, message) => {
    const err = thrownBy<TritonError>(() => servingVersion('m', version, versions, failed));
    expect([err.code, err.message]).toEqual([code, message]);
  });
});

describe('describedVersion', () => {
  it('picks the highest version or the one named, whatever its state', () => {
    const versions = [v('1', 'READY'), v('2', 'UNAVAILABLE')];
    expect(describedVersion('m', undefined, versions, undefined).version).toBe('2');
    expect(describedVersion('m', '1', versions, undefined).version).toBe('1');
  });

  it('refuses a name never known, a version the model does not have, and a model whose versions failed to build', () => {
    expect(thrownBy<TritonError>(() => describedVersion('m', undefined, [], undefined)).code).toBe('MODEL_NOT_FOUND');
    expect(thrownBy<TritonError>(() => describedVersion('m', '5', [v('1', 'READY')], undefined)).message).toBe("Request for unknown model: 'm' version 5 is not found");
    expect(thrownBy<TritonError>(() => describedVersion('m', undefined, [], ['1'])).message).toBe("Request for unknown model: 'm' has no available versions");
  });
});

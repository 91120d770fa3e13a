/**
 * The table of server settings is the one place a setting is declared: each entry alone gives the TritonConfig field
 * (default, bounds, validation), its TSTRITON_* variable, its flag, its line in --help and its rows in docs/cli.md
 * and docs/config.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_SETTINGS, SETTING_KEYS, type SettingKey, type TritonConfigInit } from '../../../lib/config/server-settings';
import { envName, flagName, type SettingSpec } from '../../../lib/config/setting-spec';
import { TritonConfig } from '../../../lib/config/triton-config';
import { validateOrThrow } from '../../../lib/config/validate';
import { FLAGS, parseArgs } from '../../../lib/cli/flags';
import { flagTable, helpText } from '../../../lib/cli/help';
import { serverConfig } from '../../../lib/cli/server-config';

const DOCS = join(__dirname, '../../../docs');

// A setting that misses one of the table's fields does not compile (`npm run typecheck` checks these lines).
// @ts-expect-error an entry without its help line
const _withoutHelp = { x: { type: 'integer', default: 1, section: 'http', triton: false } } satisfies Record<string, SettingSpec>;
// @ts-expect-error an entry without its default (`default: undefined` for a setting that has none)
const _withoutDefault = { x: { type: 'boolean', section: 'http', triton: false, help: 'x' } } satisfies Record<string, SettingSpec>;
// @ts-expect-error a bound that is no field of the table
const _misspelt = { x: { type: 'integer', default: 1, minimum: 0, section: 'http', triton: false, help: 'x' } } satisfies Record<string, SettingSpec>;
void [_withoutHelp, _withoutDefault, _misspelt];

/** A value of a setting other than its default, as its variable and its flag give it (`raw`) and as read (`value`). */
function sample(key: SettingKey, spec: SettingSpec): { raw: string[]; value: unknown } {
  switch (spec.type) {
    case 'integer':
    case 'number': {
      const n = [spec.min, spec.max, 1, 2].find((v) => v !== undefined && v !== spec.default && (spec.min ?? -Infinity) <= v && v <= (spec.max ?? Infinity)) as number;
      return { raw: [String(n)], value: n };
    }
    case 'boolean':
      // exitOnError has no default, and `tstriton serve` makes it true.
      return spec.default === false ? { raw: ['true'], value: true } : { raw: ['false'], value: false };
    case 'list':
      return { raw: ['a', 'b'], value: ['a', 'b'] };
    case 'enum': {
      const other = spec.values.find((v) => v !== spec.default) as string;
      return { raw: [other], value: other };
    }
    default: {
      // `tstriton serve` reads the backend settings it is given.
      const text = key === 'backendConfig' ? 'onnxruntime,default-max-batch-size=2' : 'x';
      return { raw: [text], value: text };
    }
  }
}

describe.each(SETTING_KEYS.map((key) => [key, SERVER_SETTINGS[key] as SettingSpec] as const))('the setting %s', (key, spec) => {
  const flag = `--${flagName(key, spec)}`;
  const { raw, value } = sample(key, spec);

  it('is a TritonConfig field with its default, valid as it is', () => {
    const config = new TritonConfig() as unknown as Record<string, unknown>;
    expect(Object.keys(config)).toContain(key);
    expect(config[key]).toEqual(spec.default);
    expect(() => validateOrThrow(new TritonConfig({ [key]: spec.default } as TritonConfigInit), 'TritonConfig')).not.toThrow();
  });

  it('comes from its TSTRITON_* variable', () => {
    const config = TritonConfig.fromEnv({ [envName(key)]: raw.join(',') }) as unknown as Record<string, unknown>;
    expect(config[key]).toEqual(value);
  });

  it('comes from its flag, which wins over the variable', () => {
    const argv = ['serve', ...raw.flatMap((r) => [flag, r])];
    const fromVariable = spec.type === 'list' ? 'z' : spec.default === undefined ? '' : String(spec.default);
    const config = serverConfig(parseArgs(argv).flags, { [envName(key)]: fromVariable }, false) as unknown as Record<string, unknown>;
    expect(config[key]).toEqual(value);
    expect(FLAGS.filter((f) => f.field === key).map((f) => f.name)).toEqual([flag.slice(2)]);
  });

  it('is listed by --help with its variable, and with the Triton flag when Triton has it', () => {
    const line = helpText(undefined)
      .split('\n')
      .find((l) => l.includes(` ${envName(key)} · `));
    expect(line).toBeDefined();
    expect(line).toContain(spec.triton === false ? 'tstriton only' : `Triton ${spec.triton === true ? flag : spec.triton}`);
    expect(helpText(undefined)).toContain(`  ${flag} `);
  });

  it('is refused outside its bounds, naming the field', () => {
    const refusal = (v: unknown) => () => validateOrThrow(new TritonConfig({ [key]: v } as TritonConfigInit), 'TritonConfig');
    if ((spec.type === 'integer' || spec.type === 'number') && spec.min !== undefined) expect(refusal(spec.min - 1)).toThrow(`${key}: ${key} must not be less than ${spec.min}`);
    if ((spec.type === 'integer' || spec.type === 'number') && spec.max !== undefined) expect(refusal(spec.max + 1)).toThrow(`${key}: ${key} must not be greater than ${spec.max}`);
    if (spec.type === 'integer') expect(refusal(1.5)).toThrow(`${key}: ${key} must be an integer number`);
    if (spec.type === 'enum') expect(refusal('bogus')).toThrow(`${key}: ${key} must be one of ${spec.values.join(', ')}`);
    if (spec.type === 'list') expect(refusal('a')).toThrow(`${key}: ${key} must be an array`);
    expect(refusal(spec.type === 'string' || spec.type === 'list' || spec.type === 'enum' ? 1 : 'text')).toThrow(`invalid TritonConfig: ${key}: `);
  });

  it('is named in docs/config.md', () => {
    const doc = readFileSync(join(DOCS, 'config.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## TritonConfig and environment variables'));
    const end = section.indexOf('\n## ', 1);
    expect(section.slice(0, end < 0 ? undefined : end)).toContain(`\`${key}\``);
  });
});

describe('docs/cli.md', () => {
  it('holds the table of flags as flagTable() writes it from the settings and the commands', () => {
    const doc = readFileSync(join(DOCS, 'cli.md'), 'utf8').split('\n');
    const start = doc.findIndex((l) => l.startsWith('| Flag | Variable |'));
    const end = doc.findIndex((l, i) => i > start && !l.startsWith('|'));
    expect(doc.slice(start, end).join('\n')).toBe(flagTable());
  });
});

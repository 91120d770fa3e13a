import { IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsOptional, IsString, Max, Min } from './class-validator';
import { invalidConfig } from '../base/errors';
import { SERVER_SETTINGS, SETTING_KEYS, type SettingKey, type SettingValues, type TritonConfigInit } from './server-settings';
import { envName, type SettingSpec } from './setting-spec';
import { assignKnown } from './validate';

export { envName } from './setting-spec';
export type { TritonConfigInit } from './server-settings';
export {
  GPU_EXECUTION_PROVIDERS,
  LOG_FORMATS,
  LOG_LEVELS,
  MODEL_CONTROL_MODES,
  type GpuExecutionProvider,
  type LogFormat,
  type LogLevel,
  type ModelControlMode,
} from './setting-spec';

/** The fields of TritonConfig, typed from the table of server settings; the class declares none of its own. */
const SettingFields = class {} as new () => SettingValues;

/**
 * Server settings. Defaults are Triton's; every field can also come from a `TSTRITON_*` variable. Each field, its
 * default, its bounds and its TSDoc come from its entry in `SERVER_SETTINGS` (lib/config/server-settings.ts).
 */
export class TritonConfig extends SettingFields {
  constructor(init?: TritonConfigInit) {
    super();
    const fields = this as unknown as Record<SettingKey, unknown>;
    for (const key of SETTING_KEYS) {
      const value: unknown = SERVER_SETTINGS[key].default;
      fields[key] = Array.isArray(value) ? [...value] : value;
    }
    assignKnown(this, init, SETTING_KEYS, 'TritonConfig');
  }

  /**
   * Settings from `TSTRITON_*` environment variables (`TSTRITON_HTTP_PORT=9000`,
   * `TSTRITON_LOG_LEVEL=debug`), overridden by `init`.
   */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, init?: TritonConfigInit): TritonConfig {
    const fromEnv: Record<string, unknown> = {};
    for (const key of SETTING_KEYS) {
      const raw = env[envName(key)];
      if (raw === undefined || raw === '') continue;
      fromEnv[key] = parseEnvValue(envName(key), raw, SERVER_SETTINGS[key].type);
    }
    return new TritonConfig({ ...(fromEnv as TritonConfigInit), ...stripUndefined(init ?? {}) });
  }
}

/** The class-validator decorators of a setting, in the order they would be written above its field. */
function validators(key: string, spec: SettingSpec): PropertyDecorator[] {
  const list: PropertyDecorator[] = spec.default === undefined ? [IsOptional()] : [];
  switch (spec.type) {
    case 'integer':
    case 'number':
      list.push(spec.type === 'integer' ? IsInt() : IsNumber());
      if (spec.min !== undefined) list.push(Min(spec.min));
      if (spec.max !== undefined) list.push(Max(spec.max));
      break;
    case 'boolean':
      list.push(IsBoolean());
      break;
    case 'string':
      list.push(IsString());
      break;
    case 'list':
      list.push(IsArray(), IsString({ each: true }));
      break;
    case 'enum':
      list.push(IsIn([...spec.values], { message: `${key} must be one of ${spec.values.join(', ')}` }));
      break;
  }
  return list;
}

// Decorators apply from the bottom up, which is the order class-validator reports the constraints in.
for (const key of SETTING_KEYS) for (const decorate of validators(key, SERVER_SETTINGS[key]).reverse()) decorate(TritonConfig.prototype, key);

function parseEnvValue(name: string, raw: string, type: SettingSpec['type']): unknown {
  if (type === 'list') return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (type === 'integer' || type === 'number') {
    const n = Number(raw);
    if (!Number.isFinite(n)) throw invalidConfig(`invalid ${name}: expected a number, got "${raw}"`);
    return n;
  }
  if (type === 'boolean') {
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    throw invalidConfig(`invalid ${name}: expected true or false, got "${raw}"`);
  }
  return raw;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

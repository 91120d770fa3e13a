import type * as ClassValidator from 'class-validator';

/**
 * The parts of class-validator the configuration classes use, each loaded from its own module. The package's
 * index loads every validator it has, libphonenumber-js's metadata and validator.js among them: about 3 MB of
 * heap that the server would carry, and that every full garbage collection would mark, for nothing. These are the
 * same modules the index re-exports (one metadata storage, one validator).
 */
function part<K extends keyof typeof ClassValidator>(path: string, name: K): (typeof ClassValidator)[K] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(`class-validator/cjs/${path}`) as typeof ClassValidator)[name];
}

export const IsArray = part('decorator/typechecker/IsArray', 'IsArray');
export const IsBoolean = part('decorator/typechecker/IsBoolean', 'IsBoolean');
export const IsInt = part('decorator/typechecker/IsInt', 'IsInt');
export const IsNumber = part('decorator/typechecker/IsNumber', 'IsNumber');
export const IsObject = part('decorator/typechecker/IsObject', 'IsObject');
export const IsString = part('decorator/typechecker/IsString', 'IsString');
export const IsIn = part('decorator/common/IsIn', 'IsIn');
export const IsOptional = part('decorator/common/IsOptional', 'IsOptional');
export const ValidateNested = part('decorator/common/ValidateNested', 'ValidateNested');
export const ValidateIf = part('decorator/common/ValidateIf', 'ValidateIf');
export const Matches = part('decorator/string/Matches', 'Matches');
export const Min = part('decorator/number/Min', 'Min');
export const Max = part('decorator/number/Max', 'Max');

export type { ValidationError } from 'class-validator';

const getFromContainer = part('container', 'getFromContainer');
const Validator = part('validation/Validator', 'Validator');

/** class-validator's `validateSync(object, options)`. */
export function validateSync(object: object, options?: ClassValidator.ValidatorOptions): ClassValidator.ValidationError[] {
  return getFromContainer(Validator).validateSync(object, options);
}

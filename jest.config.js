/**
 * Jest runs TypeScript through ts-jest in transpile-only mode (pure JavaScript, no native binaries);
 * type-checking is `npm run typecheck`.
 */
const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json', diagnostics: false }],
  },
  moduleNameMapper: {
    '^tstriton$': '<rootDir>/lib/index.ts',
    '^tstriton/decorators$': '<rootDir>/decorators/index.ts',
    '^tstriton/client$': '<rootDir>/lib/client/index.ts',
  },
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...shared, displayName: 'robustness', testMatch: ['<rootDir>/test/robustness/**/*.test.ts'] },
  ],
};

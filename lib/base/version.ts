/** The package version, reported by server metadata. A unit test keeps it equal to package.json's. */
export const VERSION = '0.1.0';

/**
 * Matching vulnerability advisories to services, with no database and no network: CPE 2.3 names
 * (cpe.ts), the order of product versions (version.ts), NVD `configurations` (configurations.ts) and
 * OSV `affected` ranges (osv.ts).
 */
export * from './configurations.js';
export * from './cpe.js';
export * from './distro.js';
export * from './osv.js';
export * from './package-versions.js';
export * from './version.js';

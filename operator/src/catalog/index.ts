// Templates and the catalog: parse catalog ConfigMaps, merge with the built-ins, resolve an Operation's
// template, check its target and parameters, compute effective capabilities.
export * from './capabilities.ts';
export * from './catalog-schema.ts';
export * from './flow.ts';
export * from './grants.ts';
export * from './merge.ts';
export * from './parameters.ts';
export * from './parameters-limits.ts';
export * from './parse.ts';
export * from './policy.ts';
export * from './resolve.ts';
export * from './schema-validation.ts';
export * from './selectors.ts';
export * from './template.ts';
export { BUILTIN_TEMPLATES, DEFAULT_RUNNER_SERVICE_ACCOUNT, RUNCOMMAND_IMAGES } from './templates/index.ts';

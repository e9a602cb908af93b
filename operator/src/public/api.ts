// `@vworkspace/operator/api`: the operator's API as data — kinds, groups, names, annotations, reasons,
// the TypeBox schemas — and what turns it into CustomResourceDefinitions and the field reference
// (hack/generate.ts writes bundle/manifests/*_crd and docs/api/*.md from it).

export { crdFileName, type KindDefinition, renderCrdYaml } from '../api/crd.ts';
export * from '../api/index.ts';
export { docFileName, spliceGenerated, spliceReference } from '../api/reference.ts';

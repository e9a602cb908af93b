// `@vworkspace/operator/cli`: kubectl-vws's main(), for builds that wrap it (hack/packaging/sea.ts makes
// the single executable the krew plugin ships; it calls main() itself, as CommonJS has no
// `import.meta.main`).
export { main } from '../cli/kubectl-vws.ts';

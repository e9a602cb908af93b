# Velero for real (hack/lib/engines/velero.ts): the server binary, which is also the node-agent and the
# CLI, and the restore helper that File System Backup restores run as an init container in the restored
# pod (Velero takes its image from the velero Deployment); the AWS (S3) plugin and upstream's cp-plugin,
# which copies it into the server's plugin directory from an init container as `velero install` does.
velero_ldflags() {
  local p=github.com/vmware-tanzu/velero/pkg/buildinfo
  echo "-s -w -X $p.Version=$VELERO_VERSION -X $p.GitSHA=$VELERO_VERSION -X $p.GitTreeState=clean"
}
tool_velero() {
  # The module mirror here does not serve k8s.io/cli-runtime v0.33.12 (403), the version Velero pins;
  # the next patch release is the only change (it moves the k8s.io modules to v0.33.13 with it).
  EXTRA_REQUIRES="k8s.io/cli-runtime@v0.33.13" build velero github.com/vmware-tanzu/velero "$VELERO_VERSION" "$VELERO_VERSION" "$(velero_ldflags)" - \
    github.com/vmware-tanzu/velero/cmd/velero github.com/vmware-tanzu/velero/cmd/velero-restore-helper
}
tool_velero_plugin_for_aws() {
  build velero-plugin-for-aws github.com/vmware-tanzu/velero-plugin-for-aws "$VELERO_PLUGIN_FOR_AWS_VERSION" "$VELERO_PLUGIN_FOR_AWS_VERSION" "-s -w" - \
    github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws github.com/vmware-tanzu/velero-plugin-for-aws/hack/cp-plugin
}
ENGINE_TOOLS+=(velero velero-plugin-for-aws)
# Everything the Velero journey needs, the shared object store and storage included.
ENGINE_GROUP[velero]="velero velero-plugin-for-aws minio local-path-provisioner"

# The dynamic PVC provisioner the engines' journeys use (hack/lib/engines/storage.ts): Rancher's
# local-path-provisioner (directories on the node, PersistentVolumes of type `local`).
tool_local_path_provisioner() {
  build local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_PROVISIONER_VERSION" "$LOCAL_PATH_PROVISIONER_VERSION" \
    "-s -w -X main.VERSION=$LOCAL_PATH_PROVISIONER_VERSION" - github.com/rancher/local-path-provisioner
}
ENGINE_TOOLS+=(local-path-provisioner)
ENGINE_GROUP[storage]="local-path-provisioner"

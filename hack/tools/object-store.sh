# The S3-compatible object store the engines back up to (hack/lib/engines/object-store.ts): MinIO's
# server, one static binary (the `mc` client is not needed: buckets are made over S3 by the tests).
tool_minio() {
  build minio github.com/minio/minio "$MINIO_VERSION" "$MINIO_VERSION" \
    "-s -w -X github.com/minio/minio/cmd.Version=$MINIO_VERSION -X github.com/minio/minio/cmd.ReleaseTag=$MINIO_VERSION" - \
    github.com/minio/minio
}
ENGINE_TOOLS+=(minio)
ENGINE_GROUP[object-store]="minio"

# The file-based catalog image: opm serves catalog/ over gRPC (a CatalogSource's spec.image, or
# spec.address when run by hand). The opm version matches OPERATOR_REGISTRY_VERSION in
# hack/versions.env; pin its digest when publishing (the tag is what the release tooling resolves).
# Build: docker build -f catalog.Dockerfile -t <repo>/vworkspace-operator-catalog:<tag> .
FROM quay.io/operator-framework/opm:v1.65.0

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

# The catalog at /configs, and the serve cache built at image build time (faster start, and a broken
# catalog fails the build instead of the pod).
ADD catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

LABEL operators.operatorframework.io.index.configs.v1=/configs

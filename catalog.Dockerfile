# The file-based catalog image: opm serves the rendered catalog over gRPC (a CatalogSource's spec.image,
# or spec.address when run by hand). The opm version matches OPERATOR_REGISTRY_VERSION in
# hack/versions.env; pin its digest when publishing (the tag is what the release tooling resolves).
# The catalog is catalog/template.yaml rendered from its bundle images (docs/release.md):
#   make catalog OUT=bin/rendered-catalog   (opm alpha render-template basic --migrate-level bundle-object-to-csv-metadata)
#   docker build -f catalog.Dockerfile -t <repo>/vworkspace-operator-catalog:<tag> .
FROM quay.io/operator-framework/opm:v1.65.0

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

# The catalog at /configs, and the serve cache built at image build time (faster start, and a broken
# catalog fails the build instead of the pod).
ADD bin/rendered-catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

LABEL operators.operatorframework.io.index.configs.v1=/configs

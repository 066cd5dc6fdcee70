# istiod — build, test and generation targets. See README.md.
GO        ?= go
OUT       ?= out
PKGS      ?= ./...
FUZZTIME  ?= 30s
BENCHTIME ?= 1x

.PHONY: build image test testbin peerbin gen gen-check crds lint bench run fuzz golden clean

# The version stamped into the binary (pkg/version.Version: `istiod version`,
# /version, pilot_info): the nearest tag, the commit, -dirty when the tree has
# uncommitted changes. The image gets it as a build argument (make image), as
# its build context leaves out .git.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# -s -w: no symbol table and no DWARF (a third of the size)
LDFLAGS   ?= -s -w -X github.com/meshplane/istiod/pkg/version.Version=$(VERSION)
IMAGE     ?= istiod:$(VERSION)

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/istiod ./cmd/istiod

image:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# Everything that can run on this machine: unit, golden and integration tests, with the race detector.
test: testbin
	GO=$(GO) ./hack/gotest.sh -race -count=1 -tags xdsverify $(PKGS)

gen: crds
	$(GO) generate ./pkg/config/schema/...
	cd pilot/pkg/networking/envoyfilter && sh gen_types.sh
	$(GO) run ./hack/protogen -go $(GO)

gen-check:
	$(GO) run ./pkg/config/schema/codegen -metadata pkg/config/schema/metadata.yaml -root . -check
	$(GO) run ./hack/crds -check
	cd pilot/pkg/networking/envoyfilter && t=$$(mktemp) && sh gen_types.sh $$t && cmp types.gen.go $$t && rm -f $$t
	$(GO) run ./hack/protogen -go $(GO) -check

# CRDs of istio.io/api and sigs.k8s.io/gateway-api (versions from go.mod) into manifests/crds/.
crds:
	$(GO) run ./hack/crds

# Real kube-apiserver and etcd, Istio's istioctl, pilot-agent and pilot-discovery (the oracle of
# tests/differential), and helm for integration tests, built once per machine into ~/.cache.
testbin:
	./hack/testbin.sh
	./hack/istiobin.sh
	./hack/helmbin.sh
	./hack/istiobin.sh --peer

# Istio's own pilot-discovery alone: the oracle of tests/differential and the peer tests/loadtest
# measures against (-istiod).
peerbin:
	./hack/istiobin.sh --peer

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 ./tests/arch/...
	./hack/treecheck.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

run: build
	$(OUT)/istiod discovery --configDir manifests/examples/bookinfo --meshConfig manifests/examples/mesh.yaml

# Regenerate the golden files of the generators and the security translations (their testdata/).
golden:
	$(GO) test ./pilot/pkg/xds/generators ./pilot/pkg/security/... -run 'TestGoldens|TestGolden' -update

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./pilot/pkg/config/kube/crd
	$(GO) test -run '^$$' -fuzz FuzzADSRequests -fuzztime $(FUZZTIME) ./pilot/pkg/xds
	$(GO) test -run '^$$' -fuzz FuzzKubernetesObjects -fuzztime $(FUZZTIME) ./pilot/pkg/config/kube/crdclient

clean:
	rm -rf $(OUT)

# The two commands a newcomer needs: `make run` and `make test` (README.md).
GO ?= go

.PHONY: run reset test test-cluster test-faults soak-faults lint build bench-booking bench-replay bench-boxoffice image test-image helm-check

# The local playground (README.md): in-process Redis, SQLite under data/, the demo screenings (`demo` for
# the load test, `demo-line` paced for a few browser tabs), a 1 s admission interval so the line visibly
# moves, and the demo checkout (booking.demo_checkout: Pay confirms a held order, no money taken). The
# per-address limits (limits.*) are off: the README's load test plays thousands of users from this one
# machine, which the server's defaults would refuse as one flooding address. The server's own defaults are
# unchanged; a real deployment keeps them. The control room (/admin) is on with an admin key drawn for this
# run and printed here, unless WAITROOM_ADMIN_KEY is set. Any WAITROOM_* variable set in the environment
# wins (WAITROOM_BOOKING_DEMO_CHECKOUT=false beside a confirm key or a checkout URL). The server is built,
# then run in place of the shell, so that after Ctrl-C's clean drain (the server exits 0) make reports no
# error (`go run` exits 1 after an interrupt, whatever the server's status, and make said "Error 1").
# RUN_BIN is where it is built.
RUN_BIN ?= bin/waitroom

run:
	$(GO) build -o $(RUN_BIN) ./cmd/waitroom
	@if [ -z "$${WAITROOM_ADMIN_KEY:-}" ]; then \
		WAITROOM_ADMIN_KEY=local-$$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n'); \
		echo "make run: the control room's admin key for this run is $$WAITROOM_ADMIN_KEY"; \
	else echo "make run: the control room's admin key is \$$WAITROOM_ADMIN_KEY"; fi; \
	export WAITROOM_ADMIN_KEY; \
	WAITROOM_ADMISSION_INTERVAL=$${WAITROOM_ADMISSION_INTERVAL:-1s} \
	WAITROOM_BOOKING_DEMO_CHECKOUT=$${WAITROOM_BOOKING_DEMO_CHECKOUT:-true} \
	WAITROOM_DEMO_LINE=$${WAITROOM_DEMO_LINE:-true} \
	WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=$${WAITROOM_LIMITS_SOCKETS_PER_ADDRESS:-0} \
	WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=$${WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND:-0} \
	WAITROOM_LIMITS_ORDERS_PER_SECOND=$${WAITROOM_LIMITS_ORDERS_PER_SECOND:-0} \
	exec $(RUN_BIN)

# The demo sold again from scratch: its orders deleted, its line emptied (`waitroom reset-demo -force`, on the
# backends `make run` uses). The embedded Redis lives inside the server: stop `make run` first (it refuses
# while one answers); on real Redis and PostgreSQL (WAITROOM_REDIS_ADDR, WAITROOM_DATABASE_URL) it runs
# beside the servers.
reset:
	$(GO) run ./cmd/waitroom reset-demo -force $(ARGS)

# Every test, with the race detector: the embedded backends always, the real Redis and PostgreSQL when they
# answer (with CI set, a missing service fails the run). Tests keep their artifacts (the browser test's
# screenshots) under testdata/artifacts/. The room's JavaScript modules are tested under Node by a Go test
# (web/node_test.go), so this one command runs them too; without node they skip, unless CI is set.
ARTIFACTS := $(CURDIR)/testdata/artifacts

test:
	mkdir -p $(ARTIFACTS)
	$(GO) test -race -count=1 -artifacts -outputdir=$(ARTIFACTS) ./...

# The end-to-end flow on a 3-master Redis Cluster that scripts/redis-cluster.sh starts on free loopback ports
# (two instances, one database): needs redis-server and the real PostgreSQL.
test-cluster:
	$(GO) test -race -count=1 -tags cluster -run Cluster ./e2e/cluster/

# The randomized fault run: two instances behind fault proxies to a Redis of its own (restarted empty once)
# and the real PostgreSQL, a seeded schedule of resets and cuts, the history checked afterwards
# (docs/reliability.md). WAITROOM_FAULT_SEED=<seed> replays a schedule.
test-faults:
	$(GO) test -race -count=1 -tags faults -run RandomFault -v ./e2e/faults/random/

# The soak: the random fault schedule for ten minutes, thousands of users, hundreds of faults
# (docs/reliability.md). Not part of make test; one at a time, it loads the machine.
soak-faults:
	WAITROOM_SOAK=1 $(GO) test -count=1 -tags faults -run Soak -timeout 30m -v ./e2e/faults/random/

# go vet and staticcheck (pinned in go.mod as a tool, run with `go tool staticcheck`), each over the default
# build and the one with the cluster and fault tests; then gofmt over every tracked Go file; then govulncheck
# (pinned likewise), against the live vulnerability database or, when it does not answer, the snapshot in
# scripts/vulndb/ (scripts/vulncheck.sh says which).
lint:
	$(GO) vet ./...
	$(GO) vet -tags cluster,faults ./...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags cluster,faults ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	scripts/vulncheck.sh

build:
	$(GO) build -o bin/ ./cmd/...

# The seed-2 replay: 1,000 admitted users on 10 seats, the seed's SELECT … FOR UPDATE baseline beside our
# reservation path and the HTTP floor, against the real Redis and PostgreSQL (docs/benchmarks.md). ARGS=-warm
# opens every user's connection before the bursts; ARGS=-checkout hold sells ours in hold checkout (the winners'
# orders held, not confirmed).
bench-booking:
	$(GO) run ./bench/booking $(ARGS)

# The seed-1 replay: 30,000 users, 5,000 connected at once, on 1,000 seats with the seed's admission settings
# (1 s, 300, 1,000), on its own Redis and PostgreSQL database; three runs, each on a quiet machine
# (docs/benchmarks.md). RUNS=n for another count.
bench-replay:
	bench/replay/run.sh $(or $(RUNS),3)

# The seed-1 crowd on a hold-mode sale (docs/benchmarks.md, "The box office in hold mode"): 30,000 users, 5,000
# at a time, on 1,000 seats held 5 s while buyers pay; 80% pay after 0.5-3 s, 5% of them are refunded; the
# orders and the webhook outbox checked in PostgreSQL at the end. USERS, ROWS, … in the environment.
bench-boxoffice:
	bench/boxoffice/run.sh

# The container image (Containerfile: a static binary FROM scratch, user 65532, no shell), built with podman,
# or docker when podman is absent. GO_IMAGE is the builder stage's image: by default one made FROM scratch out
# of this machine's own Go toolchain (deploy/podman/go-image.sh), for machines that cannot pull from a
# registry; elsewhere `make image GO_IMAGE=docker.io/library/golang:1.26`. PODMAN_CONF is the podman settings
# this kernel needs (runc, cgroupfs, no default ulimits); PODMAN_CONF= keeps the machine's own.
ENGINE ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
IMAGE ?= waitroom:dev
GO_VERSION := $(patsubst go%,%,$(shell $(GO) env GOVERSION))
LOCAL_GO_IMAGE := localhost/waitroom-go:$(GO_VERSION)
GO_IMAGE ?= $(LOCAL_GO_IMAGE)
PODMAN_CONF ?= $(CURDIR)/deploy/podman/containers.conf
ENGINE_ENV := $(if $(and $(filter podman,$(ENGINE)),$(PODMAN_CONF)),CONTAINERS_CONF=$(PODMAN_CONF))
# podman writes OCI images unless told otherwise, and OCI images have no HEALTHCHECK.
IMAGE_FORMAT := $(if $(filter podman,$(ENGINE)),--format docker)

image:
ifeq ($(GO_IMAGE),$(LOCAL_GO_IMAGE))
	$(ENGINE_ENV) deploy/podman/go-image.sh $(GO_IMAGE) $(ENGINE)
endif
	$(ENGINE_ENV) $(ENGINE) build $(IMAGE_FORMAT) --network host --build-arg GO_IMAGE=$(GO_IMAGE) \
		--build-arg GOPROXY=$$($(GO) env GOPROXY) -t $(IMAGE) -f Containerfile .

# The image end to end (e2e/image, build tag image): the container started on the real Redis and PostgreSQL,
# a client's flow from the line to a reservation through it, its user, its health check, its drain (1012).
test-image: image
	$(ENGINE_ENV) WAITROOM_TEST_IMAGE=$(IMAGE) WAITROOM_TEST_ENGINE=$(ENGINE) \
		$(GO) test -race -count=1 -tags image -v ./e2e/image/

# The Helm chart (deploy/helm/waitroom): helm lint, and helm template with the defaults and with every
# optional part on (ci/all-on-values.yaml), for Kubernetes 1.30 (the chart's least: the preStop sleep
# action), then the rendering checked by deploy's tests. HELM is helm on the PATH, else
# $(go env GOPATH)/bin/helm (go install helm.sh/helm/v3/cmd/helm@v3.22.0).
HELM ?= $(shell command -v helm 2>/dev/null || echo $$($(GO) env GOPATH)/bin/helm)
CHART := deploy/helm/waitroom
KUBE_VERSION ?= 1.30.0

helm-check:
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/all-on-values.yaml
	$(HELM) template waitroom $(CHART) --kube-version $(KUBE_VERSION) >/dev/null
	$(HELM) template waitroom $(CHART) --kube-version $(KUBE_VERSION) -f $(CHART)/ci/all-on-values.yaml >/dev/null
	WAITROOM_HELM=$(HELM) $(GO) test -race -count=1 ./deploy/...

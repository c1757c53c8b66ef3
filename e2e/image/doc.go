// Package image holds the end-to-end tests of the container image (build tag image, `make test-image`): the
// image built by `make image` is started with podman (or docker) on the host's network, on the real Redis
// (a key prefix of its own) and PostgreSQL (a schema of its own), and a client's whole path runs through
// it: a screening created with the admin API, the line, the admission, the reservation with the pass, the
// rows in PostgreSQL. The container is checked to run as an unprivileged user with no shell, to pass its
// own health check, and to drain its sockets with 1012 on SIGTERM; the start-to-ready time is logged.
//
// WAITROOM_TEST_IMAGE names the image (default waitroom:dev) and WAITROOM_TEST_ENGINE the container CLI
// (default podman).
package image

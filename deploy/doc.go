// Package deploy holds no code: its directory is the deployment of waitroom (compose.yaml and the nginx,
// Prometheus and Grafana files it mounts, the podman settings of this build, the Helm chart under helm/),
// and its tests check those files without starting a container: compose_test.go reads compose.yaml with
// the compose specification's own loader, nginx_test.go runs nginx.conf on a loopback port and reads its
// access log, helm_test.go renders the chart with helm and checks what the manifests promise (the probes,
// the drain, the security context, the optional parts).
package deploy

// Tests of the Helm chart (helm/waitroom): rendered by helm itself (WAITROOM_HELM, else helm on the PATH or
// in $(go env GOPATH)/bin; `make helm-check` sets it), with the defaults, with every optional part on, and
// with values the chart must refuse.

package deploy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/config"
	"gopkg.in/yaml.v3"
)

const chart = "helm/waitroom"

// helmBinary finds helm; without one the tests skip, unless make helm-check asked for it by name.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("WAITROOM_HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		if h := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm"); fileExists(h) {
			return h
		}
	}
	t.Skip("helm is not installed (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// manifests is a rendering, by kind (one object each in this chart).
type manifests map[string]map[string]any

// render runs helm template with args and returns its objects, or helm's error output.
func render(t *testing.T, args ...string) (manifests, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", "waitroom", chart, "--kube-version", "1.30.0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	m := manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template's output: %v", err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		if _, dup := m[kind]; dup {
			t.Fatalf("two objects of kind %s", kind)
		}
		m[kind] = obj
	}
	return m, nil
}

func mustRender(t *testing.T, args ...string) manifests {
	t.Helper()
	m, err := render(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	return m
}

// at walks obj by keys (strings for maps, ints for lists) and returns what is there, or nil.
func at(obj any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := obj.(map[string]any)
			obj = m[k]
		case int:
			l, _ := obj.([]any)
			if k >= len(l) {
				return nil
			}
			obj = l[k]
		}
	}
	return obj
}

// container is the Deployment's one container.
func container(m manifests) any {
	return at(m["Deployment"], "spec", "template", "spec", "containers", 0)
}

// envOf is the container's env as a map.
func envOf(m manifests) map[string]string {
	out := map[string]string{}
	list, _ := at(container(m), "env").([]any)
	for _, e := range list {
		out[fmt.Sprint(at(e, "name"))] = fmt.Sprint(at(e, "value"))
	}
	return out
}

// portNames lists the named ports of a list of ports.
func portNames(ports any) string {
	list, _ := ports.([]any)
	var names []string
	for _, p := range list {
		names = append(names, fmt.Sprint(at(p, "name")))
	}
	return strings.Join(names, ",")
}

func TestChartDefaultsProbeDrainAndRunUnprivileged(t *testing.T) {
	m := mustRender(t)
	for _, kind := range []string{"Deployment", "Service", "Secret", "PodDisruptionBudget", "NetworkPolicy"} {
		if m[kind] == nil {
			t.Errorf("the defaults render no %s", kind)
		}
	}
	for _, kind := range []string{"Ingress", "ServiceMonitor"} {
		if m[kind] != nil {
			t.Errorf("the defaults render a %s, want it only when enabled", kind)
		}
	}
	c := container(m)
	checks := []struct {
		what string
		got  any
		want any
	}{
		{"readiness path", at(c, "readinessProbe", "httpGet", "path"), "/readyz"},
		{"liveness path", at(c, "livenessProbe", "httpGet", "path"), "/healthz"},
		{"preStop sleep", at(c, "lifecycle", "preStop", "sleep", "seconds"), 5},
		{"grace", at(m["Deployment"], "spec", "template", "spec", "terminationGracePeriodSeconds"), 20},
		{"runAsNonRoot", at(m["Deployment"], "spec", "template", "spec", "securityContext", "runAsNonRoot"), true},
		{"runAsUser", at(m["Deployment"], "spec", "template", "spec", "securityContext", "runAsUser"), 65532},
		{"readOnlyRootFilesystem", at(c, "securityContext", "readOnlyRootFilesystem"), true},
		{"allowPrivilegeEscalation", at(c, "securityContext", "allowPrivilegeEscalation"), false},
		{"capabilities dropped", at(c, "securityContext", "capabilities", "drop", 0), "ALL"},
		{"image", at(c, "image"), "waitroom:dev"},
		{"secret read", at(c, "envFrom", 0, "secretRef", "name"), at(m["Secret"], "metadata", "name")},
		{"container ports", portNames(at(c, "ports")), "http,ops"},
		{"service ports", portNames(at(m["Service"], "spec", "ports")), "http"},
		{"no startup probe", at(c, "startupProbe"), nil},
	}
	for _, ck := range checks {
		if fmt.Sprint(ck.got) != fmt.Sprint(ck.want) {
			t.Errorf("%s = %v, want %v", ck.what, ck.got, ck.want)
		}
	}
	env := envOf(m)
	for k, want := range map[string]string{"WAITROOM_HTTP_ADDR": ":8080", "WAITROOM_HTTP_OPS_ADDR": ":9180", "WAITROOM_REDIS_ADDR": "redis:6379", "WAITROOM_DEMO_ENABLED": "false"} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"WAITROOM_BOOKING_CONFIRM_KEY", "WAITROOM_WEBHOOKS_SECRET", "WAITROOM_POW_SECRET"} {
		if v := at(m["Secret"], "data", k); v != nil {
			t.Errorf("the defaults' Secret has %s = %v, want none unless set", k, v)
		}
	}
	if v, ok := env["WAITROOM_WEBHOOKS_URL"]; ok {
		t.Errorf("the defaults set WAITROOM_WEBHOOKS_URL = %q, want webhooks off", v)
	}
	// No keys given: one Ed25519 key is generated, kid:base64 of a 32-byte seed.
	keys := secretValue(t, m, "WAITROOM_PASS_KEYS")
	kid, seed, ok := strings.Cut(keys, ":")
	if raw, err := base64.StdEncoding.DecodeString(seed); !ok || kid == "" || err != nil || len(raw) != 32 {
		t.Errorf("the generated WAITROOM_PASS_KEYS = %q, want kid:base64 of 32 bytes", keys)
	}
}

// secretValue decodes one key of the rendered Secret.
func secretValue(t *testing.T, m manifests, key string) string {
	t.Helper()
	v, _ := at(m["Secret"], "data", key).(string)
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || v == "" {
		t.Fatalf("Secret %s = %q: %v", key, v, err)
	}
	return string(raw)
}

func TestChartWithEveryOptionalPartOn(t *testing.T) {
	m := mustRender(t, "-f", chart+"/ci/all-on-values.yaml")
	ing := m["Ingress"]
	for _, a := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
		if got := at(ing, "metadata", "annotations", "nginx.ingress.kubernetes.io/"+a); got != "3600" {
			t.Errorf("Ingress %s = %v, want 3600", a, got)
		}
	}
	if got := at(ing, "metadata", "annotations", "cert-manager.io/cluster-issuer"); got != "letsencrypt" {
		t.Errorf("Ingress keeps the values' annotation: %v, want letsencrypt", got)
	}
	if got := at(ing, "spec", "rules", 0, "http", "paths", 0, "backend", "service", "port", "name"); got != "http" {
		t.Errorf("Ingress backend port = %v, want http", got)
	}
	sm := m["ServiceMonitor"]
	if at(sm, "spec", "endpoints", 0, "port") != "ops" || at(sm, "spec", "endpoints", 0, "path") != "/metrics" || at(sm, "metadata", "labels", "release") != "prometheus" {
		t.Errorf("ServiceMonitor = %v, want the ops port's /metrics with the values' labels", at(sm, "spec"))
	}
	if got := portNames(at(m["Service"], "spec", "ports")); got != "http,ops,gate" {
		t.Errorf("Service ports = %s, want http,ops,gate", got)
	}
	if at(container(m), "startupProbe", "httpGet", "path") != "/healthz" {
		t.Errorf("startupProbe = %v, want /healthz", at(container(m), "startupProbe"))
	}
	env := envOf(m)
	for k, want := range map[string]string{
		"WAITROOM_GATE_PATHS": "/checkout=shop,/tickets=demo", "WAITROOM_GATE_UPSTREAM": "http://shop.default.svc:80",
		"WAITROOM_HTTP_TRUSTED_PROXIES": "10.0.0.0/8", "WAITROOM_HTTP_BEHIND_PROXY": "true", "WAITROOM_ADMISSION_MAX_ACTIVE": "500",
	} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q", k, env[k], want)
		}
	}
	if got := secretValue(t, m, "WAITROOM_PASS_KEYS"); !strings.HasPrefix(got, "k2:") || !strings.Contains(got, ",k1:") {
		t.Errorf("WAITROOM_PASS_KEYS = %q, want the values' keys in order, k2 first", got)
	}
	if got := secretValue(t, m, "WAITROOM_ADMIN_KEY"); got != "ci-admin-key-0123456789" {
		t.Errorf("WAITROOM_ADMIN_KEY = %q", got)
	}
	for k, want := range map[string]string{
		"WAITROOM_BOOKING_CONFIRM_KEY": "ci-confirm-key-0123456789",
		"WAITROOM_WEBHOOKS_SECRET":     "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6sHz2oC9NHs=",
		"WAITROOM_POW_SECRET":          "ci-pow-secret-0123456789abcdefghijklmnop",
	} {
		if got := secretValue(t, m, k); got != want {
			t.Errorf("Secret %s = %q, want %q", k, got, want)
		}
		if _, inEnv := envOf(m)[k]; inEnv {
			t.Errorf("%s is in the pod's env in the clear, want it in the Secret alone", k)
		}
	}
	if got := envOf(m)["WAITROOM_WEBHOOKS_URL"]; got != "https://shop.example/hooks/waitroom" {
		t.Errorf("env WAITROOM_WEBHOOKS_URL = %q, want the values' webhooks.url", got)
	}
}

// TestChartRendersWhatTheServerAccepts loads the all-on rendering's env and Secret as the server's config
// would read them: they pass its validation, and each of the chart's values reaches the setting it names.
func TestChartRendersWhatTheServerAccepts(t *testing.T) {
	m := mustRender(t, "-f", chart+"/ci/all-on-values.yaml")
	vars := envOf(m)
	data, _ := at(m["Secret"], "data").(map[string]any)
	for k := range data {
		vars[k] = secretValue(t, m, k)
	}
	c, err := config.Load("", false, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("the server refuses the all-on rendering's settings: %v", err)
	}
	for _, ck := range []struct{ setting, got, want string }{
		{"booking.confirm_key", c.Booking.ConfirmKey, "ci-confirm-key-0123456789"},
		{"webhooks.secret", c.Webhooks.Secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6sHz2oC9NHs="},
		{"webhooks.url", c.Webhooks.URL, "https://shop.example/hooks/waitroom"},
		{"pow.secret", c.Pow.Secret, "ci-pow-secret-0123456789abcdefghijklmnop"},
		{"admin.key", c.Admin.Key, "ci-admin-key-0123456789"},
		{"booking.checkout", c.Booking.Checkout, "hold"},
		{"booking.checkout_url", c.Booking.CheckoutURL, "https://shop.example/pay?order={code}"},
	} {
		if ck.got != ck.want {
			t.Errorf("the server reads %s = %q, want %q", ck.setting, ck.got, ck.want)
		}
	}
}

// ingressRules reads a NetworkPolicy's ingress rules by port: each port's allowed peers, "anyone" for a
// rule with no from. A rule with no ports would open every port: it is an error.
func ingressRules(t *testing.T, np any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	rules, _ := at(np, "spec", "ingress").([]any)
	for i, r := range rules {
		ports, _ := at(r, "ports").([]any)
		if len(ports) == 0 {
			t.Errorf("NetworkPolicy rule %d has no ports: it opens every port", i)
		}
		peers := "anyone"
		if from, ok := at(r, "from").([]any); ok && len(from) > 0 {
			peers = fmt.Sprint(from)
		}
		for _, p := range ports {
			out[fmt.Sprint(at(p, "port"))] = append(out[fmt.Sprint(at(p, "port"))], peers)
		}
	}
	return out
}

func TestChartKeepsTheOpsPortOffTheServiceAndBehindANetworkPolicy(t *testing.T) {
	m := mustRender(t)
	if got := portNames(at(m["Service"], "spec", "ports")); got != "http" {
		t.Errorf("the defaults' Service ports = %s, want http alone (the ops port published only on request)", got)
	}
	np := m["NetworkPolicy"]
	if got, want := fmt.Sprint(at(np, "spec", "podSelector", "matchLabels")), fmt.Sprint(at(m["Deployment"], "spec", "selector", "matchLabels")); got != want {
		t.Errorf("NetworkPolicy selects %s, want the Deployment's pods %s", got, want)
	}
	if got := fmt.Sprint(at(np, "spec", "policyTypes")); got != "[Ingress]" {
		t.Errorf("NetworkPolicy policyTypes = %s, want [Ingress] (egress to Redis, PostgreSQL and webhooks left open)", got)
	}
	rules := ingressRules(t, np)
	if got := fmt.Sprint(rules["http"]); got != "[anyone]" {
		t.Errorf("NetworkPolicy lets %s reach the http port, want anyone", got)
	}
	if got := fmt.Sprint(rules["ops"]); got != "[[map[namespaceSelector:map[matchLabels:map[kubernetes.io/metadata.name:monitoring]]]]]" {
		t.Errorf("NetworkPolicy lets %s reach the ops port, want the monitoring namespace alone", got)
	}
	if len(rules) != 2 {
		t.Errorf("NetworkPolicy opens %v, want http and ops alone", rules)
	}

	m = mustRender(t, "--set-json", "networkPolicy.opsFrom=[]")
	if rules := ingressRules(t, m["NetworkPolicy"]); rules["ops"] != nil || len(rules) != 1 {
		t.Errorf("with no opsFrom the NetworkPolicy opens %v, want http alone", rules)
	}
	if m := mustRender(t, "--set", "networkPolicy.enabled=false"); m["NetworkPolicy"] != nil {
		t.Error("networkPolicy.enabled=false still renders a NetworkPolicy")
	}

	m = mustRender(t, "-f", chart+"/ci/all-on-values.yaml")
	rules = ingressRules(t, m["NetworkPolicy"])
	if got := fmt.Sprint(rules["gate"]); got != "[anyone]" {
		t.Errorf("with the gate on the NetworkPolicy lets %s reach the gate port, want anyone", got)
	}
	if got := fmt.Sprint(rules["ops"]); !strings.Contains(got, "kubernetes.io/metadata.name:observability") || !strings.Contains(got, "app.kubernetes.io/name:prometheus") {
		t.Errorf("NetworkPolicy lets %s reach the ops port, want the values' Prometheus pods", got)
	}
	if len(rules) != 3 {
		t.Errorf("NetworkPolicy opens %v, want http, gate and ops", rules)
	}
}

func TestChartRendersAnIngressBehindTheProxySettings(t *testing.T) {
	m := mustRender(t, "--set", "ingress.enabled=true,http.behindProxy=true,http.trustedProxies={10.0.0.0/8}")
	if m["Ingress"] == nil {
		t.Fatal("ingress.enabled with http.behindProxy renders no Ingress")
	}
	if env := envOf(m); env["WAITROOM_HTTP_BEHIND_PROXY"] != "true" || env["WAITROOM_HTTP_TRUSTED_PROXIES"] != "10.0.0.0/8" {
		t.Errorf("env behind_proxy %q, trusted_proxies %q, want true and 10.0.0.0/8", env["WAITROOM_HTTP_BEHIND_PROXY"], env["WAITROOM_HTTP_TRUSTED_PROXIES"])
	}
}

// TestChartSellsInHoldModeOnlyWithACheckoutURLAndAConfirmKey: booking.checkout and booking.checkoutUrl
// reach the pods, and a hold-mode sale the payment backend could not take part in is refused (without a
// checkout URL the buyers get the server's demo page, whose Pay button confirms without payment; without
// a confirm key no order could be confirmed).
func TestChartSellsInHoldModeOnlyWithACheckoutURLAndAConfirmKey(t *testing.T) {
	const url = "https://shop.example/pay?order={code}"
	env := envOf(mustRender(t))
	if env["WAITROOM_BOOKING_CHECKOUT"] != "instant" {
		t.Errorf("the defaults' WAITROOM_BOOKING_CHECKOUT = %q, want instant", env["WAITROOM_BOOKING_CHECKOUT"])
	}
	if v, ok := env["WAITROOM_BOOKING_CHECKOUT_URL"]; ok {
		t.Errorf("the defaults set WAITROOM_BOOKING_CHECKOUT_URL = %q, want it unset", v)
	}
	env = envOf(mustRender(t, "--set", "booking.checkout=hold", "--set-string", "booking.checkoutUrl="+url, "--set", "secrets.confirmKey=confirm-key-0123456789"))
	if env["WAITROOM_BOOKING_CHECKOUT"] != "hold" || env["WAITROOM_BOOKING_CHECKOUT_URL"] != url {
		t.Errorf("env checkout %q, checkout URL %q, want hold and %s", env["WAITROOM_BOOKING_CHECKOUT"], env["WAITROOM_BOOKING_CHECKOUT_URL"], url)
	}
	if _, err := render(t, "--set", "booking.checkout=hold", "--set-string", "booking.checkoutUrl="+url, "--set", "secrets.existingSecret=waitroom-keys"); err != nil {
		t.Errorf("hold mode with the confirm key in an existingSecret: %v, want it rendered", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "booking.checkout=later"}, "booking.checkout must be instant or hold"},
		{[]string{"--set", "booking.checkout=hold", "--set", "secrets.confirmKey=confirm-key-0123456789"}, "booking.checkout hold needs booking.checkoutUrl"},
		{[]string{"--set", "booking.checkout=hold", "--set-string", "booking.checkoutUrl=" + url}, "booking.checkout hold needs secrets.confirmKey"},
		{[]string{"--set-string", "booking.checkoutUrl=https://shop.example/pay"}, "booking.checkoutUrl must be an http(s) URL with {code} in it"},
		{[]string{"--set-string", "booking.checkoutUrl=shop.example/pay?order={code}"}, "booking.checkoutUrl must be an http(s) URL with {code} in it"},
	} {
		if _, err := render(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: %v, want a refusal with %q", tc.args, err, tc.want)
		}
	}
}

func TestChartUsesAnExistingSecretInsteadOfItsOwn(t *testing.T) {
	m := mustRender(t, "--set", "secrets.existingSecret=waitroom-keys")
	if m["Secret"] != nil {
		t.Error("with existingSecret the chart still renders a Secret")
	}
	if got := at(container(m), "envFrom", 0, "secretRef", "name"); got != "waitroom-keys" {
		t.Errorf("the pods read the Secret %v, want waitroom-keys", got)
	}
	// The webhooks' secret may be one of that Secret's keys.
	if _, err := render(t, "--set", "secrets.existingSecret=waitroom-keys", "--set", "webhooks.url=https://shop.example/hooks"); err != nil {
		t.Errorf("webhooks.url with an existingSecret: %v, want it rendered (the secret is the existing Secret's)", err)
	}
}

func TestChartRefusesValuesTheServerOrTheDrainCannotWorkWith(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"drain.terminationGracePeriodSeconds=15", "must exceed drain.preStopSleepSeconds + 10"},
		{"redis.addr=", "redis.addr is required"},
		{"secrets.databaseURL=", "secrets.databaseURL (or secrets.existingSecret) is required"},
		{"http.behindProxy=true", "http.behindProxy needs http.trustedProxies"},
		{"gate.enabled=true", "gate.enabled needs gate.upstream and gate.paths"},
		{"secrets.adminKey=short", "at least 16 characters"},
		{"serviceMonitor.enabled=true", "serviceMonitor.enabled needs service.publishOpsPort"},
		// Behind an Ingress every TCP peer is the controller: one address for the limits and the admin lockout.
		{"ingress.enabled=true", "ingress.enabled needs http.behindProxy: true"},
		{"ingress.enabled=true,http.behindProxy=false,http.trustedProxies={10.0.0.0/8}", "ingress.enabled needs http.behindProxy: true"},
		{"secrets.confirmKey=short", "secrets.confirmKey must be at least 16 characters"},
		{"secrets.confirmKey=same-key-0123456789,secrets.adminKey=same-key-0123456789", "secrets.confirmKey must not be secrets.adminKey"},
		{"secrets.webhooksSecret=whsec_this-is-not-base64-at-all!!", `secrets.webhooksSecret must be "whsec_" and standard, padded base64`},
		{"secrets.webhooksSecret=0123456789abcdefghijklmnopqrstuvwxyz", `secrets.webhooksSecret must be "whsec_"`},
		{"secrets.webhooksSecret=whsec_paWlpaWlpaWlpaWlpaWlpQ==", "secrets.webhooksSecret must decode to 24 to 64 bytes, got 16"},
		{"secrets.powSecret=short", "secrets.powSecret must be at least 32 characters"},
		{"webhooks.url=https://shop.example/hooks", "webhooks.url needs secrets.webhooksSecret"},
		{"webhooks.url=ftp://shop.example/hooks,secrets.webhooksSecret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "webhooks.url must be an http(s) URL"},
	} {
		if _, err := render(t, "--set", tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %s: %v, want a refusal with %q", tc.set, err, tc.want)
		}
	}
}

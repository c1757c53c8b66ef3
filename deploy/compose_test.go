// Tests of deploy/compose.yaml and the files it mounts, without starting a container: the compose
// specification's own loader (compose-go) reads it as docker compose would, with the example settings;
// nginx checks its configuration when it is installed; the Prometheus and Grafana files name what compose
// runs.

package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

// instances are the waitroom services of compose.yaml.
var instances = []string{"waitroom-1", "waitroom-2"}

// loadCompose loads compose.yaml with env as the environment (compose interpolates ${…} from it).
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml")}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("waitroom", true) })
}

// exampleEnv is compose.env.example, the settings the docs tell an operator to start from.
func exampleEnv(t *testing.T) map[string]string {
	t.Helper()
	env, err := dotenv.Read("compose.env.example")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestComposeFileLoadsWithTheExampleSettings(t *testing.T) {
	p, err := loadCompose(t, exampleEnv(t))
	if err != nil {
		t.Fatalf("loading compose.yaml: %v", err)
	}
	for _, name := range []string{"redis", "postgres", "waitroom-1", "waitroom-2", "nginx", "prometheus", "grafana"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("compose.yaml has no service %s", name)
		}
	}
	nginxIP := p.Services["nginx"].Networks["waitroom"].Ipv4Address
	for _, name := range instances {
		s := p.Services[name]
		if s.Build == nil || s.Build.Dockerfile != "Containerfile" || filepath.Base(s.Build.Context) != filepath.Base(mustAbs(t, "..")) {
			t.Errorf("%s builds from %+v, want the repository's Containerfile", name, s.Build)
		}
		env := func(k string) string {
			if v := s.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		for k, want := range map[string]string{
			"WAITROOM_REDIS_ADDR":           "redis:6379",
			"WAITROOM_PASS_KEYS":            exampleEnv(t)["WAITROOM_PASS_KEYS"],
			"WAITROOM_ADMIN_KEY":            exampleEnv(t)["WAITROOM_ADMIN_KEY"],
			"WAITROOM_HTTP_BEHIND_PROXY":    "true",
			"WAITROOM_HTTP_TRUSTED_PROXIES": nginxIP,
		} {
			if got := env(k); got != want || want == "" {
				t.Errorf("%s: %s = %q, want %q", name, k, got, want)
			}
		}
		if !strings.HasPrefix(env("WAITROOM_DATABASE_URL"), "postgres://waitroom:waitroom@postgres:5432/waitroom") {
			t.Errorf("%s: WAITROOM_DATABASE_URL = %q, want the postgres service", name, env("WAITROOM_DATABASE_URL"))
		}
		for _, dep := range []string{"redis", "postgres"} {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s depends on %s as %+v, want service_healthy", name, dep, d)
			}
		}
		// The drain (10 s) must fit in the time compose waits before it kills.
		if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= 10*time.Second {
			t.Errorf("%s: stop_grace_period %v, want more than the 10 s drain", name, s.StopGracePeriod)
		}
		if _, ok := p.Services["nginx"].DependsOn[name]; !ok {
			t.Errorf("nginx does not wait for %s", name)
		}
	}
	if ports := p.Services["nginx"].Ports; len(ports) != 1 || ports[0].Published != "8080" || ports[0].Target != 8080 {
		t.Errorf("nginx publishes %+v, want 8080 → 8080", ports)
	}
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s, which is not in the repository: %v", s.Name, v.Source, err)
			}
		}
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestComposeFileRefusesToStartWithoutTheSecrets(t *testing.T) {
	for _, missing := range []string{"WAITROOM_PASS_KEYS", "WAITROOM_ADMIN_KEY"} {
		env := exampleEnv(t)
		delete(env, missing)
		_, err := loadCompose(t, env)
		if err == nil || !strings.Contains(err.Error(), "set "+missing) {
			t.Errorf("compose.yaml without %s: %v, want a refusal naming it", missing, err)
		}
	}
}

// nginxBinary finds nginx; without it the nginx tests skip, unless WAITROOM_REQUIRE_NGINX (.ci/run) asks
// for it.
func nginxBinary(t *testing.T) string {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if os.Getenv("WAITROOM_REQUIRE_NGINX") != "" {
			t.Fatalf("WAITROOM_REQUIRE_NGINX is set and nginx is not installed: %v", err)
		}
		t.Skip("nginx is not installed")
	}
	return nginx
}

// TestNginxConfigIsValid runs `nginx -t` on nginx.conf, its upstream names resolved to loopback (they are
// compose's service names), when nginx is installed; with WAITROOM_REQUIRE_NGINX set (.ci/run) it must be.
func TestNginxConfigIsValid(t *testing.T) {
	nginx := nginxBinary(t)
	conf, err := os.ReadFile("nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proxy_set_header Upgrade $http_upgrade;", "proxy_set_header Connection $connection_upgrade;", "proxy_read_timeout 3600s;", "server waitroom-1:8080", "server waitroom-2:8080"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nginx.conf has no %q", want)
		}
	}
	dir := t.TempDir()
	local := strings.NewReplacer("waitroom-1:8080", "127.0.0.1:8080", "waitroom-2:8080", "127.0.0.2:8080").Replace(string(conf))
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nginx, "-t", "-p", dir, "-c", path, "-g", "pid "+filepath.Join(dir, "nginx.pid")+";").CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
}

func TestPrometheusScrapesBothInstancesOpsPort(t *testing.T) {
	var cfg struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &cfg)
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "/metrics" {
			t.Errorf("metrics_path %q, want /metrics", sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	slices.Sort(targets)
	if got := strings.Join(targets, " "); got != "waitroom-1:9180 waitroom-2:9180" {
		t.Errorf("Prometheus scrapes %q, want both instances' ops port 9180", got)
	}
}

func TestGrafanaProvisionsTheDashboardOnPrometheus(t *testing.T) {
	var ds struct {
		Datasources []struct {
			Type      string `yaml:"type"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yaml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" || !ds.Datasources[0].IsDefault {
		t.Errorf("Grafana's data sources = %+v, want the prometheus service as the default", ds.Datasources)
	}
	var dash struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/waitroom.yaml", &dash)
	if len(dash.Providers) != 1 || dash.Providers[0].Type != "file" {
		t.Fatalf("Grafana's dashboard providers = %+v, want one of type file", dash.Providers)
	}
	// The provider's folder is where compose mounts the dashboard.
	p, err := loadCompose(t, exampleEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range p.Services["grafana"].Volumes {
		if filepath.Base(v.Source) == "waitroom-dashboard.json" && filepath.Dir(v.Target) == dash.Providers[0].Options.Path {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the dashboard is not mounted under the provider's path %s", dash.Providers[0].Options.Path)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

package app

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/log"
)

type discoveryRun struct {
	args           bootstrap.PilotArgs
	ran            bool
	code           int
	stdout, stderr string
}

// discover runs `istiod discovery args...` up to the point where the
// server would start, and returns what it would have started with. The
// logging it configured is undone when the test ends.
func discover(t *testing.T, args ...string) discoveryRun {
	t.Helper()
	t.Cleanup(func() {
		_ = log.Configure(log.Options{OutputLevels: "all:info", StackTraceLevels: "all:none"})
		for _, s := range log.Scopes() {
			s.SetLogCallers(false)
		}
	})
	var r discoveryRun
	var out, errb bytes.Buffer
	root := newRootCommand("istiod", &out, &errb, func(a bootstrap.PilotArgs) error {
		r.args, r.ran = a, true
		log.Infof("would start")
		log.RegisterScope("flagtest", "").Errorf("an error")
		return nil
	})
	root.SetArgs(append([]string{"discovery"}, args...))
	cmd, err := root.ExecuteC()
	r.code = report(cmd, err, &errb)
	r.stdout, r.stderr = out.String(), errb.String()
	return r
}

// A certificate from files, the TLS settings and the cluster flags reach
// the server's arguments, parsed.
func TestDiscoveryTLSAndClusterFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	r := discover(t, "--tlsCertFile", "/c/tls.crt", "--tlsKeyFile", "/c/tls.key", "--caCertFile", "/c/ca.crt",
		"--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"--tls-min-version", "1.3", "--clusterAliases", "old=Kubernetes,older=east",
		"--clusterRegistriesNamespace", "secrets", "--cniNamespace", "kube-system")
	if r.code != 0 || !r.ran {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	a := r.args
	want := bootstrap.TLSOptions{CertFile: "/c/tls.crt", KeyFile: "/c/tls.key", CaCertFile: "/c/ca.crt", MinVersion: tls.VersionTLS13,
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	if !reflect.DeepEqual(a.TLS, want) {
		t.Errorf("TLS %+v, want %+v", a.TLS, want)
	}
	if !reflect.DeepEqual(a.ClusterAliases, map[string]string{"old": "Kubernetes", "older": "east"}) ||
		a.ClusterRegistriesNamespace != "secrets" || a.CniNamespace != "kube-system" {
		t.Errorf("aliases %v, registries %q, cni %q", a.ClusterAliases, a.ClusterRegistriesNamespace, a.CniNamespace)
	}

	// defaults: TLS 1.2, Go's suites, POD_NAMESPACE for both namespaces
	t.Setenv("POD_NAMESPACE", "mesh")
	r = discover(t)
	if r.code != 0 || r.args.TLS.MinVersion != tls.VersionTLS12 || r.args.TLS.CipherSuites != nil ||
		r.args.ClusterRegistriesNamespace != "mesh" || r.args.CniNamespace != "mesh" || len(r.args.ClusterAliases) != 0 {
		t.Errorf("defaults: %d %+v %q %q %v", r.code, r.args.TLS, r.args.ClusterRegistriesNamespace, r.args.CniNamespace, r.args.ClusterAliases)
	}
	// an explicit flag wins over POD_NAMESPACE
	r = discover(t, "--cniNamespace", "cni", "--clusterRegistriesNamespace", "regs")
	if r.args.CniNamespace != "cni" || r.args.ClusterRegistriesNamespace != "regs" || r.args.Namespace != "mesh" {
		t.Errorf("explicit: %q %q %q", r.args.CniNamespace, r.args.ClusterRegistriesNamespace, r.args.Namespace)
	}
}

// What pilot-discovery refuses before it starts, with its messages.
func TestDiscoveryRefusesBadTLSAndAliases(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-min-version", "1.1"}, "minimum TLS version: 1.1 is not supported. Only 1.2 and 1.3 are supported"},
		{[]string{"--tls-cipher-suites", "ECDHE-RSA-AES128-GCM-SHA256"}, "cipher suite ECDHE-RSA-AES128-GCM-SHA256 not supported or doesn't exist"},
		{[]string{"--clusterAliases", "a=east,b=east"}, "More than one cluster alias for cluster id: east"},
	} {
		r := discover(t, tc.args...)
		if r.ran || r.code != 1 || r.stderr != "Error: "+tc.want+"\nRun 'istiod discovery --help' for usage.\n" {
			t.Errorf("%v: ran %v, exit %d, stderr %q", tc.args, r.ran, r.code, r.stderr)
		}
	}
}

var istioLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\t(debug|info|warn|error)\t`)

// Logs go to stdout in Istio's format, starting with the flags; the
// ControlZ flags are accepted and each given one is said, once, to be
// ignored.
func TestDiscoveryLogsAndIgnoredFlags(t *testing.T) {
	r := discover(t, "--ctrlz_port", "9999", "--ctrlz_address", "0.0.0.0")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines {
		if !istioLine.MatchString(l) {
			t.Errorf("not Istio's format: %q", l)
		}
	}
	for _, want := range []string{"\tinfo\tFLAG: --ctrlz_port=\"9999\"", "\tinfo\tFLAG: --log_target=\"[stdout]\"",
		"\tinfo\twould start", "\terror\tflagtest\tan error"} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("no line ending with %q in\n%s", want, r.stdout)
		}
	}
	for _, f := range []string{"ctrlz_port", "ctrlz_address"} {
		if n := strings.Count(r.stdout, "\twarn\t--"+f+" is ignored: this istiod serves no ControlZ introspection\n"); n != 1 {
			t.Errorf("%d warnings for --%s", n, f)
		}
	}
	if r := discover(t); strings.Contains(r.stdout, "is ignored") {
		t.Errorf("warned about flags not given:\n%s", r.stdout)
	}
}

// The logging flags: targets, JSON, callers, stack traces, levels and a
// rotated file.
func TestDiscoveryLogFlags(t *testing.T) {
	dir := t.TempDir()
	file, rotated := filepath.Join(dir, "istiod.log"), filepath.Join(dir, "rotated.log")
	r := discover(t, "--log_target", "stderr", "--log_target", file, "--log_as_json", "--log_caller", "default",
		"--log_stacktrace_level", "flagtest:error", "--log_output_level", "default:info,flagtest:error",
		"--log_rotate", rotated, "--log_rotate_max_size", "1", "--log_rotate_max_age", "2", "--log_rotate_max_backups", "3")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("exit %d stdout %q", r.code, r.stdout)
	}
	if !regexp.MustCompile(`\{"level":"info","time":"[^"]+","caller":"app/discovery_flags_test.go:\d+","msg":"would start"\}\n`).MatchString(r.stderr) {
		t.Errorf("no JSON line with a caller:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `"scope":"flagtest","msg":"an error","stack":"`) {
		t.Errorf("no stack trace:\n%s", r.stderr)
	}
	for _, f := range []string{file, rotated} {
		if b, err := os.ReadFile(f); err != nil || string(b) != r.stderr {
			t.Errorf("%s: %v, %d bytes, not the %d of stderr", f, err, len(b), len(r.stderr))
		}
	}
	r = discover(t, "--log_output_level", "default:loud")
	if r.ran || r.code != 1 || !strings.HasPrefix(r.stderr, "Error: invalid output level 'loud'\n") {
		t.Errorf("bad level: %v %d %q", r.ran, r.code, r.stderr)
	}
	r = discover(t, "--log_stacktrace_level", "a:b:c")
	if r.ran || !strings.HasPrefix(r.stderr, "Error: invalid output level format 'a:b:c'\n") {
		t.Errorf("bad stack level: %q", r.stderr)
	}
}

// Every logging flag reaches the logging options, with Istio's defaults
// (those of the rotation flags are from the Istio releases that had them).
func TestLogFlagsMapToOptions(t *testing.T) {
	lo := defaultLogOptions()
	fs := pflag.NewFlagSet("discovery", pflag.ContinueOnError)
	addLogFlags(fs, &lo)
	var stdout, stderr bytes.Buffer
	want := log.Options{OutputLevels: "default:info", StackTraceLevels: "default:none", OutputPaths: []string{"stdout"},
		RotationMaxAge: 30, RotationMaxSize: 104857600, RotationMaxBackups: 1000, Stdout: &stdout, Stderr: &stderr}
	if got := lo.options(&stdout, &stderr); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %+v\nwant %+v", got, want)
	}
	if err := fs.Parse([]string{"--log_output_level=ads:debug", "--log_stacktrace_level=default:error", "--log_caller=ads,xds",
		"--log_as_json", "--log_target=/var/log/a", "--log_target=stderr", "--log_rotate=/var/log/r",
		"--log_rotate_max_age=7", "--log_rotate_max_size=50", "--log_rotate_max_backups=2"}); err != nil {
		t.Fatal(err)
	}
	want = log.Options{OutputLevels: "ads:debug", StackTraceLevels: "default:error", LogCallers: "ads,xds", JSON: true,
		OutputPaths: []string{"/var/log/a", "stderr"}, RotateOutputPath: "/var/log/r", RotationMaxAge: 7, RotationMaxSize: 50,
		RotationMaxBackups: 2, Stdout: &stdout, Stderr: &stderr}
	if got := lo.options(&stdout, &stderr); !reflect.DeepEqual(got, want) {
		t.Errorf("set %+v\nwant %+v", got, want)
	}
}

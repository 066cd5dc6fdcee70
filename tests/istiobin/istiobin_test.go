package istiobin

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// The constant here and the default in the script must name one version.
func TestVersionMatchesScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "istiobin.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ISTIO_VERSION="\$\{ISTIOBIN_VERSION:-([^}]+)\}"`).FindSubmatch(script)
	if m == nil {
		t.Fatal(`hack/istiobin.sh has no line ISTIO_VERSION="${ISTIOBIN_VERSION:-...}"`)
	}
	if got := string(m[1]); got != Version {
		t.Errorf("hack/istiobin.sh builds istio.io/istio@%s, Version is %s: change both", got, Version)
	}
}

func TestDirFollowsXDGCacheHome(t *testing.T) {
	t.Setenv(VersionEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if d, _ := Dir(); d != "/x/cache/istiod-testbin/istio-"+Version {
		t.Errorf("Dir() = %s", d)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/x/home")
	if d, _ := Dir(); d != "/x/home/.cache/istiod-testbin/istio-"+Version {
		t.Errorf("Dir() = %s", d)
	}
}

// versionLine is what `version -s` prints: a 1.31.x version, or "unknown"
// for a binary built without Istio's version ldflags, as hack/istiobin.sh
// builds them.
var versionLine = regexp.MustCompile(`(?m)^client version: (1\.31\.\S+|unknown)$`)

func TestPilotAgentVersion(t *testing.T) {
	checkVersion(t, PilotAgent(t), "version", "-s")
}

func TestIstioctlVersion(t *testing.T) {
	checkVersion(t, Istioctl(t), "version", "--remote=false", "-s")
}

func checkVersion(t *testing.T, bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s %s printed no 1.31 (or unknown) client version:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
	if string(m[1]) == "unknown" {
		t.Logf("%s reports version unknown (built without Istio's version ldflags); checking its build information", filepath.Base(bin))
	}
	// Whatever it prints, the binary must be Istio of the chosen commit,
	// built against istio.io/api of the 1.31 line.
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("reading build information of %s: %v", bin, err)
	}
	mods := map[string]string{info.Main.Path: info.Main.Version}
	for _, d := range info.Deps {
		mods[d.Path] = d.Version
	}
	if got := mods["istio.io/istio"]; got != version() {
		t.Errorf("%s is built from istio.io/istio %q, want %s", bin, got, version())
	}
	if got := mods["istio.io/api"]; !strings.HasPrefix(got, "v1.31.") {
		t.Errorf("%s is built with istio.io/api %q, want v1.31.x", bin, got)
	}
}

// reference returns the options of the recorded run
// (../shared/reference/security/real/agent), with the port placeholder.
func reference(port string) AgentOptions {
	return AgentOptions{
		DiscoveryAddress: "127.0.0.1:" + port,
		PodName:          "productpage-v1-abc",
		Namespace:        "bookinfo",
		ServiceAccount:   "bookinfo-productpage",
		AppContainers:    "productpage",
		WorkloadName:     "productpage-v1",
		Labels:           map[string]string{"app": "productpage"},
	}
}

func TestAgentEnvIsTheRecordedOne(t *testing.T) {
	want, err := os.ReadFile(refdata.Dir(t, "security/real/agent/agent.env"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(AgentEnv(reference("<SECURE_GRPC_PORT>")), "\n") + "\n"
	if got != string(want) {
		t.Errorf("AgentEnv:\n%s\nrecorded agent.env:\n%s", got, want)
	}
}

func TestPrepareAgentDir(t *testing.T) {
	opts := reference("15012")
	opts.Token, opts.RootCert = []byte("token"), []byte("root")
	dir := PrepareAgentDir(t, opts)

	for path, want := range map[string]string{TokenPath: "token", RootCertPath: "root"} {
		if got, err := os.ReadFile(filepath.Join(dir, path)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", path, got, err)
		}
	}
	for _, f := range []string{"labels", "annotations"} {
		want, err := os.ReadFile(refdata.Dir(t, "security/real/agent/"+f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "etc/istio/pod", f))
		if err != nil {
			t.Fatal(err)
		}
		if g := hideInterfaces(string(got)); g != string(want) {
			t.Errorf("%s:\n%s\nrecorded:\n%s", f, g, want)
		}
	}
	// Every input the recorded agent read is there, with its mode.
	list, err := os.ReadFile(refdata.Dir(t, "security/real/agent/files.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		f := strings.Fields(line) // kind mode ./path
		if len(f) != 3 || strings.HasPrefix(f[2], "./"+OutputCertsDir) || strings.HasPrefix(f[2], "./etc/istio/proxy/") {
			continue // written by the agent
		}
		fi, err := os.Stat(filepath.Join(dir, f[2]))
		if err != nil {
			t.Errorf("%s: %v", f[2], err)
		} else if mode := fmt.Sprintf("%o", fi.Mode().Perm()); mode != f[1] {
			t.Errorf("%s: mode %s, recorded %s", f[2], mode, f[1])
		}
	}
	for _, d := range []string{OutputCertsDir, "etc/istio/proxy"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("directory %s: %v", d, err)
		}
	}
}

// hideInterfaces replaces the excludeInterfaces value, the host's interface
// names, with the recording's placeholder.
func hideInterfaces(s string) string {
	return regexp.MustCompile(`(?m)^(traffic\.sidecar\.istio\.io/excludeInterfaces=)".*"$`).
		ReplaceAllString(s, `$1"<host interfaces>"`)
}

// With no istiod at all, the real agent run by the recipe writes the gRPC
// bootstrap of the recorded run, byte for byte but for the port and the
// interface names: the environment and files are the ones it read then.
func TestAgentBootstrapIsTheRecordedOne(t *testing.T) {
	want, err := os.ReadFile(refdata.Dir(t, "security/real/agent/grpc-bootstrap.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := refRoot(t)
	// A loopback port with nothing listening: the agent's CA and xDS calls
	// are refused and retried, which does not hold up the bootstrap.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	opts := reference(strconv.Itoa(port))
	opts.Token, opts.RootCert = []byte("not.a.token"), root
	cmd, dir := AgentCommand(t, opts)
	logs, err := os.Create(filepath.Join(t.TempDir(), "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd.Stdout, cmd.Stderr = logs, logs
	logText := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})

	var got []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err = os.ReadFile(filepath.Join(dir, GRPCBootstrapPath))
		if err == nil && json.Valid(got) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("pilot-agent exited (%v) without writing %s:\n%s", err, GRPCBootstrapPath, logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30s:\n%s", GRPCBootstrapPath, logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	g := strings.ReplaceAll(string(got), "127.0.0.1:"+strconv.Itoa(port)+`"`, `127.0.0.1:<SECURE_GRPC_PORT>"`)
	g = regexp.MustCompile(`("traffic\.sidecar\.istio\.io/excludeInterfaces": )".*"`).ReplaceAllString(g, `$1"<host interfaces>"`)
	if g != string(want) {
		t.Errorf("grpc-bootstrap.json:\n%s\nrecorded:\n%s", g, want)
	}
	if !strings.Contains(logText(), `Apply proxy config from env {"discoveryAddress":"127.0.0.1:`+strconv.Itoa(port)+`"}`) {
		t.Errorf("agent log lacks the proxy config line:\n%s", logText())
	}
}

// refRoot returns the root certificate PEM of the recorded run's ConfigMap.
func refRoot(t *testing.T) []byte {
	data, err := os.ReadFile(refdata.Dir(t, "security/real/configmap-istio-ca-root-cert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(data, &cm); err != nil || cm.Data["root-cert.pem"] == "" {
		t.Fatalf("configmap-istio-ca-root-cert.json: no data.root-cert.pem (%v)", err)
	}
	return []byte(cm.Data["root-cert.pem"])
}

// istioctl proxy-status gets its token through the kubeconfig from the
// TokenRequest API, for istio-system/default, which must exist; with it,
// istioctl gets as far as dialling the xDS address. ServiceAccountToken
// creates the account and returns an istio-ca token.
func TestProxyStatusTokenThroughKubeconfig(t *testing.T) {
	Istioctl(t)
	e := kube.Start(t, kube.WithCRDs("virtualservices.networking.istio.io"))
	e.CreateNamespace(t, "istio-system", nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: no istiod here

	run := func() string {
		out, err := ProxyStatusCommand(t, e.Kubeconfig, addr, "--timeout", "3s").CombinedOutput()
		if err == nil {
			t.Fatalf("istioctl proxy-status succeeded with no istiod:\n%s", out)
		}
		return string(out)
	}
	const noAccount = `failed to create RPC credentials for "default.istio-system": serviceaccounts "default" not found`
	if out := run(); !strings.Contains(out, noAccount) {
		t.Fatalf("without the service account, want %q, got:\n%s", noAccount, out)
	}

	token := ServiceAccountToken(t, e.Kube, "istio-system", "default", "istio-ca")
	parts := strings.Split(string(token), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is no JWT", token)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud []string `json:"aud"`
		Sub string   `json:"sub"`
	}
	if err := json.Unmarshal(claims, &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Aud, []string{"istio-ca"}) || c.Sub != "system:serviceaccount:istio-system:default" {
		t.Errorf("token claims %s", claims)
	}

	out := run()
	if strings.Contains(out, "failed to create RPC credentials") || !strings.Contains(out, addr) {
		t.Errorf("with the service account, want a failure to reach %s, got:\n%s", addr, out)
	}
	t.Logf("istioctl, with a token but no istiod: %s", strings.TrimSpace(out))
}

// The script takes --peer (pilot-discovery alone) and nothing else; an
// unknown argument is refused before anything is built.
func TestScriptArguments(t *testing.T) {
	script := filepath.Join("..", "..", "hack", "istiobin.sh")
	out, err := exec.Command(script, "--bogus").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "usage:") {
		t.Errorf("--bogus: %v, %s", err, out)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^--peer\) bins="pilot-discovery" ;;$`).Match(b) {
		t.Error("hack/istiobin.sh --peer does not build pilot-discovery alone")
	}
}

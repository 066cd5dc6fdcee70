package main

import (
	"debug/buildinfo"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/meshplane/istiod/tests/istiobin"
)

// flavor is which control plane a binary is; it decides the command line.
type flavor string

const (
	// flavorOurs is this repository's istiod (cmd/istiod).
	flavorOurs flavor = "meshplane"
	// flavorIstio is Istio's own pilot-discovery.
	flavorIstio flavor = "istio"
)

// Keywords of -istiod besides paths.
const (
	targetSelf = "self" // build ./cmd/istiod of this checkout
	targetPeer = "peer" // Istio's pilot-discovery built by `make peerbin`
)

// target is one control plane of a run.
type target struct {
	name   string // label in the report
	bin    string // path; empty for targetSelf until built
	flavor flavor
}

// parseTargets reads -istiod: comma-separated entries, each "self", "peer",
// a path, or flavor=path to name the flavor of a binary whose build
// information does not tell it. Empty means "self".
func parseTargets(spec string) ([]target, error) {
	if strings.TrimSpace(spec) == "" {
		spec = targetSelf
	}
	var out []target
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, fmt.Errorf("-istiod %q: empty entry", spec)
		case e == targetSelf:
			out = append(out, target{name: "ours (./cmd/istiod)", flavor: flavorOurs})
		case e == targetPeer:
			p, err := istiobin.PilotDiscovery()
			if err != nil {
				return nil, err
			}
			out = append(out, target{name: "Istio pilot-discovery", bin: p, flavor: flavorIstio})
		default:
			t := target{bin: e}
			if f, path, ok := strings.Cut(e, "="); ok {
				t.flavor, t.bin = flavor(f), path
				if t.flavor != flavorOurs && t.flavor != flavorIstio {
					return nil, fmt.Errorf("-istiod %q: flavor %q is neither %s nor %s", spec, f, flavorOurs, flavorIstio)
				}
			} else {
				f, err := detectFlavor(t.bin)
				if err != nil {
					return nil, err
				}
				t.flavor = f
			}
			t.name = fmt.Sprintf("%s (%s)", filepath.Base(t.bin), t.flavor)
			out = append(out, t)
		}
	}
	return out, nil
}

// detectFlavor reads the main package path from the binary's Go build
// information, which both control planes carry (also when stripped).
func detectFlavor(bin string) (flavor, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read Go build information (%v); name its flavor: %s=%s or %s=%s",
			bin, err, flavorOurs, bin, flavorIstio, bin)
	}
	return flavorOfPackage(bin, info.Path)
}

func flavorOfPackage(bin, pkg string) (flavor, error) {
	switch {
	case pkg == "github.com/meshplane/istiod/cmd/istiod":
		return flavorOurs, nil
	case strings.HasPrefix(pkg, "istio.io/istio/pilot/cmd/pilot-discovery"):
		return flavorIstio, nil
	}
	return "", fmt.Errorf("%s: main package %q is neither cmd/istiod nor Istio's pilot-discovery; name its flavor: %s=%s or %s=%s",
		bin, pkg, flavorOurs, bin, flavorIstio, bin)
}

// listenAddrs are the loopback addresses a control plane listens on.
type listenAddrs struct {
	http, monitoring, grpc, secureGRPC string
}

// source is where the control plane reads the mesh: a directory of YAML
// (configDir) or an API server (kubeconfig); exactly one is set.
type source struct {
	configDir  string
	kubeconfig string
}

// istiodNamespace is the namespace the control plane runs in (its CA
// Secret, Leases and mesh ConfigMap live there).
const istiodNamespace = "istio-system"

// commandLine returns the arguments and the environment additions (to be
// appended to the tool's environment, so they win) that run a binary of
// flavor fl on src with the given mesh config file, listening on addrs;
// dir is its working directory, where both write their CA and
// certificates under relative default paths.
func commandLine(fl flavor, src source, meshFile, dir string, addrs listenAddrs) (args, env []string, err error) {
	if (src.configDir == "") == (src.kubeconfig == "") {
		return nil, nil, fmt.Errorf("exactly one of a config directory and a kubeconfig is needed")
	}
	// the load test measures capacity: the new-stream rate limit (25/s
	// by default, in both) would only measure the limit
	env = []string{"PILOT_MAX_REQUESTS_PER_SECOND=100000", "POD_NAMESPACE=" + istiodNamespace, "POD_NAME=istiod-loadtest"}
	args = []string{"discovery", "--meshConfig", meshFile,
		"--httpAddr", addrs.http, "--monitoringAddr", addrs.monitoring, "--grpcAddr", addrs.grpc,
		"--secureGRPCAddr", addrs.secureGRPC, "--httpsAddr", "127.0.0.1:0"}
	switch fl {
	case flavorOurs:
		if src.configDir != "" {
			args = append(args, "--configDir", src.configDir, "--fileResync", "1h")
		} else {
			args = append(args, "--kubeconfig", src.kubeconfig, "--namespace", istiodNamespace)
		}
		env = append(env, "ISTIOD_CA_DIR="+filepath.Join(dir, "ca"))
	case flavorIstio:
		if src.kubeconfig == "" {
			// its --configDir replaces only the config store; its service
			// registry still wants a cluster
			return nil, nil, fmt.Errorf("Istio's pilot-discovery needs an API server: run with -kube")
		}
		args = append(args, "--kubeconfig", src.kubeconfig, "--namespace", istiodNamespace,
			// no meshNetworks file: a missing one means no networks
			"--networksConfig", filepath.Join(dir, "no-mesh-networks"),
			// ControlZ would take the fixed port 9876
			"--ctrlz_port", "0")
		// Istio's defaults otherwise: its CA on (self-signed root in the
		// istio-ca-secret Secret, its serving certificate under
		// ./var/run/secrets/istio-dns), injection skipped (no template
		// ConfigMap), webhooks patched only when their configurations exist.
	default:
		return nil, nil, fmt.Errorf("unknown flavor %q", fl)
	}
	return args, env, nil
}

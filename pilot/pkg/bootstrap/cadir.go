package bootstrap

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/meshplane/istiod/pkg/security/ca"
)

// KubeCADir is the CA directory's default in a cluster, Istio's path,
// relative to the working directory (/ in the image). With a cluster the
// self-signed root lives in the istio-ca-secret Secret, not there.
const KubeCADir = "./var/run/secrets/istiod/ca"

// UserStateDir returns istiod's directory among the user's state:
// $XDG_STATE_HOME/istiod, else $HOME/.local/state/istiod, else istiod in
// the user's cache directory; "" when none is known. getenv and
// userCacheDir stand for os.Getenv and os.UserCacheDir (the command passes
// them; tests pass their own).
func UserStateDir(getenv func(string) string, userCacheDir func() (string, error)) string {
	// the XDG base directory specification ignores relative paths
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "istiod")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "state", "istiod")
	}
	if d, err := userCacheDir(); err == nil && d != "" {
		return filepath.Join(d, "istiod")
	}
	return ""
}

// caDir picks the directory of the self-signed root and says where the
// choice comes from: SecurityOptions.CADir (ISTIOD_CA_DIR) when set; in a
// cluster, KubeCADir; else ca in SecurityOptions.StateDir, so that running
// istiod from a checkout writes nothing into it.
func caDir(o SecurityOptions, cluster bool) (dir, from string, err error) {
	switch {
	case o.CADir != "":
		return o.CADir, "ISTIOD_CA_DIR", nil
	case cluster:
		return KubeCADir, "default", nil
	case o.StateDir != "":
		return filepath.Join(o.StateDir, "ca"), "the user's state directory; set ISTIOD_CA_DIR to move it", nil
	}
	return "", "", errors.New("no directory for the CA root: set ISTIOD_CA_DIR (neither XDG_STATE_HOME, HOME nor a user cache directory is known)")
}

// caDirUnusable is the error of a CA directory istiod cannot use: it
// names the directory and the reason, and how to choose another one.
func caDirUnusable(err error) error {
	return fmt.Errorf("%w; set ISTIOD_CA_DIR to a writable directory", err)
}

// caStore is where the self-signed root is kept: the istio-ca-secret
// Secret in a cluster, else a directory, which where names for the log.
func (s *Server) caStore() (store ca.Store, where string, err error) {
	if s.kubeClient != nil {
		return ca.NewSecretStore(s.kubeClient.Kube().CoreV1().Secrets(s.args.Namespace), s.args.Namespace), "", nil
	}
	dir, from, err := caDir(s.args.Security, false)
	if err != nil {
		return nil, "", err
	}
	return ca.NewDirStore(dir), dir + " (" + from + ")", nil
}

package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mistake on the command line is said on stderr, with the usage hint of
// the command concerned, and exits 1.
func TestMainPrintsCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"validate"}, []string{"Error: at least one -f FILE|DIR is required\n", "Run 'istiod validate --help' for usage.\n"}},
		{[]string{"validate", "file.yaml"}, []string{`Error: unexpected argument "file.yaml": give files and directories with -f (istiod validate -f file.yaml)` + "\n",
			"Run 'istiod validate --help' for usage.\n"}},
		{[]string{"bogus"}, []string{`Error: unknown command "bogus" for "istiod"` + "\n", "Run 'istiod --help' for usage.\n"}},
		{[]string{"version", "-o", "yaml"}, []string{`Error: unknown output "yaml" (short, long, json)` + "\n", "Run 'istiod version --help' for usage.\n"}},
		{[]string{"version", "--bogus"}, []string{"Error: unknown flag: --bogus\n", "Run 'istiod version --help' for usage.\n"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(tc.args, &out, &errb)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if got, want := errb.String(), strings.Join(tc.want, ""); got != want {
				t.Errorf("stderr\n%q\nwant\n%q", got, want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
}

// A report the command printed itself (validation problems, an unreadable
// file) is not followed by another error line.
func TestMainDoesNotRepeatAReport(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, namespace: ns}\nspec: {host: [d]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"validate", "-f", bad}, &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(out.String(), "DestinationRule ns/d: error: spec.host") {
		t.Errorf("stdout %q", out.String())
	}
	if got := errb.String(); got != "0 objects valid, 1 rejected, 0 warnings, 0 unknown kinds\n" {
		t.Errorf("stderr %q", got)
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"validate", "-f", filepath.Join(dir, "missing.yaml")}, &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if got := errb.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "no such file") {
		t.Errorf("stderr %q", got)
	}
}

// A server that cannot start says why, without a usage hint: the command
// line was right.
func TestMainRunErrorHasNoUsageHint(t *testing.T) {
	var errb bytes.Buffer
	if code := report(nil, runError{os.ErrPermission}, &errb); code != 1 {
		t.Errorf("exit %d", code)
	}
	if got := errb.String(); got != "Error: permission denied\n" {
		t.Errorf("stderr %q", got)
	}
}

package validationparity

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/cmd/istiod/app"
	"github.com/meshplane/istiod/tests/istiobin"
)

// corpusDirs are the directories of the istio.io/istio module whose YAML
// files make the corpus.
var corpusDirs = []string{
	"samples",
	"pkg/config/analysis/analyzers/testdata",
	"pkg/config/validation/testdata",
	"pkg/test/datasets/validation/dataset",
}

// istioGroups are the API groups of Istio configuration.
var istioGroups = map[string]bool{
	"networking.istio.io": true,
	"security.istio.io":   true,
	"telemetry.istio.io":  true,
	"extensions.istio.io": true,
}

// document is one Istio object of the corpus.
type document struct {
	file  string // relative to the module root, or testdata/...
	index int    // position among the file's non-empty documents
	kind  string
	ns    string
	name  string
	body  []byte
}

// key names the document in decodingDifferences: file#index.
func (d document) key() string { return fmt.Sprintf("%s#%d", d.file, d.index) }

func (d document) String() string {
	return fmt.Sprintf("%s#%d %s %s/%s", d.file, d.index, d.kind, d.ns, d.name)
}

// verdict is one side's outcome for a document.
type verdict struct {
	rejected bool
	messages []string
	dropped  []string // ours: unknown fields dropped while decoding
}

// decodingDifferences are documents on which the two commands would differ
// in decoding, not in validation, each with the unknown field that makes
// the difference. There are none: like istioctl validate, istiod validate
// rejects an object with an unknown field (the running istiod's sources
// drop it and warn). The test fails when one of them agrees, or differs
// otherwise.
var decodingDifferences = map[string]string{}

func TestIstioctlValidateAgrees(t *testing.T) {
	istioctl := istiobin.Istioctl(t)
	docs := corpus(t, moduleDir(t))
	if len(docs) < 400 {
		t.Fatalf("the corpus has %d Istio objects only; expected about 500", len(docs))
	}
	dir := t.TempDir()
	istio := runIstioctl(t, istioctl, dir, docs)
	oursDir := filepath.Join(dir, "istiod")
	if err := os.Mkdir(oursDir, 0o755); err != nil {
		t.Fatal(err)
	}

	agree, rejected, decoding, reasons, contained, decoderReasons := 0, 0, 0, 0, 0, 0
	for i, d := range docs {
		file := filepath.Join(oursDir, fmt.Sprintf("doc%05d.yaml", i))
		if err := os.WriteFile(file, d.body, 0o644); err != nil {
			t.Fatal(err)
		}
		ours, theirs := validate(t, file), istio[i]
		if theirs.rejected {
			rejected++
			for _, reason := range istioReasons(d, theirs.messages) {
				if want, ok := decoderEquivalent(reason); ok {
					decoderReasons++
					if want != "" && !containsReason(ours.messages, want) {
						t.Errorf("%s: no error of ours says what istioctl's decoder says\n  reason:   %s\n  want:     %s\n  ours:     %s",
							d, reason, want, strings.Join(ours.messages, "\n            "))
					}
					continue
				}
				reasons++
				if containsReason(ours.messages, ourNamespaceView(d, reason)) {
					contained++
					continue
				}
				t.Errorf("%s: no error of ours holds istioctl's reason verbatim\n  reason:   %s\n  ours:     %s", d, reason,
					strings.Join(ours.messages, "\n            "))
			}
		}
		field, known := decodingDifferences[d.key()]
		switch {
		case ours.rejected == theirs.rejected && known:
			t.Errorf("%s: both now %s; remove it from decodingDifferences", d, verdictWord(ours.rejected))
		case ours.rejected == theirs.rejected:
			agree++
		case known && theirs.rejected && slices.Contains(ours.dropped, field) && unknownFieldOnly(theirs.messages, field):
			decoding++
		default:
			what := "we reject what istioctl accepts"
			if theirs.rejected {
				what = "we accept what istioctl rejects"
			}
			t.Errorf("%s: %s\n  ours:     %s\n  istioctl: %s", d, what,
				strings.Join(ours.messages, "\n            "), strings.Join(theirs.messages, "\n            "))
		}
	}
	t.Logf("%d/%d Istio objects agree (%d rejected by istioctl); %d differ in decoding only (unknown fields); "+
		"%d/%d of istioctl's validation reasons appear verbatim in our errors; %d decoder reasons said our way",
		agree, len(docs), rejected, decoding, contained, reasons, decoderReasons)
}

// decoderPrefix is how istioctl validate wraps the errors of its JSON
// decoder (github.com/golang/protobuf jsonpb).
const decoderPrefix = "cannot parse proto message: "

var (
	decoderUnknownField = regexp.MustCompile(`^unknown field "([^"]+)" in [\w.]+$`)
	decoderUnknownEnum  = regexp.MustCompile(`^unknown value "\\"([^"\\]*)\\"" for enum ([\w.]+)$`)
	decoderBadDuration  = regexp.MustCompile(`^bad Duration: time: (invalid duration "[^"]*")$`)
)

// decoderEquivalent reports whether reason is an error of istioctl's
// decoder rather than of Istio's validation, and what our error must say
// for it instead ("": only that we reject the object). The decoders differ:
// jsonpb names the message type, ours (protojson with a walk over the
// document) the field path; such texts are the decoding library's, not
// Istio's validation's, and are not carried over:
//
//	unknown field "app" in istio...EnvoyConfigObjectMatch   unknown field "spec.configPatches[0].match.app"
//	unknown value "\"BLAH\"" for enum E                     unknown value "BLAH" for enum E
//	bad Duration: time: invalid duration "apple"           invalid duration "apple"
//	invalid character 'a' looking for beginning of value   (a map key that is no number: ours names it)
func decoderEquivalent(reason string) (string, bool) {
	rest, ok := strings.CutPrefix(reason, decoderPrefix)
	if !ok {
		return "", false
	}
	if m := decoderUnknownField.FindStringSubmatch(rest); m != nil {
		return `.` + m[1] + `"`, true
	}
	if m := decoderUnknownEnum.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("unknown value %q for enum %s", m[1], m[2]), true
	}
	if m := decoderBadDuration.FindStringSubmatch(rest); m != nil {
		return m[1], true
	}
	if strings.HasPrefix(rest, "invalid character ") {
		return "", true
	}
	return "", false
}

// ourNamespaceView rewrites reason for a document without a namespace:
// istioctl puts such an object in its kubeconfig context's namespace,
// default; istiod validate leaves it empty, so the texts that name the
// namespace (AuthorizationPolicy's "invalid policy <name>.<namespace>:")
// name none.
func ourNamespaceView(d document, reason string) string {
	if d.ns != "" {
		return reason
	}
	return strings.ReplaceAll(reason, "invalid policy "+d.name+".default:", "invalid policy "+d.name+".:")
}

// multiErrorHeader is the head of a nested hashicorp/go-multierror list
// ("invalid x: 2 errors occurred:"); its items follow as messages of their
// own.
var multiErrorHeader = regexp.MustCompile(`(^|: )\d+ errors? occurred:$`)

// istioReasons returns istioctl's reasons for rejecting d: its messages
// without the "Kind/namespace/name: " prefix, the heads of nested error
// lists left out, and the lines of a message that joins several errors
// (errors.Join) each a reason of its own.
func istioReasons(d document, messages []string) []string {
	prefix := d.kind + "/" + d.ns + "/" + d.name + ": "
	var out []string
	for _, m := range messages {
		for _, reason := range strings.Split(strings.TrimPrefix(m, prefix), "\n") {
			reason = strings.TrimSpace(reason)
			if reason == "" || multiErrorHeader.MatchString(reason) {
				continue
			}
			out = append(out, reason)
		}
	}
	return out
}

// containsReason reports whether one of our error lines ("<where>: error:
// <path>: <message>") holds reason verbatim.
func containsReason(ours []string, reason string) bool {
	for _, line := range ours {
		if _, msg, ok := strings.Cut(line, ": error: "); ok && strings.Contains(msg, reason) {
			return true
		}
	}
	return false
}

func verdictWord(rejected bool) string {
	if rejected {
		return "reject it"
	}
	return "accept it"
}

// unknownFieldOnly reports whether istioctl's only complaint is the
// unknown field: for spec.a.b[0].c, `unknown field "c"`.
func unknownFieldOnly(messages []string, field string) bool {
	name := field[strings.LastIndexByte(field, '.')+1:]
	for _, m := range messages {
		if !strings.Contains(m, `cannot parse proto message: unknown field "`+name+`"`) {
			return false
		}
	}
	return len(messages) > 0
}

// validate runs `istiod validate -f <file>` on a file holding one document,
// in process, linked as the istiod binary is (the Envoy types an EnvoyFilter
// patch value may name are checked when linked). It exits 1 when it rejects the document and prints
// one "<where>: error: ..." or "<where>: warning: ..." line per problem.
func validate(t *testing.T, file string) verdict {
	t.Helper()
	var out, errOut bytes.Buffer
	code := app.Main([]string{"validate", "-f", file}, &out, &errOut)
	if code != 0 && code != 1 {
		t.Fatalf("istiod validate -f %s: exit code %d\n%s%s", file, code, out.String(), errOut.String())
	}
	v := verdict{rejected: code == 1}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		line = strings.TrimPrefix(line, file)
		v.messages = append(v.messages, line)
		if m := droppedLine.FindStringSubmatch(line); m != nil {
			v.dropped = append(v.dropped, m[1])
		}
	}
	return v
}

var droppedLine = regexp.MustCompile(`: warning: unknown field "([^"]+)" dropped$`)

// moduleDir returns the extracted istio.io/istio module in the module cache.
func moduleDir(t *testing.T) string {
	t.Helper()
	version := istiobin.Version
	if v := os.Getenv(istiobin.VersionEnv); v != "" {
		version = v
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "istio.io", "istio@"+version)
	if _, err := os.Stat(filepath.Join(dir, "samples")); err != nil {
		t.Fatalf("the source of istio.io/istio@%s is not in the module cache (%v); `make testbin` leaves it there "+
			"when it builds istioctl, or run `go mod download istio.io/istio@%s`", version, err, version)
	}
	return dir
}

// corpus returns the Istio objects of the corpus directories of the module
// at root, then of this package's testdata, in file order.
func corpus(t *testing.T, root string) []document {
	t.Helper()
	var docs []document
	walk := func(root, dir string) {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.Type().IsRegular() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, istioDocuments(filepath.ToSlash(rel), data)...)
			return nil
		})
		if err != nil {
			t.Fatalf("reading the corpus: %v", err)
		}
	}
	for _, dir := range corpusDirs {
		walk(root, dir)
	}
	walk(".", "testdata")
	return docs
}

// istioDocuments splits data as istioctl does and keeps the documents of
// Istio configuration groups; documents that are no YAML object (templates)
// are left out.
func istioDocuments(file string, data []byte) []document {
	var docs []document
	r := kubeyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for index := 0; ; {
		raw, err := r.Read()
		if err != nil { // io.EOF, or a file that is no YAML stream
			return docs
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			index++
			continue
		}
		// An empty document (comments only) is no document for either side.
		if bytes.Equal(bytes.TrimSpace(yamlJSON(raw)), []byte("null")) {
			continue
		}
		group, _, _ := strings.Cut(head.APIVersion, "/")
		if istioGroups[group] {
			docs = append(docs, document{file: file, index: index, kind: head.Kind,
				ns: head.Metadata.Namespace, name: head.Metadata.Name, body: stripExpectation(raw)})
		}
		index++
	}
}

// expectation is the top-level _err field by which Istio's validation
// fixtures (pkg/config/validation/testdata/crds) state the error they
// expect, with its continuation lines. It is no field of the object: Istio's
// own test deletes it before validating, as we do; left in, istioctl would
// reject every such document for it alone (unknown field "_err").
var expectation = regexp.MustCompile(`(?m)^_err:.*\n(?:[ \t].*\n)*`)

func stripExpectation(raw []byte) []byte { return expectation.ReplaceAll(raw, nil) }

func yamlJSON(raw []byte) []byte {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil
	}
	return js
}

// markerName names the marker object that precedes document i.
func markerName(i int) string { return fmt.Sprintf("parity-marker-%05d", i) }

// marker is a VirtualService istioctl always rejects (no routes).
const marker = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: %s
spec: {}
`

var markerError = regexp.MustCompile(`^VirtualService//parity-marker-(\d{5}):`)

// runIstioctl validates every document with one run of istioctl and
// returns its verdicts, by document.
func runIstioctl(t *testing.T, istioctl, dir string, docs []document) []verdict {
	t.Helper()
	in := filepath.Join(dir, "istioctl")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		body := fmt.Sprintf(marker, markerName(i)) + "---\n" + string(d.body)
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("doc%05d.yaml", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// validate reads the kubeconfig for its default namespace only; should
	// anything try the cluster, it finds a closed loopback port.
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(offlineKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(istioctl, "validate", "--kubeconfig", kubeconfig, "-f", in)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("istioctl validate: %v (want exit code 1, the markers are invalid)\n%s", err, tail(out.String()))
	}
	verdicts, err := parseIstioctl(out.String(), len(docs))
	if err != nil {
		t.Fatalf("istioctl validate output: %v\n%s", err, tail(out.String()))
	}
	return verdicts
}

const offlineKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: offline
  context:
    cluster: offline
    namespace: default
current-context: offline
`

var errorsHeader = regexp.MustCompile(`(?m)^Error: \d+ errors? occurred:$`)

// parseIstioctl maps the errors istioctl printed to documents. They are
// printed in file order, each as "\n\t* Kind/namespace/name: message"; all
// those after marker i and before marker i+1 are document i's. Warnings are
// printed before the errors and do not decide anything.
func parseIstioctl(out string, n int) ([]verdict, error) {
	loc := errorsHeader.FindStringIndex(out)
	if loc == nil {
		return nil, errors.New("no \"Error: N errors occurred:\" line")
	}
	verdicts := make([]verdict, n)
	current, seen := -1, 0
	for _, item := range strings.Split(out[loc[1]:], "\n\t* ")[1:] {
		item = strings.TrimSpace(item)
		if m := markerError.FindStringSubmatch(item); m != nil {
			i, _ := strconv.Atoi(m[1])
			if i != current+1 || i >= n {
				return nil, fmt.Errorf("marker %d after marker %d", i, current)
			}
			current, seen = i, seen+1
			continue
		}
		if current < 0 {
			return nil, fmt.Errorf("error before the first marker: %s", item)
		}
		verdicts[current].rejected = true
		verdicts[current].messages = append(verdicts[current].messages, item)
	}
	if seen != n {
		return nil, fmt.Errorf("%d markers of %d", seen, n)
	}
	return verdicts, nil
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

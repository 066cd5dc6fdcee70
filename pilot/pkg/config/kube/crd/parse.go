package crd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// Options controls Parse.
type Options struct {
	// Schemas are the kinds recognised; empty means collections.PilotGatewayAPI().
	Schemas collection.Schemas
	// Domain is set on every config (e.g. cluster.local).
	Domain string
	// Validate runs the kind's validation on every recognised object.
	Validate bool
}

// Document is the outcome of one YAML/JSON document of an input.
type Document struct {
	// Index is the 0-based position of the document among the non-empty
	// documents of the input; Line is the 1-based line of the input (not
	// of the document) where it starts. The line numbers in Err count from
	// the start of the input too.
	Index int
	Line  int
	// Config is set for a document of a known kind that decoded (and, with
	// Options.Validate, validated) without error.
	Config *config.Config
	// Unknown is set for a well-formed document of a kind not in the schemas.
	Unknown *IstioKind
	// Dropped lists unknown fields that were dropped (e.g. spec.http[0].routez).
	Dropped []string
	// Warnings are validation warnings.
	Warnings []error
	// Err is why the document was rejected; Config is nil then.
	Err error
	// Kind and Name identify the document as far as it could be read.
	Kind, Namespace, Name string
}

// Object names the document's object as far as it could be read:
// "Kind namespace/name", "Kind name", or "<unknown>".
func (d *Document) Object() string {
	s := d.Kind
	if s == "" {
		s = "<unknown>"
	}
	switch {
	case d.Namespace != "":
		s += " " + d.Namespace + "/" + d.Name
	case d.Name != "":
		s += " " + d.Name
	}
	return s
}

// Where names the document for messages: "doc 2 VirtualService ns/name".
func (d *Document) Where() string {
	if d.Kind == "" && d.Name == "" {
		return fmt.Sprintf("doc %d", d.Index)
	}
	return fmt.Sprintf("doc %d %s", d.Index, d.Object())
}

// Parse splits input into documents and decodes each one independently: a bad
// document never stops the others. Empty documents are skipped.
func Parse(input []byte, opts Options) []Document {
	schemas := opts.Schemas
	if schemas.Len() == 0 {
		schemas = collections.PilotGatewayAPI()
	}
	var out []Document
	for _, raw := range splitDocuments(input) {
		d := Document{Index: len(out), Line: raw.line}
		if !parseDocument(&d, raw, schemas, opts) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// parseDocument fills d; it returns false for an empty document.
func parseDocument(d *Document, raw rawDocument, schemas collection.Schemas, opts Options) bool {
	js, err := yaml.YAMLToJSON(raw.body)
	if err != nil {
		d.Err = yamlError(err, raw.line)
		return true
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return false
	}
	if js[0] != '{' {
		d.Err = fmt.Errorf("document is not an object")
		return true
	}
	var obj IstioKind
	if err := json.Unmarshal(js, &obj); err != nil {
		d.Err = fmt.Errorf("cannot read object: %v", err)
		return true
	}
	d.Kind, d.Namespace, d.Name = obj.Kind, obj.Namespace, obj.Name
	if obj.APIVersion == "" || obj.Kind == "" {
		d.Err = errors.New("apiVersion and kind are required")
		return true
	}
	s, ok := schemas.FindByGroupVersionAliasesKind(obj.GroupVersionKind())
	if !ok {
		d.Unknown = &obj
		return true
	}
	if obj.Name == "" {
		d.Err = errors.New("metadata.name is required")
		return true
	}
	cfg, dropped, err := Convert(s, &obj, opts.Domain)
	if err != nil {
		d.Err = err
		return true
	}
	d.Dropped = dropped
	if opts.Validate {
		warn, err := s.ValidateConfig(*cfg)
		d.Warnings = validation.Problems(warn)
		if err != nil {
			d.Err = err
			return true
		}
	}
	d.Config = cfg
	return true
}

// ParseInputs decodes every document of input against the Pilot and Gateway
// API kinds. It returns the configs of good documents, the documents of
// unknown kinds, and an error naming every rejected document (document index,
// kind, namespace/name, field and reason). Good documents are returned even
// when others fail.
func ParseInputs(input string) ([]config.Config, []IstioKind, error) {
	var (
		configs []config.Config
		others  []IstioKind
		errs    []error
	)
	for _, d := range Parse([]byte(input), Options{}) {
		switch {
		case d.Err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", d.Where(), d.Err))
		case d.Unknown != nil:
			others = append(others, *d.Unknown)
		default:
			configs = append(configs, *d.Config)
		}
	}
	return configs, others, errors.Join(errs...)
}

// yamlLine matches the line numbers in the YAML library's messages
// ("yaml: line 3: ...", "yaml: unmarshal errors:\n  line 3: ...").
var yamlLine = regexp.MustCompile(`\bline ([0-9]+)\b`)

// yamlError rewrites the YAML error of a document that starts at line first
// of its input so that its line numbers count from the start of the input
// (the file), as an editor shows them, not from the start of the document.
func yamlError(err error, first int) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
	return errors.New("invalid YAML: " + msg)
}

type rawDocument struct {
	line int
	body []byte
}

// splitDocuments cuts input at lines that are exactly "---" (optionally
// followed by spaces or a comment), remembering where each document starts.
func splitDocuments(input []byte) []rawDocument {
	var (
		docs  []rawDocument
		start = 0
		line  = 1
		first = 1
	)
	for pos := 0; pos <= len(input); {
		end := bytes.IndexByte(input[pos:], '\n')
		next := len(input) + 1
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(input)
		}
		if isSeparator(input[pos:end]) {
			docs = append(docs, rawDocument{line: first, body: input[start:pos]})
			start = next
			if start > len(input) {
				start = len(input)
			}
			first = line + 1
		}
		pos = next
		line++
	}
	docs = append(docs, rawDocument{line: first, body: input[start:]})
	return docs
}

func isSeparator(l []byte) bool {
	l = bytes.TrimRight(l, "\r")
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(l[3:])
	return len(rest) == 0 || rest[0] == '#'
}

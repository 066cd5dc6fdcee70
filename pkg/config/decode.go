package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	kjson "sigs.k8s.io/json"
)

// FieldError is a decoding error located at a field path such as
// "spec.http[0].route".
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// ApplyJSON decodes js into spec, which is a proto message or a pointer to a
// Kubernetes struct. Decoding is strict first; when the document holds fields
// the type does not know, those fields are dropped and their paths (relative
// to the document, e.g. "http[0].routez") are returned so the caller can
// report them. Type errors and unknown enum values are errors naming the field
// and the value; nothing is dropped silently.
func ApplyJSON(spec Spec, js []byte) (dropped []string, err error) {
	if m, ok := spec.(proto.Message); ok {
		return applyProtoJSON(m, js)
	}
	return applyStructJSON(spec, js)
}

var (
	strictProto    = protojson.UnmarshalOptions{}
	protoErrPrefix = regexp.MustCompile(`^proto: (\(line [0-9]+:[0-9]+\): )?`)
)

func applyProtoJSON(m proto.Message, js []byte) ([]string, error) {
	if err := strictProto.Unmarshal(js, m); err == nil {
		return nil, nil
	}
	// Slow path: walk the document against the message descriptor, dropping
	// unknown fields and checking enum values and JSON types with paths.
	var doc any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	w := protoWalker{}
	doc, err := w.message(m.ProtoReflect().Descriptor(), doc, "")
	if err != nil {
		return nil, err
	}
	clean, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	proto.Reset(m)
	if err := strictProto.Unmarshal(clean, m); err != nil {
		return nil, fmt.Errorf("%v", protoErrPrefix.ReplaceAllString(err.Error(), ""))
	}
	return w.dropped, nil
}

type protoWalker struct {
	dropped []string
}

func joinPath(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// wellKnown messages have their own JSON mapping; protojson checks them.
func wellKnown(md protoreflect.MessageDescriptor) bool {
	return md.FullName().Parent() == "google.protobuf"
}

func (w *protoWalker) message(md protoreflect.MessageDescriptor, v any, path string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if wellKnown(md) {
		return checkWellKnown(md, v, path)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into message %s", jsonKind(v), md.FullName())}
	}
	fields := md.Fields()
	var errs []error
	for key, val := range obj {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByTextName(key)
		}
		if fd == nil {
			w.dropped = append(w.dropped, joinPath(path, key))
			delete(obj, key)
			continue
		}
		nv, err := w.field(fd, val, joinPath(path, key))
		if err != nil {
			errs = append(errs, err)
		}
		obj[key] = nv
	}
	return obj, joinErrors(errs)
}

// field checks the value of one field and returns it, rewritten where the
// JSON form needs normalising (Go-style durations such as "5m").
func (w *protoWalker) field(fd protoreflect.FieldDescriptor, v any, path string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch {
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into a list of %s", jsonKind(v), elemName(fd))}
		}
		var errs []error
		for i, e := range list {
			// a null message element is an empty message, as Istio's
			// decoder (golang/protobuf jsonpb) reads it; protojson rejects it
			if e == nil && fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() != "google.protobuf.Value" {
				list[i] = map[string]any{}
				continue
			}
			nv, err := w.single(fd, e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				errs = append(errs, err)
			}
			list[i] = nv
		}
		return list, joinErrors(errs)
	case fd.IsMap():
		m, ok := v.(map[string]any)
		if !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into a map", jsonKind(v))}
		}
		var errs []error
		for k, e := range m {
			nv, err := w.single(fd.MapValue(), e, fmt.Sprintf("%s[%s]", path, k))
			if err != nil {
				errs = append(errs, err)
			}
			m[k] = nv
		}
		return m, joinErrors(errs)
	}
	return w.single(fd, v, path)
}

func elemName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

// single checks one value of a (possibly repeated) field.
func (w *protoWalker) single(fd protoreflect.FieldDescriptor, v any, path string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return w.message(fd.Message(), v, path)
	case protoreflect.EnumKind:
		return v, checkEnum(fd.Enum(), v, path)
	case protoreflect.StringKind, protoreflect.BytesKind:
		if _, ok := v.(string); !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into %s", jsonKind(v), fd.Kind())}
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into bool", jsonKind(v))}
		}
	default: // numbers: protojson accepts JSON numbers and numeric strings
		switch v.(type) {
		case json.Number, string:
		default:
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into %s", jsonKind(v), fd.Kind())}
		}
	}
	return v, nil
}

func checkEnum(ed protoreflect.EnumDescriptor, v any, path string) error {
	if ed.FullName() == "google.protobuf.NullValue" {
		return nil
	}
	switch x := v.(type) {
	case string:
		if ed.Values().ByName(protoreflect.Name(x)) == nil {
			return &FieldError{Path: path, Msg: fmt.Sprintf("unknown value %q for enum %s", x, ed.FullName())}
		}
	case json.Number:
	default:
		return &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into enum %s", jsonKind(v), ed.FullName())}
	}
	return nil
}

// checkWellKnown checks the JSON form of the well-known types users write by
// hand; the others are left to protojson. Durations are accepted in Go's
// syntax too ("5m", "1h30m"), as Istio does, and rewritten as seconds.
func checkWellKnown(md protoreflect.MessageDescriptor, v any, path string) (any, error) {
	switch md.FullName() {
	case "google.protobuf.Duration":
		str, ok := v.(string)
		if !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into a duration", jsonKind(v))}
		}
		if durationPattern.MatchString(str) {
			return v, nil
		}
		d, err := time.ParseDuration(str)
		if err != nil {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("invalid duration %q", str)}
		}
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s", nil
	case "google.protobuf.BoolValue":
		if _, ok := v.(bool); !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into bool", jsonKind(v))}
		}
	case "google.protobuf.StringValue":
		if _, ok := v.(string); !ok {
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into string", jsonKind(v))}
		}
	case "google.protobuf.UInt32Value", "google.protobuf.Int32Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int64Value", "google.protobuf.DoubleValue", "google.protobuf.FloatValue":
		switch v.(type) {
		case json.Number, string:
		default:
			return v, &FieldError{Path: path, Msg: fmt.Sprintf("cannot unmarshal %s into a number", jsonKind(v))}
		}
	}
	return v, nil
}

var durationPattern = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{0,9})?s$`)

func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	// map iteration order is random; keep messages stable
	sort.Strings(msgs)
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

func applyStructJSON(spec Spec, js []byte) ([]string, error) {
	rv := reflect.ValueOf(spec)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("cannot decode into %T: not a pointer", spec)
	}
	strict, err := kjson.UnmarshalStrict(js, spec, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, e := range strict {
		msg := e.Error()
		// sigs.k8s.io/json reports `unknown field "a.b[0].c"`
		if p, ok := strings.CutPrefix(msg, "unknown field "); ok {
			dropped = append(dropped, strings.Trim(p, `"`))
			continue
		}
		return nil, e
	}
	return dropped, nil
}

package crdclient

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
)

// writeTimeout bounds one write to the API server.
const writeTimeout = 30 * time.Second

// typedResource returns the typed client of a kind in a namespace (e.g.
// Istio().NetworkingV1().VirtualServices(ns)), found by the clientset's
// naming conventions: one group-version getter per clientset, one resource
// getter named after the plural.
func (cl *Client) typedResource(s resource.Schema, namespace string) (reflect.Value, error) {
	var cs any
	switch {
	case strings.HasSuffix(s.Group(), ".istio.io"):
		cs = cl.client.Istio()
	case s.Group() == "gateway.networking.k8s.io" || s.Group() == "gateway.networking.x-k8s.io":
		cs = cl.client.GatewayAPI()
	case s.Group() == "apiextensions.k8s.io":
		cs = cl.client.Extensions()
	default:
		cs = cl.client.Kube()
	}
	gv := reflect.ValueOf(cs).MethodByName(groupGetter(s))
	if !gv.IsValid() {
		return reflect.Value{}, fmt.Errorf("no client for %s/%s", s.Group(), s.Version())
	}
	group := gv.Call(nil)[0]
	var res reflect.Value
	for i := 0; i < group.NumMethod(); i++ {
		if strings.EqualFold(group.Type().Method(i).Name, s.Plural()) {
			res = group.Method(i)
			break
		}
	}
	if !res.IsValid() {
		return reflect.Value{}, fmt.Errorf("no typed client for %s", s.Plural())
	}
	if s.IsClusterScoped() {
		return res.Call(nil)[0], nil
	}
	return res.Call([]reflect.Value{reflect.ValueOf(namespace)})[0], nil
}

// groupGetter names the clientset method of a group-version, e.g.
// NetworkingV1, GatewayV1, ExperimentalV1alpha1, CoreV1.
func groupGetter(s resource.Schema) string {
	v := strings.ToUpper(s.Version()[:1]) + s.Version()[1:]
	switch s.Group() {
	case "":
		return "Core" + v
	case "gateway.networking.k8s.io":
		return "Gateway" + v
	case "gateway.networking.x-k8s.io":
		return "Experimental" + v
	}
	first, _, _ := strings.Cut(s.Group(), ".")
	return strings.ToUpper(first[:1]) + first[1:] + v
}

// call invokes a typed client method and returns its object result.
func call(res reflect.Value, method string, args ...any) (runtime.Object, error) {
	m := res.MethodByName(method)
	if !m.IsValid() {
		return nil, fmt.Errorf("typed client has no %s", method)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	in := []reflect.Value{reflect.ValueOf(ctx)}
	for _, a := range args {
		in = append(in, reflect.ValueOf(a))
	}
	out := m.Call(in)
	errV := out[len(out)-1]
	var err error
	if !errV.IsNil() {
		err = errV.Interface().(error)
	}
	if len(out) == 1 {
		return nil, err
	}
	obj, _ := out[0].Interface().(runtime.Object)
	return obj, err
}

func (cl *Client) schemaOf(g config.GroupVersionKind) (resource.Schema, error) {
	k, ok := cl.kinds[g]
	if !ok {
		return nil, fmt.Errorf("unrecognized type: %v", g)
	}
	return k.schema, nil
}

func resourceVersionOf(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

// write sends cfg through method (Create, Update or UpdateStatus).
func (cl *Client) write(cfg config.Config, method string) (string, error) {
	s, err := cl.schemaOf(cfg.GroupVersionKind)
	if err != nil {
		return "", err
	}
	if cfg.Spec == nil {
		return "", fmt.Errorf("nil spec for %v/%v", cfg.Name, cfg.Namespace)
	}
	obj, err := ToObject(cfg)
	if err != nil {
		return "", err
	}
	res, err := cl.typedResource(s, cfg.Namespace)
	if err != nil {
		return "", err
	}
	var opts any
	switch method {
	case "Create":
		opts = metav1.CreateOptions{}
	default:
		opts = metav1.UpdateOptions{}
	}
	out, err := call(res, method, obj, opts)
	if err != nil {
		return "", err
	}
	return resourceVersionOf(out), nil
}

// Create stores a new object through the kind's typed client.
func (cl *Client) Create(cfg config.Config) (string, error) { return cl.write(cfg, "Create") }

// Update replaces an object through the kind's typed client.
func (cl *Client) Update(cfg config.Config) (string, error) { return cl.write(cfg, "Update") }

// UpdateStatus replaces an object's status through the kind's typed client.
func (cl *Client) UpdateStatus(cfg config.Config) (string, error) {
	if cfg.Status == nil {
		return "", fmt.Errorf("nil status for %v/%v on updateStatus call", cfg.Name, cfg.Namespace)
	}
	return cl.write(cfg, "UpdateStatus")
}

// Patch applies patchFn to orig and sends the difference as a JSON merge patch.
func (cl *Client) Patch(orig config.Config, patchFn model.PatchFunc) (string, error) {
	s, err := cl.schemaOf(orig.GroupVersionKind)
	if err != nil {
		return "", err
	}
	modified := patchFn(orig.DeepCopy())
	before, err := ToObject(orig)
	if err != nil {
		return "", err
	}
	after, err := ToObject(modified)
	if err != nil {
		return "", err
	}
	a, err := json.Marshal(before)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(after)
	if err != nil {
		return "", err
	}
	patch, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return "", err
	}
	res, err := cl.typedResource(s, orig.Namespace)
	if err != nil {
		return "", err
	}
	out, err := call(res, "Patch", orig.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "istiod"})
	if err != nil {
		return "", err
	}
	return resourceVersionOf(out), nil
}

// Delete removes an object through the kind's typed client.
func (cl *Client) Delete(typ config.GroupVersionKind, name, namespace string, resourceVersion *string) error {
	s, err := cl.schemaOf(typ)
	if err != nil {
		return err
	}
	res, err := cl.typedResource(s, namespace)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if resourceVersion != nil {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: resourceVersion}
	}
	_, err = call(res, "Delete", name, opts)
	return err
}

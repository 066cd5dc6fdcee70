package crdclient_test

import "k8s.io/apimachinery/pkg/runtime"

func toRuntime(objs []any) []runtime.Object {
	out := make([]runtime.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(runtime.Object))
	}
	return out
}

package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// kind is one kind of object a template may render: how it is decoded,
// watched, read and server-side applied.
type kind struct {
	name       string // Deployment
	apiVersion string // apps/v1
	// overlay is the key of a customization ConfigMap for the kind;
	// optional kinds are rendered only when an overlay customizes them.
	overlay  string
	optional bool
	new      func() runtime.Object
	informer func(informers.SharedInformerFactory) cache.SharedIndexInformer
	get      func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error)
	apply    func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error)
}

var applyOptions = metav1.PatchOptions{FieldManager: FieldManager, Force: ptrTo(true)}

func ptrTo[T any](v T) *T { return &v }

// kinds are the kinds Istio's gateway templates may render, in the order
// the kube-gateway template renders them.
var kinds = []*kind{
	{
		name: "ServiceAccount", apiVersion: "v1", overlay: "serviceAccount",
		new: func() runtime.Object { return &corev1.ServiceAccount{} },
		informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().ServiceAccounts().Informer()
		},
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error) {
			return c.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error) {
			return c.CoreV1().ServiceAccounts(ns).Patch(ctx, name, types.ApplyPatchType, body, applyOptions)
		},
	},
	{
		name: "Deployment", apiVersion: "apps/v1", overlay: "deployment",
		new: func() runtime.Object { return &appsv1.Deployment{} },
		informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Apps().V1().Deployments().Informer()
		},
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error) {
			return c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error) {
			return c.AppsV1().Deployments(ns).Patch(ctx, name, types.ApplyPatchType, body, applyOptions)
		},
	},
	{
		name: "Service", apiVersion: "v1", overlay: "service",
		new: func() runtime.Object { return &corev1.Service{} },
		informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Services().Informer()
		},
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error) {
			return c.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error) {
			return c.CoreV1().Services(ns).Patch(ctx, name, types.ApplyPatchType, body, applyOptions)
		},
	},
	{
		name: "HorizontalPodAutoscaler", apiVersion: "autoscaling/v2", overlay: "horizontalPodAutoscaler", optional: true,
		new: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
		},
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error) {
			return c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error) {
			return c.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, name, types.ApplyPatchType, body, applyOptions)
		},
	},
	{
		name: "PodDisruptionBudget", apiVersion: "policy/v1", overlay: "podDisruptionBudget", optional: true,
		new: func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Policy().V1().PodDisruptionBudgets().Informer()
		},
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (runtime.Object, error) {
			return c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, c kubernetes.Interface, ns, name string, body []byte) (runtime.Object, error) {
			return c.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, name, types.ApplyPatchType, body, applyOptions)
		},
	},
}

func kindByName(name string) *kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	return nil
}

func kindByOverlay(key string) *kind {
	for _, k := range kinds {
		if k.overlay == key {
			return k
		}
	}
	return nil
}

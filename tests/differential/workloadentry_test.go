package differential_test

import (
	"testing"

	"github.com/meshplane/istiod/tests/differential"
)

// A Kubernetes Service whose selector matches WorkloadEntries as well as
// Pods (Istio's PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES, on by default):
// the entries of the Service's namespace join its endpoints, each service
// port mapped through the entry's ports (a numeric targetPort by the
// service port's name, a named one by its name, required), with the
// entry's identity, locality and labels; an entry whose health check has
// not passed and one of another namespace are left out. A subset by
// label picks the entry's endpoints too. Seen from a client pod.
func TestSidecarServiceSelectsWorkloadEntries(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name:    "sidecar service selects workload entries",
		Objects: workloadEntryMesh("wle-svc") + subsetsRule("wle-svc"),
		Proxy:   differential.Proxy{Pod: "productpage-v1-5f6d7-abcde", Namespace: "wle-svc", Workload: "productpage"},
	})
}

// The VM of such an entry, seen from its own proxy: it serves the
// Kubernetes Service through its entry (inbound listeners on the entry's
// ports for each service port), as Istio's Kubernetes registry finds the
// entry by the proxy's IP before pods. A rule of subsets alone leaves the
// inbound clusters as they are without a rule.
func TestVMServedByKubernetesService(t *testing.T) {
	differential.Shared(t).Run(t, differential.Case{
		Name:    "vm served by a kubernetes service",
		Objects: workloadEntryMesh("wle-vm") + subsetsRule("wle-vm"),
		Proxy: differential.Proxy{Pod: "reviews-vm-a", Namespace: "wle-vm", IP: "10.90.41.1", ServiceAccount: "reviews-vm",
			Labels: map[string]string{"app": "reviews", "version": "v2"}, Workload: "reviews-vm-a"},
	})
}

// workloadEntryMesh is a Service selecting a Pod and WorkloadEntries of
// namespace ns (and an entry of another namespace it does not select).
func workloadEntryMesh(ns string) string {
	return `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `-other}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: ` + ns + `}
spec:
  selector: {app: reviews}
  ports:
  - {name: http, port: 9080, targetPort: 8080}
  - {name: grpc, port: 7070, targetPort: grpc-web}
  - {name: tcp, port: 9000}
---
apiVersion: v1
kind: Service
metadata: {name: productpage, namespace: ` + ns + `}
spec:
  selector: {app: productpage}
  ports: [{name: http, port: 9080}]
---
apiVersion: v1
kind: Pod
metadata: {name: reviews-v1-5f6d7-abcde, namespace: ` + ns + `, labels: {app: reviews, version: v1}}
spec:
  containers: [{name: reviews, image: reviews, ports: [{containerPort: 8080}, {name: grpc-web, containerPort: 7071}, {containerPort: 9000}]}]
status: {podIP: 10.244.41.21}
---
apiVersion: v1
kind: Pod
metadata: {name: productpage-v1-5f6d7-abcde, namespace: ` + ns + `, labels: {app: productpage, version: v1}}
spec:
  containers: [{name: productpage, image: productpage, ports: [{containerPort: 9080}]}]
status: {podIP: 10.244.41.10}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-vm-a, namespace: ` + ns + `}
spec:
  address: 10.90.41.1
  labels: {app: reviews, version: v2}
  ports: {http: 18080, grpc-web: 17070}
  serviceAccount: reviews-vm
  locality: us-east1/zone-a
  weight: 3
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-vm-b, namespace: ` + ns + `, labels: {app: reviews, version: v2}}
spec:
  address: 10.90.41.2
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: reviews-vm-sick
  namespace: ` + ns + `
  annotations: {proxy.istio.io/health-checks-enabled: "true"}
spec:
  address: 10.90.41.3
  labels: {app: reviews}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: reviews-vm-elsewhere, namespace: ` + ns + `-other}
spec:
  address: 10.90.41.4
  labels: {app: reviews}
`
}

// subsetsRule is a DestinationRule of reviews with subsets by version
// (the entries are version v2, the pod v1), without a traffic policy:
// an inbound cluster does not name such a rule in its metadata.
func subsetsRule(ns string) string {
	return `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: ` + ns + `}
spec:
  host: reviews.` + ns + `.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
`
}

// Two WorkloadEntries on one IP: the VM's proxy serves the Services of
// the entry its ID names (<name>.<namespace>), not those of the first
// entry by name, as Istio's GetInstanceForProxy picks it.
func TestVMAmongEntriesOfOneIP(t *testing.T) {
	const ns = "wle-one-ip"
	differential.Shared(t).Run(t, differential.Case{
		Name: "vm among entries of one ip",
		Objects: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: v1
kind: Service
metadata: {name: ratings, namespace: ` + ns + `}
spec:
  selector: {app: ratings}
  ports: [{name: http, port: 9081, targetPort: 8081}]
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: ` + ns + `}
spec:
  selector: {app: reviews}
  ports: [{name: http, port: 9080, targetPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: a-ratings-vm, namespace: ` + ns + `}
spec:
  address: 10.90.42.1
  labels: {app: ratings}
  serviceAccount: ratings-vm
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: z-reviews-vm, namespace: ` + ns + `}
spec:
  address: 10.90.42.1
  labels: {app: reviews}
  serviceAccount: reviews-vm
`,
		Proxy: differential.Proxy{Pod: "z-reviews-vm", Namespace: ns, IP: "10.90.42.1", ServiceAccount: "reviews-vm",
			Labels: map[string]string{"app": "reviews"}, Workload: "z-reviews-vm"},
	})
}

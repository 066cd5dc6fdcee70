// Package deployment generates, for every Gateway of a class whose
// controller is istio.io/gateway-controller, the ServiceAccount, Deployment
// and Service Istio generates for it (and the HorizontalPodAutoscaler and
// PodDisruptionBudget a customization asks for), as Istio 1.31's gateway
// deployment controller does. In ambient mode (Environment.Ambient) it does
// the same for waypoints, Gateways of istio.io/mesh-controller (the builtin
// istio-waypoint class): rendered from the waypoint template, named after
// the Gateway without the class suffix, a ClusterIP Service, labeled
// gateway.istio.io/managed=istio.io-mesh-controller, without the
// istio.io/dataplane-mode=none label other classes get, and with the
// injector's values.global.network as topology.istio.io/network unless the
// Gateway sets it.
//
// It owns:
//   - the template input (input.go): names <gateway>-<class> unless
//     gateway.istio.io/name-override and gateway.istio.io/service-account
//     say otherwise, the Service ports (status-port 15021, one per listener
//     port with appProtocol), networking.istio.io/service-type,
//     spec.infrastructure labels and annotations (or the Gateway's own);
//   - rendering (render.go): the kube-gateway (or waypoint) template of the
//     injection ConfigMap, executed by pkg/kube/inject's template engine (its parsed
//     templates and functions), split into objects, customized by the
//     ConfigMaps of spec.infrastructure.parametersRef and of the
//     gateway.istio.io/defaults-for-class label (strategic merge patches),
//     checked (kind, namespace, name) and labeled gateway.istio.io/managed.
//     Render is pure;
//   - when Istio leaves a Gateway alone (policy.go): spec.addresses naming
//     an existing deployment, a newer gateway.istio.io/controller-version,
//     another revision;
//   - the write decision (diff.go): an object is server-side applied (field
//     manager istio.io/gateway-controller, forced) only when the apply
//     would change it, i.e. when a field it sets differs in the cluster or
//     a field it applied before is no longer rendered. An unchanged Gateway
//     costs no API write, a changed one or a drifted object is repaired;
//   - the controller (controller.go, watch.go, reconcile.go), run by the
//     leader of the istio-gateway-deployment-<revision> Lease one term at a
//     time: a queue of Gateways fed by the Gateways, GatewayClasses,
//     ListenerSets, customization ConfigMaps, namespaces and the generated
//     objects themselves (owner references), plus EnqueueAll for the
//     injection configuration, the mesh config and the ProxyConfigs.
//
// An object that exists without the gateway.istio.io/managed label is not
// Istio's and is left alone. Objects are owned by their Gateway: deleting
// it deletes them through the API server's garbage collector. A Gateway
// that cannot be rendered (no injection configuration, no kube-gateway
// template, a template or customization error) gets nothing written and a
// problem on /debug/warningz; its status, computed by the translation from
// the Service it lacks, is Istio's (Programmed False).
package deployment

package bootstrap

import (
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// ambientStatusLease is the Lease of Istio's ambient status writer
// (istio-status-leader; one for all revisions).
const ambientStatusLease = "istio-status-leader"

// initAmbientStatus computes the ZtunnelAccepted and WaypointAccepted
// conditions of every AuthorizationPolicy, lists the failed ones on
// /debug/warningz, and (Kubernetes mode) makes the leader of Istio's
// ambient status Lease write them (AMBIENT_ENABLE_STATUS, on with ambient
// mode) through the config store with the writer of Gateway API status:
// one writer, a status equal to the object's never written again.
func (s *Server) initAmbientStatus(idx *ambient.Index) {
	policies := idx.PolicyStatuses()
	ambient.ReportPolicyProblems(policies, s.problems)
	if s.kubeClient == nil || s.args.ConfigDir != "" || s.store == nil {
		return
	}
	statuses := krt.MapCollection(policies, func(p ambient.PolicyStatus) gateway.ObjectStatus {
		return gateway.ObjectStatus{Kind: gvk.AuthorizationPolicy, Namespace: p.Namespace, Name: p.Name,
			Generation: p.Generation, Status: p.Status}
	}, krt.WithName("ambient/policy-status-objects"), krt.WithStop(s.internalStop), krt.WithDebugging(s.krtDebug))
	w := statuswriter.New(statuswriter.Options{Store: s.store, Statuses: statuses})
	s.ambientStatus = leaderelection.New(s.kubeClient.Kube(), s.args.Namespace, ambientStatusLease, s.identity(),
		s.args.Security.LeaderElection)
	s.ambientStatus.AddRunFunction(w.Run)
}

// startAmbientStatus contends for the ambient status Lease.
func (s *Server) startAmbientStatus() {
	s.contend(s.ambientStatus)
}

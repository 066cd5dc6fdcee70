package bootstrap

import (
	"os"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// initLastGood makes the leader of the last-good Lease (per revision)
// write the record through which replicas share the versions they keep
// serving for rejected updates (crdclient/lastgood.go).
func (s *Server) initLastGood(crd *crdclient.Client) {
	id := s.identity()
	s.lastGood = leaderelection.New(s.kubeClient.Kube(), s.args.Namespace,
		leaderelection.PerRevision(leaderelection.LastGoodRecord, s.args.Revision), id, s.args.Security.LeaderElection)
	s.lastGood.AddRunFunction(crd.RunLastGoodWriter)
}

// startLastGood contends for the last-good Lease.
func (s *Server) startLastGood() { s.contend(s.lastGood) }

// identity is this replica's name in Leases and in what it writes: the pod
// name, else the host name.
func (s *Server) identity() string {
	if s.args.PodName != "" {
		return s.args.PodName
	}
	id, _ := os.Hostname()
	return id
}

// contend runs an election (nil: none) until the server stops.
func (s *Server) contend(e *leaderelection.Election) {
	if e == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		e.Run(s.internalStop)
	}()
}

package bootstrap

import "github.com/meshplane/istiod/pkg/kube/leaderelection"

// defaultRevisions is the one watch of the cluster's default revision
// (the istio-revision-tag-default webhook) that every prioritized election
// of the local cluster reads: one informer, as Istio's elections share one
// from its informer factory. Two would each read the webhook in full after
// an API server outage.
func (s *Server) defaultRevisions() *leaderelection.DefaultRevisionWatcher {
	if s.revisions == nil {
		s.revisions = leaderelection.NewDefaultRevisionWatcher(s.kubeClient.Kube())
	}
	return s.revisions
}

// startDefaultRevisions runs that watch, once, until istiod stops.
func (s *Server) startDefaultRevisions() {
	s.revisionsOnce.Do(func() {
		// without elections (ENABLE_LEADER_ELECTION=false) nothing reads
		// it, and Istio watches nothing
		if s.revisions == nil || s.args.Security.LeaderElection.Disabled {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.revisions.Run(s.internalStop)
		}()
	})
}

package kube

import (
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

var fakeGatesOnce sync.Once

// noWatchList turns off client-go's streaming watch-list for the process: the
// fake clientsets cannot stream it, and their informers would wait for a
// bookmark that never comes. Only fake clients call this.
func noWatchList() {
	fakeGatesOnce.Do(func() {
		clientfeatures.ReplaceFeatureGates(withoutWatchList{clientfeatures.FeatureGates()})
	})
}

type withoutWatchList struct{ clientfeatures.Gates }

func (g withoutWatchList) Enabled(key clientfeatures.Feature) bool {
	if key == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(key)
}

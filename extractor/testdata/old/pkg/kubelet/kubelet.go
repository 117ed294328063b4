// Package kubelet is a fixture for syncloop's extractor: the shape of
// syncLoopIteration at v1.20 (printf klog, the liveness case inline, a
// nested switch whose cases are not the select's).
package kubelet

import (
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/pleg"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// Kubelet is the fixture's kubelet.
type Kubelet struct {
	livenessManager proberesults.Manager
	podManager      interface{ GetPodByUID(string) (string, bool) }
}

// syncLoopIteration reads from various channels and dispatches pods to the
// given handler.
//
//   - configCh: dispatch the pods for the config change to the appropriate
//     handler callback for the event type
//   - liveness manager: sync pods that have failed
func (kl *Kubelet) syncLoopIteration(configCh <-chan kubetypes.PodUpdate, handler SyncHandler,
	syncCh <-chan time.Time, housekeepingCh <-chan time.Time, plegCh <-chan *pleg.PodLifecycleEvent) bool {
	select {
	case u, open := <-configCh:
		if !open {
			klog.Errorf("Update channel is closed. Exiting the sync loop.")
			return false
		}

		switch u.Op {
		case kubetypes.ADD:
			klog.V(2).Infof("SyncLoop (ADD, %q): %q", u.Source, u.Pods)
			handler.HandlePodAdditions(u.Pods)
		case kubetypes.SET:
			klog.Warningf("Kubelet does not support snapshot update")
		default:
			klog.Errorf("Invalid event type received: %d.", u.Op)
		}

	case e := <-plegCh:
		if isSyncPodWorthy(e) {
			klog.V(2).Infof("SyncLoop (PLEG): %q, event: %#v", e.ID, e)
			handler.HandlePodSyncs(e.ID)
		}
		kl.deletePodSandbox(e.ID)
	case <-syncCh:
	case update := <-kl.livenessManager.Updates():
		if update.Result == proberesults.Failure {
			pod, ok := kl.podManager.GetPodByUID(update.PodUID)
			if !ok {
				klog.V(4).Infof("SyncLoop (container unhealthy): ignore irrelevant update: %#v", update)
				break
			}
			klog.V(1).Infof("SyncLoop (container unhealthy): %q", pod)
			handler.HandlePodSyncs(pod)
		}
	case <-housekeepingCh:
		klog.V(4).Info("SyncLoop (housekeeping)")
		if err := handler.HandlePodCleanups(); err != nil {
			klog.Errorf("Failed cleaning pods: %v", err)
		}
	}
	return true
}

func (kl *Kubelet) deletePodSandbox(id string) {}

// isSyncPodWorthy filters out events that are not worthy of pod syncing.
func isSyncPodWorthy(event *pleg.PodLifecycleEvent) bool {
	return event.Type != pleg.ContainerRemoved
}

// Package kubelet is a fixture for syncloop's extractor: the shape of
// syncLoopIteration at v1.37 (contextual logging, handleProbeSync, the
// container manager), plus shapes no tag has had yet.
package kubelet

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/pleg"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// syncLoopIteration reads from various channels and dispatches pods to the
// given handler.
//
//   - configCh: dispatch the pods for the config change to the appropriate
//     handler callback for the event type
//   - health manager: sync pods that have failed
func (kl *Kubelet) syncLoopIteration(ctx context.Context, configCh <-chan kubetypes.PodUpdate, handler SyncHandler,
	syncCh <-chan time.Time, housekeepingCh <-chan time.Time, plegCh <-chan *pleg.PodLifecycleEvent) bool {
	logger := klog.FromContext(ctx)
	select {
	case u, open := <-configCh:
		if !open {
			logger.Error(nil, "Update channel is closed, exiting the sync loop")
			return false
		}

		switch u.Op {
		case kubetypes.ADD:
			logger.V(2).Info("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))
			handler.HandlePodAdditions(ctx, u.Pods)
		default:
			logger.Error(nil, "Invalid operation type received", "operation", u.Op)
		}
	case e := <-plegCh:
		if isSyncPodWorthy(e) {
			klog.V(2).InfoS("SyncLoop (PLEG): event for pod", "event", e)
			handler.HandlePodSyncs(ctx, e.ID)
		}
		func() {
			if e.Data == nil {
				klog.ErrorS(nil, "PLEG event "+"without data", "event", e)
			}
		}()
	case <-syncCh:
		podsToSync := kl.getPodsToSync()
		if len(podsToSync) == 0 {
			break
		}
		handler.HandlePodSyncs(ctx, podsToSync)
	case update := <-kl.livenessManager.Updates():
		if update.Result == proberesults.Failure {
			handleProbeSync(ctx, kl, update, handler, "liveness", "unhealthy")
		}
	case update := <-kl.readinessManager.Updates():
		kl.statusManager.SetContainerReadiness(logger, update.PodUID)
		handleProbeSync(ctx, kl, update, handler, "readiness", "ready")
	case update := <-kl.containerManager.Updates():
		for _, p := range update.PodUIDs {
			logger.V(3).Info("SyncLoop (containermanager): event for pod", "pod", p)
		}
	case ev := <-kl.eventedPleg.Watch():
		msg := "evented PLEG: " + ev.ID
		logger.Info(msg)
	case <-ctx.Done():
	case <-housekeepingCh:
		if !kl.sourcesReady.AllReady() {
			logger.V(4).Info("SyncLoop (housekeeping, skipped): sources aren't ready yet")
		} else {
			klog.V(4).InfoS("SyncLoop (housekeeping)")
			if err := handler.HandlePodCleanups(ctx); err != nil {
				logger.Error(err, "Failed cleaning pods")
			}
		}
	}
	return true
}

func handleProbeSync(ctx context.Context, kl *Kubelet, update proberesults.Update, handler SyncHandler, probe, status string) {
	logger := klog.FromContext(ctx)
	pod, ok := kl.podManager.GetPodByUID(update.PodUID)
	if !ok {
		logger.V(4).Info("SyncLoop (probe): ignore irrelevant update", "probe", probe, "status", status, "update", update)
		return
	}
	logProbe(logger, probe)
	handler.HandlePodSyncs(ctx, pod)
}

// logProbe is called by handleProbeSync only: a helper of a helper.
func logProbe(logger klog.Logger, probe string) {
	logger.V(1).Info("SyncLoop (probe)", "probe", probe)
}

// isSyncPodWorthy filters out events that are not worthy of pod syncing.
func isSyncPodWorthy(event *pleg.PodLifecycleEvent) bool {
	return event.Type != pleg.ContainerRemoved
}

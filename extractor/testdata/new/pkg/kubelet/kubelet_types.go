package kubelet

import (
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/pleg"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
)

// Kubelet is declared apart from syncLoopIteration, as the resolver must
// search the whole package for it.
type Kubelet struct {
	livenessManager  proberesults.Manager
	readinessManager proberesults.Manager
	containerManager cm.ContainerManager
	eventedPleg      *pleg.EventedPLEG
}

package cm

import "k8s.io/kubernetes/pkg/kubelet/cm/resourceupdates"

type resourceUpdater interface {
	// Updates returns a channel that receives an Update when the device
	// changed its status.
	Updates() <-chan resourceupdates.Update
}

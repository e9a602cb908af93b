package main

// The kubelet's plugin registration, which node-driver-registrar does for upstream drivers (it is not
// on the module proxy here): a socket in <kubelet root>/plugins_registry/ serving the kubelet's
// pluginregistration.v1 Registration service. The kubelet's plugin watcher finds the socket, asks
// GetInfo for the driver's name and CSI endpoint, calls NodeGetInfo there, records the driver in the
// node's CSINode object, and reports the outcome through NotifyRegistrationStatus.

import (
	"context"
	"log"
	"os"

	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type registrar struct {
	registration.UnimplementedRegistrationServer
	driverName string
	endpoint   string // the CSI socket, as a path the kubelet can open
}

func (r *registrar) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	return &registration.PluginInfo{
		Type:              registration.CSIPlugin,
		Name:              r.driverName,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus: a refused registration ends the process (as node-driver-registrar does),
// so the pod restarts and the kubelet tries again rather than a driver that looks up but is unknown.
func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		log.Printf("the kubelet refused the registration of %s: %s", r.driverName, s.Error)
		os.Exit(1)
	}
	log.Printf("registered with the kubelet as %s (CSI endpoint %s)", r.driverName, r.endpoint)
	return &registration.RegistrationStatusResponse{}, nil
}

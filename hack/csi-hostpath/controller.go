package main

// The CSI Identity and Controller services: volumes are directories, snapshots are tars of them
// (store.go). No attach step (the CSIDriver object says attachRequired: false) and no topology: the
// driver serves one node.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const defaultCapacity = 1 << 30

type identity struct {
	csi.UnimplementedIdentityServer
	name, version string
}

func (i *identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: i.name, VendorVersion: i.version}, nil
}

func (i *identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (i *identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

type controller struct {
	csi.UnimplementedControllerServer
	store *store
}

var controllerCaps = []csi.ControllerServiceCapability_RPC_Type{
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
}

func (c *controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	caps := make([]*csi.ControllerServiceCapability, 0, len(controllerCaps))
	for _, t := range controllerCaps {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities accepts filesystem volumes on one node (a directory cannot be a block device, and
// one node is all this driver serves).
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "block volumes are not supported: this driver serves directories (volumeMode: Filesystem)")
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return status.Errorf(codes.InvalidArgument, "access mode %s is not supported: use ReadWriteOnce, ReadWriteOncePod or ReadOnlyMany on one node", c.GetAccessMode().GetMode())
		}
	}
	return nil
}

func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, fs.ErrExist):
		return status.Error(codes.AlreadyExists, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

func (c *controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if req.GetVolumeContentSource().GetVolume() != nil {
		return nil, status.Error(codes.InvalidArgument, "cloning a volume is not supported (no CLONE_VOLUME capability); restore from a VolumeSnapshot instead")
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	if capacity == 0 {
		capacity = defaultCapacity
	}
	fromSnapshot := req.GetVolumeContentSource().GetSnapshot().GetSnapshotId()
	if fromSnapshot != "" {
		if _, err := c.store.getSnapshot(fromSnapshot); err != nil {
			return nil, storeError(fmt.Errorf("snapshot %q: %w", fromSnapshot, err))
		}
	}
	v, err := c.store.createVolume(req.GetName(), capacity, fromSnapshot)
	if err != nil {
		return nil, storeError(err)
	}
	vol := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes}
	if v.FromSnapshot != "" {
		vol.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.FromSnapshot},
		}}
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

func (c *controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	return &csi.DeleteVolumeResponse{}, storeError(c.store.deleteVolume(req.GetVolumeId()))
}

func (c *controller) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if _, err := c.store.getVolume(req.GetVolumeId()); err != nil {
		return nil, storeError(fmt.Errorf("volume %q: %w", req.GetVolumeId(), err))
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

func snapshotOf(r snapshotRecord) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:     r.ID,
		SourceVolumeId: r.SourceVolumeID,
		SizeBytes:      r.SizeBytes,
		CreationTime:   timestamppb.New(timeOf(r.CreatedUnixNs)),
		ReadyToUse:     true, // the tar is complete before the record exists
	}
}

func (c *controller) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_id are required")
	}
	r, err := c.store.createSnapshot(req.GetName(), req.GetSourceVolumeId())
	if err != nil {
		return nil, storeError(err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(r)}, nil
}

func (c *controller) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	return &csi.DeleteSnapshotResponse{}, storeError(c.store.deleteSnapshot(req.GetSnapshotId()))
}

// ListSnapshots filters by snapshot or source volume; starting_token is the index of the next entry.
func (c *controller) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	all, err := c.store.listSnapshots()
	if err != nil {
		return nil, storeError(err)
	}
	var matching []snapshotRecord
	for _, r := range all {
		if (req.GetSnapshotId() == "" || r.ID == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || r.SourceVolumeID == req.GetSourceVolumeId()) {
			matching = append(matching, r)
		}
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		if start, err = strconv.Atoi(t); err != nil || start < 0 || start > len(matching) {
			return nil, status.Errorf(codes.Aborted, "starting_token %q is not one this driver gave out", t)
		}
	}
	end := len(matching)
	if n := int(req.GetMaxEntries()); n > 0 && start+n < end {
		end = start + n
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, r := range matching[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: snapshotOf(r)})
	}
	if end < len(matching) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

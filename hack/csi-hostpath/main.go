// csi-hostpath: the project's small CSI driver, the stand-in for a storage vendor's driver on the real
// node (docs/engines.md "snapshot — Backup", docs/real-node.md, ADR 0019). Upstream's
// csi-driver-host-path and node-driver-registrar are not served by the Go module proxy here (HTTP 403
// "This module version is not available"), so this program is both: a CSI driver whose volumes are
// directories under --data-dir and whose snapshots are tars of them, and the kubelet plugin
// registration that node-driver-registrar would do. What is under test is the real machinery around
// it: snapshot-controller, csi-snapshotter, csi-provisioner and the kubelet's CSI volume manager.
//
//	csi-hostpath --csi-socket <kubelet root>/plugins/<name>/csi.sock \
//	  --registration-dir <kubelet root>/plugins_registry --data-dir <dir> --node-id <node>
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const version = "vws-1"

func timeOf(unixNs int64) time.Time { return time.Unix(0, unixNs) }

// listen removes a socket a previous run left behind, then listens on the path.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// logCalls logs every call and its error: the driver's side of the story in `kubectl logs`.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s: %v", info.FullMethod, err)
	} else if info.FullMethod != "/csi.v1.Identity/Probe" {
		log.Printf("%s: ok", info.FullMethod)
	}
	return resp, err
}

// serve returns nil only after Stop or GracefulStop; anything else ends the driver.
func serve(s *grpc.Server, l net.Listener) {
	if err := s.Serve(l); err != nil {
		log.Fatal(err)
	}
}

func main() {
	name := flag.String("driver-name", "hostpath.csi.vworkspace.io", "the CSI driver's name (CSIDriver, StorageClass provisioner, VolumeSnapshotClass driver)")
	socket := flag.String("csi-socket", "", "unix socket of the CSI services; a path the kubelet can open too")
	regDir := flag.String("registration-dir", "", "the kubelet's plugins_registry directory; empty: do not register (controller-only)")
	dataDir := flag.String("data-dir", "", "where volumes (directories) and snapshots (tars) live")
	nodeID := flag.String("node-id", os.Getenv("NODE_NAME"), "this node's name (NodeGetInfo)")
	socketGID := flag.Int("socket-gid", -1, "group that may use the CSI socket (mode 0660), so the sidecars need not run as root; -1: root only")
	flag.Parse()
	if *socket == "" || *dataDir == "" || *nodeID == "" {
		log.Fatal("--csi-socket, --data-dir and --node-id (or NODE_NAME) are required")
	}
	st, err := newStore(*dataDir)
	if err != nil {
		log.Fatalf("data directory %s: %v", *dataDir, err)
	}

	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, &identity{name: *name, version: version})
	csi.RegisterControllerServer(srv, &controller{store: st})
	csi.RegisterNodeServer(srv, &node{store: st, nodeID: *nodeID})
	l, err := listen(*socket)
	if err != nil {
		log.Fatalf("CSI socket %s: %v", *socket, err)
	}
	if *socketGID >= 0 {
		if err := os.Chown(*socket, 0, *socketGID); err != nil {
			log.Fatalf("CSI socket %s: %v", *socket, err)
		}
		if err := os.Chmod(*socket, 0o660); err != nil {
			log.Fatalf("CSI socket %s: %v", *socket, err)
		}
	}
	go serve(srv, l)
	log.Printf("%s %s serving CSI on %s, data in %s, node %s", *name, version, *socket, *dataDir, *nodeID)

	var reg *grpc.Server
	if *regDir != "" {
		// Listening last: the kubelet dials the CSI socket as soon as it sees this one.
		regSocket := filepath.Join(*regDir, *name+"-reg.sock")
		rl, err := listen(regSocket)
		if err != nil {
			log.Fatalf("registration socket %s: %v", regSocket, err)
		}
		reg = grpc.NewServer(grpc.UnaryInterceptor(logCalls))
		registration.RegisterRegistrationServer(reg, &registrar{driverName: *name, endpoint: *socket})
		go serve(reg, rl)
		log.Printf("registration socket %s for the kubelet", regSocket)
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	log.Printf("stopping on %v", <-stop)
	if reg != nil {
		// The kubelet forgets a plugin whose registration socket is gone: first that, then the CSI socket.
		reg.Stop()
		_ = os.Remove(filepath.Join(*regDir, *name+"-reg.sock"))
	}
	srv.GracefulStop()
	_ = os.Remove(*socket)
}

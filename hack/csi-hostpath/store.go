package main

// The driver's state is its data directory alone, so a restarted driver knows every volume and
// snapshot it made:
//
//	<data>/volumes/<id>/        a volume: the directory pods get bind-mounted
//	<data>/volumes/<id>.json    its record (the CSI name, capacity, the snapshot it came from)
//	<data>/snapshots/<id>.tar   a snapshot: a tar of the volume directory when it was cut
//	<data>/snapshots/<id>.json  its record (the CSI name, source volume, creation time, size)
//
// IDs are derived from the CSI names, which makes Create* idempotent the way CSI asks: the same name
// again finds the same record.

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

type volumeRecord struct {
	Name          string `json:"name"`
	ID            string `json:"id"`
	CapacityBytes int64  `json:"capacityBytes"`
	// FromSnapshot is the snapshot ID the volume was filled from ("" for an empty volume).
	FromSnapshot string `json:"fromSnapshot,omitempty"`
}

type snapshotRecord struct {
	Name           string `json:"name"`
	ID             string `json:"id"`
	SourceVolumeID string `json:"sourceVolumeId"`
	CreatedUnixNs  int64  `json:"createdUnixNs"`
	SizeBytes      int64  `json:"sizeBytes"`
}

var errNotFound = errors.New("not found")

type store struct {
	dir string
	mu  sync.Mutex // one operation at a time: a tiny driver, never a busy one
}

func newStore(dir string) (*store, error) {
	for _, d := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o750); err != nil {
			return nil, err
		}
	}
	return &store{dir: dir}, nil
}

func idFor(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:20]
}

// validID keeps IDs that come back from the CO (volume and snapshot handles) inside the data directory.
func validID(prefix, id string) bool {
	if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+20 {
		return false
	}
	_, err := hex.DecodeString(id[len(prefix):])
	return err == nil
}

func (s *store) volumeDir(id string) string { return filepath.Join(s.dir, "volumes", id) }
func (s *store) volumeMeta(id string) string {
	return filepath.Join(s.dir, "volumes", id+".json")
}
func (s *store) snapshotTar(id string) string {
	return filepath.Join(s.dir, "snapshots", id+".tar")
}
func (s *store) snapshotMeta(id string) string {
	return filepath.Join(s.dir, "snapshots", id+".json")
}

func readRecord(path string, into any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// writeRecord writes through a temporary file and a rename, so a record is whole or absent.
func writeRecord(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o640); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func (s *store) getVolume(id string) (volumeRecord, error) {
	var v volumeRecord
	if !validID("vol-", id) {
		return v, errNotFound
	}
	return v, readRecord(s.volumeMeta(id), &v)
}

// createVolume makes an empty volume directory, or one filled from a snapshot's tar. The record is
// written last: a crash before it leaves a directory the next call fills again.
func (s *store) createVolume(name string, capacity int64, fromSnapshot string) (volumeRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("vol-", name)
	var existing volumeRecord
	if err := readRecord(s.volumeMeta(id), &existing); err == nil {
		if existing.CapacityBytes < capacity || existing.FromSnapshot != fromSnapshot {
			return existing, fmt.Errorf("volume %q exists with other parameters: %w", name, fs.ErrExist)
		}
		return existing, nil
	} else if !errors.Is(err, errNotFound) {
		return existing, err
	}
	dir := s.volumeDir(id)
	if err := os.RemoveAll(dir); err != nil {
		return existing, err
	}
	// World-writable like a fresh filesystem's root would be to its pod (fsGroup is not applied to
	// hostpath volumes): non-root pods can write.
	if err := os.Mkdir(dir, 0o777); err != nil {
		return existing, err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // the umask narrowed Mkdir's mode
		return existing, err
	}
	if fromSnapshot != "" {
		if !validID("snap-", fromSnapshot) {
			return existing, fmt.Errorf("snapshot %q: %w", fromSnapshot, errNotFound)
		}
		if err := untar(s.snapshotTar(fromSnapshot), dir); err != nil {
			return existing, fmt.Errorf("restoring snapshot %s: %w", fromSnapshot, err)
		}
	}
	rec := volumeRecord{Name: name, ID: id, CapacityBytes: capacity, FromSnapshot: fromSnapshot}
	return rec, writeRecord(s.volumeMeta(id), rec)
}

func (s *store) deleteVolume(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !validID("vol-", id) {
		return nil // never ours: nothing to delete
	}
	if err := os.Remove(s.volumeMeta(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.RemoveAll(s.volumeDir(id))
}

// createSnapshot tars the volume directory as it is now.
func (s *store) createSnapshot(name, volumeID string) (snapshotRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := idFor("snap-", name)
	var existing snapshotRecord
	if err := readRecord(s.snapshotMeta(id), &existing); err == nil {
		if existing.SourceVolumeID != volumeID {
			return existing, fmt.Errorf("snapshot %q exists for volume %s: %w", name, existing.SourceVolumeID, fs.ErrExist)
		}
		return existing, nil
	} else if !errors.Is(err, errNotFound) {
		return existing, err
	}
	if !validID("vol-", volumeID) {
		return existing, fmt.Errorf("volume %q: %w", volumeID, errNotFound)
	}
	if _, err := os.Stat(s.volumeMeta(volumeID)); err != nil {
		return existing, fmt.Errorf("volume %q: %w", volumeID, errNotFound)
	}
	size, err := tarDir(s.volumeDir(volumeID), s.snapshotTar(id))
	if err != nil {
		return existing, fmt.Errorf("archiving volume %s: %w", volumeID, err)
	}
	rec := snapshotRecord{Name: name, ID: id, SourceVolumeID: volumeID, CreatedUnixNs: time.Now().UnixNano(), SizeBytes: size}
	return rec, writeRecord(s.snapshotMeta(id), rec)
}

func (s *store) getSnapshot(id string) (snapshotRecord, error) {
	var r snapshotRecord
	if !validID("snap-", id) {
		return r, errNotFound
	}
	return r, readRecord(s.snapshotMeta(id), &r)
}

func (s *store) deleteSnapshot(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !validID("snap-", id) {
		return nil
	}
	for _, p := range []string{s.snapshotMeta(id), s.snapshotTar(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// listSnapshots returns every snapshot record, sorted by ID (a stable order for paging).
func (s *store) listSnapshots() ([]snapshotRecord, error) {
	files, err := filepath.Glob(filepath.Join(s.dir, "snapshots", "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]snapshotRecord, 0, len(files))
	for _, f := range files {
		var r snapshotRecord
		if err := readRecord(f, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// tarDir archives the tree under src (regular files, directories, symlinks) into dst; returns its size.
func tarDir(src, dst string) (int64, error) {
	f, err := os.Create(dst + ".tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(dst + ".tmp")
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, devices, fifos: not data
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			_, err = io.Copy(tw, in)
			return err
		}
		return nil
	})
	if walkErr != nil {
		f.Close()
		return 0, walkErr
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return info.Size(), os.Rename(dst+".tmp", dst)
}

// untar extracts a tarDir archive into dst, refusing any entry that would land outside it.
func untar(src, dst string) error {
	f, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(hdr.Name)
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return err
			}
		case tar.TypeReg:
			out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		default:
			continue
		}
		// Owners and modes as they were (the umask narrowed them on creation); times are not data.
		if hdr.Typeflag != tar.TypeSymlink {
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		}
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	}
}

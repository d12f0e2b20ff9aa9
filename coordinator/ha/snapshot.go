package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/internal/pebblelog"
	"github.com/floe-io/floe/objectstore"
)

// SnapshotStore is where snapshots are kept: the cluster's object store.
type SnapshotStore interface {
	Put(ctx context.Context, key string, data []byte) error
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]objectstore.ObjectInfo, error)
}

// snapshotFormat is the version of a snapshot's manifest.
const snapshotFormat = 1

// manifest describes one snapshot (JSON, written after every file it lists,
// so that a snapshot without one is incomplete and ignored).
type manifest struct {
	Format int `json:"format"`
	// Seq is the log sequence every entry up to which the snapshot holds.
	Seq uint64 `json:"seq"`
	// Term is the term of the leader that took it.
	Term uint64 `json:"term"`
	// Created is when, in Unix milliseconds.
	Created int64          `json:"created_ms"`
	Files   []manifestFile `json:"files"`

	// dir is the key prefix the snapshot was read from (latest), "" for
	// one just taken.
	dir string
}

// manifestFile is one file of a database's checkpoint.
type manifestFile struct {
	// DB is the database, "coordinator" or "groups"; Name the file's name
	// in its checkpoint directory.
	DB     string `json:"db"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshots are the snapshots under one prefix of a store.
type snapshots struct {
	store  SnapshotStore
	prefix string // coordapi.SnapshotPrefix: ends in "/coordinator/snapshots/"
	// legacy is where builds before coordapi.SnapshotPrefix kept them
	// (coordapi.LegacySnapshotPrefix), "" if nowhere else. latest reads
	// them while prefix holds none; prune deletes them once it does.
	legacy string
}

// dirOf returns the key prefix of the snapshot at seq.
func (s snapshots) dirOf(seq uint64) string { return snapshotDir(s.prefix, seq) }

// snapshotDir returns the key prefix of the snapshot at seq under prefix
// (s.prefix or s.legacy).
func snapshotDir(prefix string, seq uint64) string {
	return prefix + fmt.Sprintf("%020d", seq) + "/"
}

// list returns the sequences of the complete snapshots, oldest first.
func (s snapshots) list(ctx context.Context) ([]uint64, error) {
	return s.listUnder(ctx, s.prefix)
}

// listUnder returns the sequences of the complete snapshots under prefix,
// oldest first.
func (s snapshots) listUnder(ctx context.Context, prefix string) ([]uint64, error) {
	infos, err := s.store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("ha: list snapshots: %w", err)
	}
	var seqs []uint64
	for _, in := range infos {
		rest, ok := strings.CutPrefix(in.Key, prefix)
		if !ok {
			continue
		}
		dir, file, ok := strings.Cut(rest, "/")
		if !ok || file != "manifest.json" {
			continue
		}
		if seq, err := strconv.ParseUint(dir, 10, 64); err == nil {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// latest returns the newest complete snapshot's manifest, nil when there
// is none: under s.prefix, else under s.legacy.
func (s snapshots) latest(ctx context.Context) (*manifest, error) {
	seqs, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	base := s.prefix
	if len(seqs) == 0 && s.legacy != "" {
		if seqs, err = s.listUnder(ctx, s.legacy); err != nil {
			return nil, err
		}
		base = s.legacy
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	dir := snapshotDir(base, seqs[len(seqs)-1])
	b, err := s.store.GetRange(ctx, dir+"manifest.json", 0, -1)
	if err != nil {
		return nil, fmt.Errorf("ha: read snapshot manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("ha: snapshot manifest: %w", err)
	}
	if m.Format != snapshotFormat {
		return nil, fmt.Errorf("ha: snapshot %d has format %d; this build reads %d", m.Seq, m.Format, snapshotFormat)
	}
	m.dir = dir
	return &m, nil
}

// checkpointer is what a snapshot copies: the coordinator and the group
// coordinator each write a consistent copy of their Pebble.
type checkpointer interface {
	Checkpoint(dir string) error
}

// take checkpoints both databases into a temporary directory under tmp,
// uploads them and then their manifest. It returns the manifest. durable
// is called with the highest position the checkpoints hold before the
// manifest is uploaded: a leader applies before the log has an entry (a
// grouped batch waits for an acknowledgement to be published), and no
// snapshot may hold an entry the log might never get.
func (s snapshots) take(ctx context.Context, tmp string, term uint64, dbs map[string]checkpointer, durable func(seq uint64) error) (*manifest, error) {
	dir, err := os.MkdirTemp(tmp, "snapshot-")
	if err != nil {
		return nil, fmt.Errorf("ha: snapshot: %w", err)
	}
	defer os.RemoveAll(dir)
	m := &manifest{Format: snapshotFormat, Term: term, Created: time.Now().UnixMilli()}
	first := true
	var highest uint64
	for _, name := range []string{"coordinator", "groups"} {
		cdir := filepath.Join(dir, name)
		if err := dbs[name].Checkpoint(cdir); err != nil {
			return nil, err
		}
		pos, err := checkpointApplied(cdir)
		if err != nil {
			return nil, err
		}
		seq := pos.seq
		if first || seq < m.Seq {
			m.Seq, first = seq, false
		}
		highest = max(highest, seq)
	}
	// One file in memory at a time: a state's SSTs can be large.
	var files []manifestFile
	base := s.dirOf(m.Seq)
	for _, name := range []string{"coordinator", "groups"} {
		cdir := filepath.Join(dir, name)
		err := filepath.WalkDir(cdir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(cdir, p)
			f := manifestFile{DB: name, Name: filepath.ToSlash(rel), Size: int64(len(b)), CRC32C: crc32.Checksum(b, castagnoli)}
			if err := s.store.Put(ctx, base+f.DB+"/"+f.Name, b); err != nil {
				return fmt.Errorf("upload: %w", err)
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ha: snapshot: %w", err)
		}
	}
	m.Files = files
	if durable != nil {
		if err := durable(highest); err != nil {
			return nil, fmt.Errorf("ha: snapshot: the log does not have entry %d: %w", highest, err)
		}
	}
	mb, _ := json.Marshal(m)
	if err := s.store.Put(ctx, base+"manifest.json", mb); err != nil {
		return nil, fmt.Errorf("ha: upload snapshot manifest: %w", err)
	}
	return m, nil
}

// checkpointApplied reads the applied sequence of the checkpoint in dir.
func checkpointApplied(dir string) (position, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: pebblelog.New(nil, "ha")})
	if err != nil {
		return position{}, fmt.Errorf("ha: open checkpoint: %w", err)
	}
	defer db.Close()
	pos, _, err := readApplied(db)
	return pos, err
}

// restore replaces the databases in coordDir and groupsDir (which may lie
// inside coordDir, as by default) with the snapshot m: both are downloaded
// into a staging directory beside coordDir first, and then moved in.
func (s snapshots) restore(ctx context.Context, m *manifest, coordDir, groupsDir string) error {
	coordDir, groupsDir = filepath.Clean(coordDir), filepath.Clean(groupsDir)
	stage := filepath.Join(filepath.Dir(coordDir), "."+filepath.Base(coordDir)+"-restore")
	if err := os.RemoveAll(stage); err != nil {
		return fmt.Errorf("ha: restore: %w", err)
	}
	defer os.RemoveAll(stage)
	base := m.dir
	if base == "" {
		base = s.dirOf(m.Seq)
	}
	for _, db := range []string{"coordinator", "groups"} {
		if err := os.MkdirAll(filepath.Join(stage, db), 0o755); err != nil {
			return fmt.Errorf("ha: restore: %w", err)
		}
	}
	for _, f := range m.Files {
		if (f.DB != "coordinator" && f.DB != "groups") || f.Name == "" || strings.Contains(f.Name, "..") || path.IsAbs(f.Name) {
			return fmt.Errorf("ha: snapshot %d lists a bad file %q/%q", m.Seq, f.DB, f.Name)
		}
		b, err := s.store.GetRange(ctx, base+f.DB+"/"+f.Name, 0, -1)
		if err != nil {
			return fmt.Errorf("ha: download snapshot: %w", err)
		}
		if int64(len(b)) != f.Size || crc32.Checksum(b, castagnoli) != f.CRC32C {
			return fmt.Errorf("ha: snapshot %d file %s/%s is corrupt (%d bytes)", m.Seq, f.DB, f.Name, len(b))
		}
		p := filepath.Join(stage, f.DB, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("ha: restore: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("ha: restore: %w", err)
		}
	}
	steps := []func() error{
		func() error { return os.RemoveAll(groupsDir) },
		func() error { return os.RemoveAll(coordDir) },
		func() error { return os.Rename(filepath.Join(stage, "coordinator"), coordDir) },
		func() error { return os.MkdirAll(filepath.Dir(groupsDir), 0o755) },
		func() error { return os.Rename(filepath.Join(stage, "groups"), groupsDir) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("ha: restore: %w", err)
		}
	}
	return nil
}

// prune deletes all but the newest keep snapshots and returns the oldest
// kept one's sequence (0 when there is none): the log may be trimmed up to
// it.
func (s snapshots) prune(ctx context.Context, keep int) (uint64, error) {
	seqs, err := s.list(ctx)
	if err != nil || len(seqs) == 0 {
		return 0, err
	}
	keep = max(keep, 1)
	var errs []error
	for len(seqs) > keep {
		errs = append(errs, s.delete(ctx, s.dirOf(seqs[0])))
		seqs = seqs[1:]
	}
	if s.legacy != "" {
		// Snapshots under the old key are older than any under the new
		// one: the log is trimmed below the newest, so they go.
		old, err := s.listUnder(ctx, s.legacy)
		errs = append(errs, err)
		for _, seq := range old {
			errs = append(errs, s.delete(ctx, snapshotDir(s.legacy, seq)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("ha: prune snapshots: %w", err)
	}
	return seqs[0], nil
}

// delete deletes the snapshot under base, its manifest first: a snapshot
// half deleted is incomplete.
func (s snapshots) delete(ctx context.Context, base string) error {
	errs := []error{s.store.Delete(ctx, base+"manifest.json")}
	infos, err := s.store.List(ctx, base)
	errs = append(errs, err)
	for _, in := range infos {
		errs = append(errs, s.store.Delete(ctx, in.Key))
	}
	return errors.Join(errs...)
}

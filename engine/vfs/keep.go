package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// KeepCopy writes data, bytes a repair is about to cut from a damaged file,
// to a new file in dir (which must exist) named name, the time and
// ".broken", with "-1", "-2", ... added if that name is taken, and makes it
// durable (file and folder fsynced). It returns the new file's path. On
// failure it removes what it wrote, so a failed attempt (a full disk, say)
// leaves nothing behind to eat more space on the next try.
func KeepCopy(fsys FS, dir, name string, data []byte) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	for i := 0; ; i++ {
		base := name + "." + stamp + ".broken"
		if i > 0 {
			base = fmt.Sprintf("%s.%s-%d.broken", name, stamp, i)
		}
		path := filepath.Join(dir, base)
		f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		err = writeSyncClose(f, data)
		if err == nil {
			err = fsys.SyncDir(dir)
		}
		if err != nil {
			if rerr := fsys.Remove(path); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
				fsys.SyncDir(dir) //nolint:errcheck // best effort: the copy is gone from the folder either way
			}
			return "", err
		}
		return path, nil
	}
}

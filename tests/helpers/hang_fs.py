#!/usr/bin/python3
"""A file system that hangs on demand, as a dead NFS or Lustre mount does, for llmwatch's tests.

  hang_fs.py BACKING MOUNT CONTROL

Serves the directory BACKING read-only at MOUNT (FUSE, Debian's python3-fusepy). While the file
CONTROL exists, every call on the mount (stat, readdir, open, read) blocks until it is removed:
the caller waits in the kernel, where no signal or timeout of its own reaches it.
"""
import os
import sys
import time

from fusepy import FUSE, FuseOSError, Operations

STAT_KEYS = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")


class HangFS(Operations):
    def __init__(self, root, control):
        self.root, self.control = root, control

    def _wait(self):
        while os.path.exists(self.control):
            time.sleep(0.05)

    def _path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path, fh=None):
        self._wait()
        try:
            st = os.lstat(self._path(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        return {k: getattr(st, k) for k in STAT_KEYS}

    def readdir(self, path, fh):
        self._wait()
        return [".", ".."] + os.listdir(self._path(path))

    def open(self, path, flags):
        self._wait()
        try:
            return os.open(self._path(path), os.O_RDONLY)
        except OSError as e:
            raise FuseOSError(e.errno)

    def read(self, path, size, offset, fh):
        self._wait()
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        os.close(fh)


if __name__ == "__main__":
    backing, mount, control = sys.argv[1:4]
    # No kernel caching: every stat and read reaches this process, as with a server that hangs.
    FUSE(HangFS(backing, control), mount, foreground=True, ro=True, direct_io=True,
         attr_timeout=0, entry_timeout=0, negative_timeout=0)

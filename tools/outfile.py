"""Output files that never destroy a user's file: core/outfile.h's rules for
the Python tools (README, "Reliability"). Every writer in tools/ goes
through here.

A regular file (or a path that does not exist yet) is written to a fresh,
uniquely named temporary beside it and renamed over it only by commit(),
once complete; until then, and after abort() or a failed commit, the target
keeps its previous content and the temporary is gone. A symbolic link is
followed (the file it points to is replaced, the link stays). Character
devices, FIFOs and sockets (/dev/null, a pipe, /dev/stdout) are written
through; directories and block devices are refused, never replaced.

check_not_input() refuses an output that is one of the run's inputs (the
same file by device and inode, so through links too); an input folder (a
Hugging Face model) counts with every file in it.
"""
import contextlib
import os
import re
import stat
import tempfile


class OutputError(OSError):
    """An output this tool refuses to write, or could not write."""


def _file_ids(path):
    """{(dev, ino)} of path, or of every file in it if it is a folder."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return set()
    ids = {(st.st_dev, st.st_ino)}
    if stat.S_ISDIR(st.st_mode):
        try:
            with os.scandir(path) as it:
                for e in it:
                    with contextlib.suppress(OSError):
                        s = e.stat()
                        ids.add((s.st_dev, s.st_ino))
        except OSError:
            pass
    return ids


def check_not_input(what, path, inputs):
    """Refuse output path (named what, e.g. "the output") if it is one of
    inputs, [(what, path)]; the message names both."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return  # a file that does not exist is nobody's input
    me = (st.st_dev, st.st_ino)
    for in_what, in_path in inputs:
        if in_path is not None and me in _file_ids(in_path):
            raise OutputError(f"{what} {path} is the same file as {in_what} {in_path}"
                              f"{'' if os.path.samefile(path, in_path) else ' (a file in that folder)'}; "
                              "refusing to write over an input")


def _kind(path):
    """'new', 'regular', 'through' (device, FIFO, socket) or a refusal reason."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "new"
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}")
    m = st.st_mode
    if stat.S_ISREG(m):
        return "regular"
    if stat.S_ISCHR(m) or stat.S_ISFIFO(m) or stat.S_ISSOCK(m):
        return "through"
    return "a directory" if stat.S_ISDIR(m) else "a block device" if stat.S_ISBLK(m) else \
        "not a regular file, device or pipe"


def _fd_alias(path):
    """/dev/stdout, /dev/stderr, /dev/fd/N and /proc/<pid or self>/fd/N may lead
    to the shell's own regular file: written through, not replaced. Any other
    regular file (under /dev/shm, say) is replaced (core/outfile.c's rule)."""
    return (path in ("/dev/stdout", "/dev/stderr") or path.startswith("/dev/fd/")
            or re.match(r"/proc/(self|[0-9]+)/fd/", path) is not None)


class AtomicFile:
    """f: the file to write; commit() or abort() ends it. replaces: the
    target exists and commit() replaces it."""

    def __init__(self, path, what="the output"):
        self.path, self.what, self.tmp = path, what, None
        kind = _kind(path)
        if kind not in ("new", "regular", "through"):
            raise OutputError(f"cannot write {what} {path}: it is {kind}; expected a file, "
                              "or a device or pipe to write through")
        self.replaces = kind == "regular"
        if self.replaces and not _fd_alias(path) and not os.stat(path).st_mode & 0o222:
            raise OutputError(f"cannot write {what} {path}: it is write-protected "
                              f"(mode {os.stat(path).st_mode & 0o7777:04o}); not replacing it")
        if kind == "through" or _fd_alias(path):
            self.f = open(path, "ab")  # never truncates
            return
        target = os.path.realpath(path) if os.path.islink(path) else path
        folder, name = os.path.split(os.path.abspath(target))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
        except OSError as e:
            raise OutputError(f"cannot write {what} {path}: {e.strerror} "
                              "(creating a temporary file beside it)")
        self.target = target
        try:
            # mkstemp's 0600 would stick: the old file's mode, or the umask's.
            mode = os.stat(target).st_mode & 0o7777 if self.replaces else 0o666 & ~_umask()
            os.chmod(self.tmp, mode)
            self.f = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            os.remove(self.tmp)
            raise

    def commit(self):
        """Flush, sync, rename into place; on failure abort() and raise."""
        try:
            self.f.flush()
            if self.tmp:
                os.fsync(self.f.fileno())
            self.f.close()
            if self.tmp:
                os.replace(self.tmp, self.target)
                self.tmp = None
        except BaseException:
            self.abort()
            raise

    def abort(self):
        """Close and remove the temporary (the target is untouched). Idempotent."""
        with contextlib.suppress(OSError):
            self.f.close()
        if self.tmp:
            with contextlib.suppress(OSError):
                os.remove(self.tmp)
            self.tmp = None


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic(path, what="the output"):
    """with atomic(path) as f: ... -- committed when the block ends, aborted
    (target untouched) when it raises, KeyboardInterrupt included."""
    out = AtomicFile(path, what)
    try:
        yield out.f
    except BaseException:
        out.abort()
        raise
    out.commit()


def write_bytes(path, data, what="the output"):
    with atomic(path, what) as f:
        f.write(data)

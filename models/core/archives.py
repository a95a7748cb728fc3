"""Archives of profiles (`.tar`, `.tar.gz`, `.tgz`, `.zip`), unpacked into a
temporary folder Profscope owns, never into the user's folders.

Refused, each with a message naming the archive: a member path that is
absolute or climbs out (`..`), more than PROFSCOPE_MAX_ARCHIVE_MEMBERS
members, and more uncompressed bytes than profscope.models.core.guards lets
gzip data inflate to (PROFSCOPE_MAX_INFLATE_RATIO times the archive's size).
Links, devices and other special members are skipped.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path, PurePosixPath

from profscope.models.core.files import readable_errors
from profscope.models.core.guards import inflate_limit, inflate_refused
from profscope.models.core.task import ProfileError, TaskState

SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
PATTERNS = tuple(f"*{s}" for s in SUFFIXES)
MAX_MEMBERS = 10_000  # default; PROFSCOPE_MAX_ARCHIVE_MEMBERS raises it
CHUNK = 1 << 20


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(SUFFIXES) and path.is_file()


def stem(path: Path) -> str:
    """The archive's name without its suffix (the session name of its top folder)."""
    name = path.name
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def max_members() -> int:
    try:
        return max(int(os.environ.get("PROFSCOPE_MAX_ARCHIVE_MEMBERS", MAX_MEMBERS)), 1)
    except ValueError:
        return MAX_MEMBERS


def unpack(path: Path, task: TaskState | None = None) -> Path:
    """A new temporary folder holding the archive's files; the caller removes
    it (shutil.rmtree). Nothing is left behind when it is refused."""
    import shutil  # here, as tarfile and zipfile below: an export of a plain file never needs them
    import tempfile

    task = task or TaskState()
    folder = Path(tempfile.mkdtemp(prefix="profscope-archive-"))
    try:
        with readable_errors(path):
            _Unpacker(path, folder, task).run()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


class _Unpacker:
    def __init__(self, path: Path, folder: Path, task: TaskState):
        self.path, self.folder, self.task = path, folder, task
        self.size = max(path.stat().st_size, 1)
        self.limit, self.written, self.members = inflate_limit(self.size), 0, 0

    def run(self) -> None:
        if self.path.name.lower().endswith(".zip"):
            self._zip()
        else:
            self._tar()

    def _zip(self) -> None:
        import zipfile  # here: its import is 15 ms of every start

        try:
            with zipfile.ZipFile(self.path) as z:
                infos = z.infolist()
                self._count(len(infos))
                targets = [(info, self._target(info.filename)) for info in infos]  # every name checked first
                for info, target in targets:
                    link = (info.external_attr >> 16) & 0o170000 == 0o120000
                    if info.is_dir() or link or target is None:
                        continue
                    with z.open(info) as member:
                        self._write(member, target, info.filename)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as e:
            raise ProfileError(f"{self.path}: not a readable zip archive ({e})") from None

    def _tar(self) -> None:
        import tarfile

        try:
            with tarfile.open(self.path, "r|*") as t:  # streamed: members in order, read once
                for info in t:
                    self._count(self.members + 1)
                    target = self._target(info.name)
                    if not info.isfile() or target is None:
                        continue
                    member = t.extractfile(info)
                    if member is not None:
                        self._write(member, target, info.name)
        except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise ProfileError(f"{self.path}: not a readable tar archive ({e})") from None

    def _count(self, members: int) -> None:
        self.members = members
        if members > max_members():
            raise ProfileError(
                f"{self.path}: the archive holds more than {max_members():,} members; refusing to unpack it. "
                f"Raise the limit with the environment variable PROFSCOPE_MAX_ARCHIVE_MEMBERS")

    def _target(self, name: str) -> Path | None:
        """Where a member goes in the folder; refuses names leading out of it."""
        clean = name.replace("\\", "/")
        parts = PurePosixPath(clean).parts
        if clean.startswith("/") or re.match(r"[A-Za-z]:", clean) or ".." in parts:
            raise ProfileError(f"{self.path}: member {name!r} leads outside the archive's folder; "
                               "refusing to unpack it")
        parts = tuple(p for p in parts if p not in ("", "."))
        return self.folder.joinpath(*parts) if parts else None

    def _write(self, member, target: Path, name: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            while chunk := member.read(CHUNK):
                self.written += len(chunk)
                if self.written > self.limit:
                    raise inflate_refused(self.path, self.size, "the archive")
                out.write(chunk)
        self.task.report(0.0, f"Unpacking {name}")

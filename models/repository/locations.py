"""Opening what the user names: a path (profile repository, HParams log dir
or both) or a grpc://host:port ProfileAnalysis server."""

from __future__ import annotations

import os
from pathlib import Path

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.remote import SCHEME
from profscope.models.repository.profile_repository import LocalRepository, ProfileRepository


def open_location(path: str | os.PathLike, task: TaskState | None = None):
    """(profile repository or None, HParams data or None) of a path; the
    repository's error when it holds neither."""
    repo = hparams = error = None
    try:
        repo = open_repository(path, task)
    except ProfileError as e:
        error = e
    if not str(path).startswith(SCHEME) and Path(path).is_dir():
        from profscope.models.hparams.experiment import load_hparams  # only for folders (a log dir's sweep)

        try:
            hparams = load_hparams(path, task)
        except ProfileError:
            pass
    if repo is None and hparams is None:
        assert error is not None  # open_repository raised it
        raise error
    return repo, hparams


def open_repository(location: str | os.PathLike, task: TaskState | None = None) -> ProfileRepository:
    """The repository for a path or a grpc://host:port ProfileAnalysis server."""
    if str(location).startswith(SCHEME):
        from profscope.models.remote.client import RemoteRepository  # grpc loads only when a server is named

        return RemoteRepository(str(location), task)
    return LocalRepository(location, task)

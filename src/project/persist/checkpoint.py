"""Write and read array trees as orbax checkpoints whose bytes depend only on the arrays.

orbax's default format (OCDBT) names its data files at random and its checkpoint metadata holds
time stamps, and ``commit_success.txt`` holds the path it was written to; two saves of the same
arrays differ in most files. Here each array is a zarr array under its tree path (no OCDBT), the
metadata's time stamps are set to ``SOURCE_DATE_EPOCH`` (0 when unset), and the commit note
says only that the commit succeeded. Sharded arrays are written shard by shard (each device its
blocks) into the same chunk layout, so the bytes do not depend on the device count either.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

CHECKPOINT_METADATA = "_CHECKPOINT_METADATA"
COMMIT_NOTE = "commit_success.txt"
TIME_STAMPS = ("init_timestamp_nsecs", "commit_timestamp_nsecs")


class _NoOcdbtMergeNote(logging.Filter):
    """Drop orbax's warning that there are no OCDBT files to merge (we write none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Skipping merge of OCDBT" not in record.getMessage()


logging.getLogger("absl").addFilter(_NoOcdbtMergeNote())


def _checkpointer() -> ocp.Checkpointer:
    return ocp.Checkpointer(ocp.StandardCheckpointHandler(use_ocdbt=False))


def write_checkpoint(path: Path, tree: Any) -> None:
    """Save ``tree`` (numpy or JAX arrays, sharded ones too) to ``path`` reproducibly.

    In a multi-process run every process calls it with the same ``path``: each writes the
    shards it holds (orbax coordinates them).
    """
    path = Path(path).absolute()
    checkpointer = _checkpointer()
    try:
        checkpointer.save(path, args=ocp.args.StandardSave(tree))
    finally:
        checkpointer.close()
    if jax.process_index() == 0:  # in a multi-process save, the primary writes the metadata
        _normalise(path)


def read_checkpoint(path: Path, target: Any = None) -> Any:
    """Restore the tree saved at ``path``, onto ``target``'s shapes, dtypes and shardings."""
    path = Path(path).absolute()
    checkpointer = _checkpointer()
    try:
        return checkpointer.restore(path, args=ocp.args.StandardRestore(target))
    finally:
        checkpointer.close()


def build_time_nanoseconds() -> int:
    """Return ``SOURCE_DATE_EPOCH`` in nanoseconds (0 when unset), the products' fixed time."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "0").strip() or "0"
    try:
        return int(value) * 1_000_000_000
    except ValueError:
        return 0


def _normalise(path: Path) -> None:
    """Replace the time stamps and the commit note's path by fixed values."""
    metadata_file = path / CHECKPOINT_METADATA
    if metadata_file.is_file():
        metadata = json.loads(metadata_file.read_text())
        for key in TIME_STAMPS:
            if key in metadata:
                metadata[key] = build_time_nanoseconds()
        metadata_file.write_text(json.dumps(metadata, sort_keys=True))
    note = path / COMMIT_NOTE
    if note.is_file():
        note.write_text("Checkpoint commit was successful.")

"""Read an offline wandb run (``run-<id>.wandb``) back: this wandb ships no reader for its
transaction log, so this decodes its LevelDB-style framing (7-byte file header, 32 KiB blocks,
records split into FULL/FIRST/MIDDLE/LAST chunks with 7-byte headers) into wandb's own protobuf
``Record`` messages."""

from __future__ import annotations

import json
import struct
from pathlib import Path

BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a wandb transaction log"
    pos, parts = HEADER, []
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # the block's tail is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:  # zero padding at the end of a block
            pos += left
            continue
        chunk, pos = data[pos + HEADER : pos + HEADER + length], pos + HEADER + length
        parts.append(chunk)
        if kind in (FULL, LAST):
            r = pb.Record()
            r.ParseFromString(b"".join(parts))
            parts = []
            yield r


def offline_run(run_dir: Path) -> dict:
    """{"run": RunRecord, "summary": {...}, "history": [{...}], "metrics": [MetricRecord], "artifacts": [...]}
    of the single offline wandb run under ``run_dir``."""
    (log,) = Path(run_dir).glob("**/offline-run-*/run-*.wandb")
    out = {"run": None, "summary": {}, "history": [], "metrics": [], "artifacts": []}
    for r in records(log):
        kind = r.WhichOneof("record_type")
        if kind == "run":
            out["run"] = r.run
        elif kind == "summary":
            for item in r.summary.update:
                key = "/".join(item.nested_key) if item.nested_key else item.key
                out["summary"][key] = json.loads(item.value_json)
        elif kind == "history":
            out["history"].append(
                {
                    ("/".join(i.nested_key) if i.nested_key else i.key): json.loads(i.value_json)
                    for i in r.history.item
                }
            )
        elif kind == "metric":
            out["metrics"].append(r.metric)
        elif kind == "artifact":
            out["artifacts"].append(r.artifact)
    return out

"""``normlab-export RUN_DIR --out DIR``: a trained model that loads without normlab's training code.

DIR holds the weights (model.pt, a plain state dict), the model as data (model.json: class,
arguments, norm, where it came from), the vocabulary and preprocessing files its task needs,
example inputs with the checkpoint's outputs on them (example.pt), a loading recipe (README.md),
and, where the model allows it, a ``torch.export`` program (model.pt2) that loads with torch
alone. The program is traced with every norm on its plain-math path, so it holds only aten ops;
it is checked against the checkpoint's outputs before it is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .commands import version_text
from .errors import CheckpointError, ConfigError, DataError
from .exitcodes import BAD_INPUT, CHECKPOINT

FORMAT = "normlab-export/1"
TOLERANCE = 1e-5

RECIPE = """# {task} / {norm}: exported by normlab {version}

From `{run_dir}` ({checkpoint}, step {step}); metric `{metric}`. Files:

{files}

## Load with torch alone (the `torch.export` program)

```python
import torch
model = torch.export.load("{folder}/model.pt2").module()
example = torch.load("{folder}/example.pt", weights_only=True)
print((model(*example["inputs"]) - example["outputs"]).abs().max())
```

{program_note}

## Load as a module (needs `pip install normlab`, not its data, task or training code)

```python
import torch
from normlab.models.spec import load_export
model = load_export("{folder}")            # eval mode; impl="reference" skips the native kernels
example = torch.load("{folder}/example.pt", weights_only=True)
print((model(*example["inputs"]) - example["outputs"]).abs().max())
```

Inputs: {inputs}.
"""


def norm_record(norm: dict) -> dict:
    """The norm config a model is rebuilt from: name and options, and affine and the per-site
    norms where the run set them."""
    out = {"name": norm["name"], "options": norm.get("options") or {}}
    if norm.get("affine") is not None:
        out["affine"] = norm["affine"]
    if norm.get("sites"):
        out["sites"] = norm["sites"]
    return out


def describe(x) -> dict:
    return {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}


def export_program(model, inputs: tuple, outputs, path: Path, max_positions: int = 0) -> dict:
    """Write model.pt2 when torch.export can trace the model and the program reproduces
    ``outputs``; {"file", "dynamic"} or {"error"} for model.json. Token inputs of a model with
    positions get a dynamic length up to ``max_positions``; every input a dynamic batch."""
    import torch

    from .norms import Norm

    for m in model.modules():
        if isinstance(m, Norm):
            m.impl = "reference"
    batch = torch.export.Dim("batch", min=1)

    def dims(i, x):
        if max_positions and x.dim() == 2 and x.dtype == torch.int64:
            return {0: batch, 1: torch.export.Dim(f"length{i}", min=2, max=max_positions)}
        return {0: batch}

    dynamic_dims = tuple(dims(i, x) for i, x in enumerate(inputs))
    errors = []
    for dynamic in (dynamic_dims, None):
        try:
            program = torch.export.export(model, inputs, dynamic_shapes=dynamic)
            got = program.module()(*inputs)
            diff = float((got - outputs).abs().max())
            if diff > TOLERANCE:
                errors.append(f"the program's outputs differ from the checkpoint's by {diff:.3g}")
                continue
            torch.export.save(program, path)
            shapes = (
                ("batch and length" if any(len(d) > 1 for d in dynamic_dims) else "batch")
                if dynamic
                else ("none (" + errors[-1] + "): the example's shapes only")
            )
            return {"file": path.name, "dynamic": shapes, "max_abs_diff": diff}
        except Exception as e:  # torch.export reports what it cannot trace in many exception types
            errors.append(f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
    return {"error": "; ".join(errors)}


def export_run(run_dir: Path, out: Path, which: str = "best", program: bool = True) -> dict:
    import torch

    from . import __version__
    from .files import whole_dir
    from .run.restore import restore
    from .rundir import read_summary

    if out.exists() and any(out.iterdir()):
        raise ConfigError(
            f"--out {out}: not empty; choose a new folder (nothing there is overwritten)"
        )
    r = restore(run_dir, which, device="cpu")
    task, model = r.task, r.model
    try:
        spec = task.model_spec()
    except NotImplementedError as e:
        raise ConfigError(str(e)) from None
    inputs = tuple(task.example_inputs(8))
    with torch.no_grad():
        outputs = model(*inputs)
    # written beside --out and renamed into place: a failed export leaves no partial folder there
    with whole_dir(out) as part:
        torch.save(model.state_dict(), part / "model.pt")
        torch.save({"inputs": inputs, "outputs": outputs}, part / "example.pt")
        files = {
            "model.pt": "the weights: a state dict (torch.load(..., weights_only=True))",
            "model.json": "the model as data: class, arguments, norm, provenance",
            "example.pt": "inputs (the first test examples) and the checkpoint's outputs on them",
            **task.export_files(part),
        }
        summary = read_summary(Path(run_dir) / "summary.json")
        with torch.no_grad():
            prog = (
                export_program(
                    model,
                    inputs,
                    outputs,
                    part / "model.pt2",
                    spec["kwargs"].get("max_positions", 0),
                )
                if program
                else {"error": "--no-program"}
            )
        if "file" in prog:
            files["model.pt2"] = "the torch.export program (loads with torch alone)"
        meta = {
            "format": FORMAT,
            "task": r.job.task.name,
            "metric": task.metric,
            "model": spec,
            "norm": norm_record(r.job.config["norm"]),
            "inputs": [describe(x) for x in inputs],
            "outputs": describe(outputs),
            "files": files,
            "program": prog,
            "source": {
                "run_dir": str(Path(run_dir).resolve()),
                "checkpoint": r.checkpoint.name,
                "step": r.step,
                "seed": r.job.seed,
                "git_commit": summary.get("git_commit"),
                "git_dirty": summary.get("git_dirty"),
                "test": summary.get("test") or {},
            },
            "versions": {"normlab": __version__, "torch": torch.__version__},
        }
        (part / "model.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
        note = (
            f"Shapes: {prog['dynamic']} dynamic."
            if "file" in prog
            else f"**No program for this model**: {prog['error']}. Use the module route below."
        )
        (part / "README.md").write_text(
            RECIPE.format(
                task=r.job.task.name,
                norm=r.job.norm.name,
                version=__version__,
                run_dir=run_dir,
                checkpoint=r.checkpoint.name,
                step=r.step,
                metric=task.metric,
                files="\n".join(f"- `{k}`: {v}" for k, v in files.items()),
                folder=out,
                program_note=note,
                inputs=", ".join(f"{tuple(d['shape'])} {d['dtype']}" for d in meta["inputs"]),
            )
        )
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="normlab-export",
        description="Write a trained run's model to a folder that loads without normlab's training code: "
        "weights, model config, vocabularies, a loading recipe and a torch.export program.",
        epilog="exit codes: 0 written, 2 bad input (run directory, folder, checkpoint missing), "
        "5 an unreadable checkpoint",
    )
    p.add_argument("run_dir", type=Path, help="a run directory with checkpoints/")
    p.add_argument("--out", type=Path, required=True, help="a new (or empty) folder")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a .pt file")
    p.add_argument("--no-program", action="store_true", help="skip the torch.export program")
    p.add_argument("--version", action="version", version=version_text())
    args = p.parse_args(argv)
    try:
        meta = export_run(args.run_dir, args.out, args.checkpoint, program=not args.no_program)
    except (ConfigError, DataError) as e:
        print(f"normlab-export: error: {e}", file=sys.stderr)
        return BAD_INPUT
    except CheckpointError as e:
        print(f"normlab-export: error: {e}", file=sys.stderr)
        return CHECKPOINT
    prog = meta["program"]
    print(
        f"[normlab-export] {meta['task']}/{meta['norm']['name']} step {meta['source']['step']} -> {args.out}: "
        f"{', '.join(meta['files'])}"
        + ("" if "file" in prog else f"; no torch.export program ({prog['error']})")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Where fairseq's transformer and normlab's differ at initialization, for the recipe that
scripts/compare_fairseq.py trains: parameter counts, the init scale of each kind of weight, and
which sinusoidal row a token's position gets. Runs in .venv-fairseq (which has normlab too), after
compare_fairseq.py wrote its data-bin and JSON:

    .venv-fairseq/bin/python scripts/fairseq_init_diff.py runs/compare_fairseq/mini runs/compare_fairseq/mini.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
KINDS = [
    "encoder.layers.0.self_attn.q_proj.weight",
    "encoder.layers.0.self_attn.q_proj.bias",
    "encoder.layers.0.self_attn.out_proj.weight",
    "encoder.layers.0.self_attn.out_proj.bias",
    "encoder.layers.0.fc1.weight",
    "encoder.layers.0.fc1.bias",
    "encoder.layers.0.fc2.weight",
]


def fairseq_model(data_bin: Path, flags: list[str], seed: int):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.utils import import_user_module

    args = options.parse_args_and_arch(
        options.get_training_parser(), [str(data_bin), *flags, "--seed", str(seed)]
    )
    import_user_module(args)
    cfg = convert_namespace_to_omegaconf(args)
    torch.manual_seed(seed)
    return tasks.setup_task(cfg.task).build_model(cfg.model)


def normlab_model(res: dict, work: Path, data_dir: Path, seed: int):
    import fairseq_recipe as cmp

    from normlab.norms import norm_factory
    from normlab.tasks import get_task_class

    overrides = [*cmp.RECIPES[res["recipe"]][0], f"norm={res['norm']}"]
    # after fairseq's model: fairseq's own hydra setup refuses to run once version_base 1.3 is set
    cfg = cmp.compose(overrides, data_dir, work / "cache")
    task = get_task_class(cmp.TASK)(cfg.task, data_dir / cmp.TASK, work / "cache")
    task.setup()
    torch.manual_seed(seed)
    return task.build_model(norm_factory(cfg.norm.name, **(cfg.norm.get("options") or {})))


def main(argv=None) -> int:
    work, res_path = Path(argv[0] if argv else sys.argv[1]), Path(argv[1] if argv else sys.argv[2])
    res = json.loads(res_path.read_text())
    data_dir = Path(res.get("data_dir") or "/work/shared/data")
    fm = fairseq_model(work / "data-bin", res["fairseq_flags"], 1)
    nm = normlab_model(res, work, data_dir, 1)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    print(f"parameters: fairseq {count(fm):,}, normlab {count(nm):,}")
    fp, np_ = dict(fm.named_parameters()), dict(nm.named_parameters())
    print("| parameter | fairseq std / max abs | normlab std / max abs |\n|---|---|---|")
    for k in KINDS:
        f, n = fp[k].detach(), np_[k].detach()
        print(
            f"| {k.removeprefix('encoder.layers.0.')} | {f.std():.4f} / {f.abs().max():.4f} | "
            f"{n.std():.4f} / {n.abs().max():.4f} |"
        )
    rows = fm.encoder.embed_positions(torch.tensor([[5, 6, 7]]))[0]
    table = nm.src_embed.positions
    match = [
        next((j for j in range(8) if torch.allclose(rows[i], table[j], atol=1e-5)), None)
        for i in range(3)
    ]
    print(f"sinusoidal row used for source positions 0, 1, 2: fairseq {match}, normlab [0, 1, 2]")
    print(
        f"token embedding scale: fairseq {fm.encoder.embed_scale:.4f}, normlab {nm.src_embed.scale:.4f}; "
        f"embedding norm: fairseq {fm.encoder.layernorm_embedding}, normlab none"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

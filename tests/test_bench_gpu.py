"""scripts/bench_gpu.py --quick runs end to end on CPU (a GPU run is the same code at paper shapes)."""

import math
import re
import sys

from helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))


def test_bench_gpu_quick_writes_every_table(tmp_path):
    import bench_gpu

    out = tmp_path / "gpu.md"
    report = bench_gpu.main(
        [
            "--quick",
            "--device",
            "cpu",
            "--norms",
            "layernorm,adanorm",
            "--compile-norms",
            "",
            "--out",
            str(out),
        ]
    )
    assert out.read_text() == report
    for section in (
        "## iwslt14_de_en: loop vs bare step",
        "## enwik8: loop vs bare step",
        "## Norm layers",
    ):
        assert section in report
    loop_rows = re.findall(r"^\| `(\w+)` \| (fp32|bf16) \| ([\d.]+) \| ([\d.]+) \|", report, re.M)
    assert len(loop_rows) == 8  # 2 models x 2 norms x 2 precisions
    assert all(float(a) > 0 and float(b) > 0 for *_, a, b in loop_rows)
    table = report.split("## Norm layers")[1]
    ratios = re.findall(r"^\| `([\w.]+)` \| ([\d.]+) \| ([\d.]+) \|", table, re.M)
    assert [r[0] for r in ratios] == ["torch.nn.LayerNorm", *bench_gpu.NORMS]
    assert ratios[0][1:] == ("1.00", "1.00") and all(
        math.isfinite(float(v)) and float(v) > 0 for r in ratios for v in r[1:]
    )
    assert "GPU-hours" in report

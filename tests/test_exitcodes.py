"""One table of exit codes: the codes the commands use, --help and docs/exit-codes.md agree."""

import re
import subprocess
import sys

from helpers import REPO
from normlab import exitcodes


def test_the_docs_page_is_the_table_the_code_uses():
    page = (REPO / "docs" / "exit-codes.md").read_text()
    block = re.search(
        r"<!-- exit-codes:begin[^>]*-->\n(.*)<!-- exit-codes:end -->", page, re.S
    ).group(1)
    assert block == exitcodes.markdown()
    assert [c for c, _ in exitcodes.TABLE] == [0, 1, 2, 3, 4, 5, 75, 130]


def test_help_of_both_commands_prints_every_code():
    for cmd in (["normlab.train", "--help"], ["normlab.tune", "--help"]):
        out = subprocess.run(
            [sys.executable, "-m", *cmd], cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
        codes = re.findall(r"^  (\d+) +", out.stdout.split("exit codes:")[1], re.M)
        assert [int(c) for c in codes] == [c for c, _ in exitcodes.TABLE]

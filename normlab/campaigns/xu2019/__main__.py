"""``python -m normlab.campaigns.xu2019 --study fixed|prenorm|placement|tuned ...``: the study driver."""

import sys

from .driver import main

sys.exit(main())

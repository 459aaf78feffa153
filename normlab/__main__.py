"""``python -m normlab``: the commands and the versions."""

import sys

from .commands import main

sys.exit(main())

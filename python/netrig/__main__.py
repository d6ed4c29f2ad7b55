"""`python -m netrig`."""

import sys

from netrig.cli import main

sys.exit(main())

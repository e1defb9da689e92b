"""`python -m service COMMAND`: see service.cli."""

import sys

from service.cli import main

sys.exit(main())

import sys

from toolwatch.cli import main

sys.exit(main())

import sys

from taco.cli import main

sys.exit(main())

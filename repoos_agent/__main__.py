import sys

from repoos_agent.cli import main

sys.exit(main())

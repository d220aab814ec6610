import sys

from repoos_agent.mcp.command import main

if __name__ == "__main__":
    sys.exit(main())

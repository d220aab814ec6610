"""The agent: schedule search driven by a model (or the heuristic), with the engine as its judge."""

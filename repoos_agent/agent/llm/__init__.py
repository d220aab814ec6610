"""Language-model backends: one interface, the offline heuristic, and the providers' clients."""

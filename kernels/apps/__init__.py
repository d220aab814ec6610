"""Applications the engine's tracks beyond loops read: web endpoints over a database."""

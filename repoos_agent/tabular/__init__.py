"""The tabular track: ORM endpoints compiled to a verified fast path against a real database.

`chain` reads an endpoint's ORM query from its source; `compiled` builds that query with
SQLAlchemy's own compiler for the live dialect; `fast_path` runs it on the session's own
connection without building ORM objects; `readers` refuses an endpoint whose routes' response
models read what those rows lack; `verify` proves the two equal on the live database and
guards the swap (schema, pending writes, source); `server` starts a throwaway MariaDB for tests,
benchmarks and demos."""

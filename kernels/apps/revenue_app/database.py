"""The engine and the per-request session, from `REVENUE_DB_URL` (e.g. `mysql+pymysql://user:pw@host/db`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

engine = create_engine(os.environ.get("REVENUE_DB_URL", "mysql+pymysql://revenue@127.0.0.1/revenue"), pool_pre_ping=True)
SessionLocal = sessionmaker(bind=engine)


def get_db() -> Iterator[Session]:
    db = SessionLocal()
    try:
        yield db
    finally:
        db.close()

"""Fill the revenue tables with `rows` generated lines (seeded): NULLs, decimals, dates and Unicode included.

Run: `REVENUE_DB_URL=... python -m kernels.apps.revenue_app.fill 10000`."""

from __future__ import annotations

import datetime
import decimal
import random
import sys

from sqlalchemy import insert
from sqlalchemy.orm import Session

from kernels.apps.revenue_app import models

REGIONS = ("north", "south", "east", "west", "Zürich", "東京")
CUSTOMERS = ("Acme", "Globex", "Initech", "Umbrella", "Soylent", "Ōkami KK", "Müller & Söhne", "O'Brien", 'say "hi"')


def fill(session: Session, rows: int, seed: int = 0) -> None:
    """Create the tables (dropping old ones) and insert `rows` revenue lines."""
    engine = session.get_bind()
    models.Base.metadata.drop_all(engine)
    models.Base.metadata.create_all(engine)
    rng = random.Random(seed)
    session.execute(insert(models.Region), [{"id": i + 1, "name": name} for i, name in enumerate(REGIONS)])
    lines = []
    for i in range(rows):
        revenue = decimal.Decimal(rng.randint(0, 10_000_000)) / 100
        cancelled = None if rng.random() < 0.2 else decimal.Decimal(rng.randint(0, 5_000)) / 100
        lines.append(
            {
                "id": i + 1,
                "region_id": rng.randint(1, len(REGIONS)),
                "customer": f"{rng.choice(CUSTOMERS)} {rng.randint(1, 999)}",
                "booked_on": datetime.date(2018, 1, 1) + datetime.timedelta(days=rng.randint(0, 3000)),
                "revenue": revenue,
                "cancelled_revenue": cancelled,
                "note": None if rng.random() < 0.5 else rng.choice(("", "renewal", "ünïcödé ✓", "a\tb")),
            }
        )
    for start in range(0, len(lines), 5000):
        session.execute(insert(models.RevenueDetails), lines[start : start + 5000])
    session.commit()


if __name__ == "__main__":
    from kernels.apps.revenue_app.database import SessionLocal

    with SessionLocal() as db:
        fill(db, int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)

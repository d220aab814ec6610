"""The revenue app's tables: regions, and revenue lines booked in them."""

from __future__ import annotations

import datetime
import decimal

from sqlalchemy import Date, ForeignKey, Numeric, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Region(Base):
    __tablename__ = "regions"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    lines: Mapped[list[RevenueDetails]] = relationship(back_populates="region")


class RevenueDetails(Base):
    __tablename__ = "revenue_details"

    id: Mapped[int] = mapped_column(primary_key=True)
    region_id: Mapped[int] = mapped_column(ForeignKey("regions.id"))
    customer: Mapped[str] = mapped_column(String(120))
    booked_on: Mapped[datetime.date] = mapped_column(Date)
    revenue: Mapped[decimal.Decimal] = mapped_column(Numeric(12, 2), index=True)  # the top endpoint orders by it
    cancelled_revenue: Mapped[decimal.Decimal | None] = mapped_column(Numeric(12, 2), nullable=True, index=True)  # filtered on
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    region: Mapped[Region] = relationship(back_populates="lines")

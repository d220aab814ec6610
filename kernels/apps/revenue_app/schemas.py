"""What the endpoints return, as FastAPI serializes it."""

from __future__ import annotations

import datetime
import decimal

from pydantic import BaseModel, ConfigDict


class RevenueOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    customer: str
    booked_on: datetime.date
    revenue: decimal.Decimal
    cancelled_revenue: decimal.Decimal | None
    note: str | None


class RegionRevenue(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    revenue: decimal.Decimal


class RegionTotal(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    total: decimal.Decimal

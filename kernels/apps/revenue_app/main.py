"""The revenue endpoints: filter and return all; filter, order and limit; a join with a projection; totals by group."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI
from sqlalchemy import func
from sqlalchemy.orm import Session

from kernels.apps.revenue_app import models
from kernels.apps.revenue_app.database import get_db
from kernels.apps.revenue_app.schemas import RegionRevenue, RegionTotal, RevenueOut

app = FastAPI(title="revenue")
Database = Annotated[Session, Depends(get_db)]


@app.get("/revenue", response_model=list[RevenueOut])
def get_revenue(db: Database, min_cancelled: float = 20):
    return db.query(models.RevenueDetails).filter(models.RevenueDetails.cancelled_revenue > min_cancelled).all()


@app.get("/revenue/top", response_model=list[RevenueOut])
def top_revenue(db: Database, limit: int = 10, since: str = "2020-01-01"):
    return (
        db.query(models.RevenueDetails)
        .filter(models.RevenueDetails.booked_on >= since)
        .order_by(models.RevenueDetails.revenue.desc(), models.RevenueDetails.id)
        .limit(limit)
        .all()
    )


@app.get("/revenue/by-region", response_model=list[RegionRevenue])
def revenue_by_region(db: Database, region: str = "north"):
    return (
        db.query(models.RevenueDetails.id, models.Region.name, models.RevenueDetails.revenue)
        .join(models.Region)
        .filter(models.Region.name == region)
        .order_by(models.RevenueDetails.id)
        .all()
    )


@app.get("/revenue/totals", response_model=list[RegionTotal])
def totals_by_region(db: Database):
    return (
        db.query(models.Region.name, func.sum(models.RevenueDetails.revenue).label("total"))
        .join(models.Region)
        .group_by(models.Region.name)
        .order_by(models.Region.name)
        .all()
    )

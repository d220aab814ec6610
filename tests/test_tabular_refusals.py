"""Endpoints whose response reads what the fast path's rows lack are refused before verification, on a real MariaDB."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from repoos_agent.tabular.chain import TabularRefusal, read_chain
from repoos_agent.tabular.compiled import build_statement, compile_query
from repoos_agent.tabular.readers import check_response_readers
from repoos_agent.tabular.verify import TabularContract, verify_endpoint

SHOP = '''
"""A shop app of its own: orders in shops, response models that read more than the query selects."""

from __future__ import annotations

import decimal
from typing import Annotated, Optional

from fastapi import APIRouter, Depends, FastAPI
from pydantic import BaseModel, ConfigDict, model_validator
from sqlalchemy import ForeignKey, Numeric, String, Text
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Shop(Base):
    __tablename__ = "refusal_shops"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    orders: Mapped[list[Order]] = relationship(back_populates="shop")


class Order(Base):
    __tablename__ = "refusal_orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    shop_id: Mapped[int] = mapped_column(ForeignKey("refusal_shops.id"))
    amount: Mapped[decimal.Decimal] = mapped_column(Numeric(10, 2))
    customer: Mapped[str] = mapped_column(String(40))
    shop: Mapped[Shop] = relationship(back_populates="orders")

    @hybrid_property
    def doubled(self) -> decimal.Decimal:
        return self.amount * 2

    @property
    def label(self) -> str:
        return f"#{self.id}"


class Invoice(Base):
    __tablename__ = "refusal_invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(Text, deferred=True)


class Receipt(Base):
    __tablename__ = "refusal_receipts"
    id: Mapped[int] = mapped_column(primary_key=True)
    payer: Mapped[str] = mapped_column("payer_name", String(40))


class Delivery(Base):
    __tablename__ = "refusal_deliveries"
    id: Mapped[int] = mapped_column(primary_key=True)
    shop_id: Mapped[int] = mapped_column(ForeignKey("refusal_shops.id"))
    shop: Mapped[Shop] = relationship(lazy="joined")


class ShopOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    name: str


class OrderOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    amount: decimal.Decimal
    customer: str


class OrderWithShop(OrderOut):
    shop: ShopOut


class OrderDoubled(OrderOut):
    doubled: decimal.Decimal


class OrderLabelled(OrderOut):
    label: str


class OrderChecked(OrderOut):
    @model_validator(mode="before")
    @classmethod
    def peek(cls, row: object) -> object:
        return row


class IdOnly(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int


def get_db():
    raise NotImplementedError("the tests pass their own session")


Database = Annotated[Session, Depends(get_db)]
app = FastAPI()
router = APIRouter()


@app.get("/orders", response_model=list[OrderOut])
def orders(db: Database, above: float = 0):
    return db.query(Order).filter(Order.amount > above).order_by(Order.id).all()


@app.get("/orders/with-shop", response_model=list[OrderWithShop])
def orders_with_shop(db: Database):
    return db.query(Order).all()


@app.get("/orders/doubled", response_model=list[OrderDoubled])
def orders_doubled(db: Database):
    return db.query(Order).all()


@app.get("/orders/labelled")
def orders_labelled(db: Database) -> list[OrderLabelled]:
    return db.query(Order).all()


@app.get("/orders/customers", response_model=list[OrderOut])
def order_amounts(db: Database):
    return db.query(Order.id, Order.amount).all()


@app.get("/orders/raw")
def orders_raw(db: Database):
    return db.query(Order).all()


@app.get("/orders/checked", response_model=list[OrderChecked])
def orders_checked(db: Database):
    return db.query(Order).all()


@router.get("/orders/routed", response_model=Optional[list[Optional[OrderWithShop]]])
def orders_routed(db: Database):
    return db.query(Order).all()


@app.get("/invoices", response_model=list[IdOnly])
def invoices(db: Database):
    return db.query(Invoice).all()


@app.get("/receipts", response_model=list[IdOnly])
def receipts(db: Database):
    return db.query(Receipt).all()


@app.get("/deliveries", response_model=list[IdOnly])
def deliveries(db: Database):
    return db.query(Delivery).all()


app.include_router(router)
'''


@pytest.fixture(scope="module")
def shop(server, tmp_path_factory):
    """The shop module, imported from its own file, and an engine on the test server with its tables filled."""
    path = tmp_path_factory.mktemp("shop") / "shop_app.py"
    path.write_text(textwrap.dedent(SHOP).lstrip())
    spec = importlib.util.spec_from_file_location("shop_app", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["shop_app"] = module
    spec.loader.exec_module(module)
    engine = create_engine(server.url())
    module.Base.metadata.drop_all(engine)
    module.Base.metadata.create_all(engine)
    with Session(engine) as db:
        db.add_all([module.Shop(id=1, name="Zürich"), module.Shop(id=2, name="north")])
        db.add_all([module.Order(id=i, shop_id=1 + i % 2, amount=i * 1.5, customer=f"c{i}") for i in range(1, 6)])
        db.commit()
    yield module, path, engine
    module.Base.metadata.drop_all(engine)
    engine.dispose()
    del sys.modules["shop_app"]


def _verify(shop, name: str, values: dict | None = None):
    module, path, engine = shop
    with Session(engine) as db:
        return verify_endpoint(getattr(module, name), read_chain(path, name), db, values or {})


def test_a_response_that_reads_only_the_query_columns_is_verified(shop):
    contract = _verify(shop, "orders", {"above": 2})
    assert isinstance(contract, TabularContract) and contract.rows_compared == 4


def test_a_response_model_reading_a_relationship_is_refused(shop):
    line = shop[1].read_text().splitlines().index("def orders_with_shop(db: Database):") + 1
    with pytest.raises(TabularRefusal) as refusal:
        _verify(shop, "orders_with_shop")
    assert str(refusal.value) == (
        f"{shop[1]}:{line}: `orders_with_shop` (GET /orders/with-shop): `OrderWithShop.shop` reads `Order.shop`, "
        "a relationship: serializing it would lazy-load it; the fast path's rows carry only id, shop_id, amount, customer"
    )


def test_a_response_model_reading_a_column_not_selected_is_refused(shop):
    with pytest.raises(TabularRefusal, match=r"shop_app.py:\d+: `order_amounts` \(GET /orders/customers\): ") as refusal:
        _verify(shop, "order_amounts")
    assert "`OrderOut.customer` reads `Order.customer`, a column the query does not select" in str(refusal.value)
    assert str(refusal.value).endswith("the fast path's rows carry only id, amount")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("orders_doubled", "`OrderDoubled.doubled` reads `Order.doubled`, a hybrid property, computed on the mapped object"),
        ("orders_labelled", "`OrderLabelled.label` reads `Order.label`, a @property, computed on the mapped object"),
        ("orders_routed", "(GET /orders/routed): `OrderWithShop.shop` reads `Order.shop`, a relationship"),
        ("orders_raw", "has no response model: FastAPI would encode `Order` objects as JSON objects"),
        ("orders_checked", "`OrderChecked.peek` validates the row itself (mode='before'): what it reads is not known"),
        ("invoices", "`Invoice.body` is deferred: the ORM loads it on access"),
        ("receipts", "`Receipt.payer` is mapped to column `payer_name`: the fast path's rows would name it `payer_name`"),
        ("deliveries", '`Delivery.shop` loads with lazy="joined": the ORM adds its columns to the SQL'),
    ],
)
def test_what_the_fast_path_would_serve_differently_is_refused(shop, name, fragment):
    with pytest.raises(TabularRefusal, match=r"shop_app.py:\d+: ") as refusal:
        _verify(shop, name)
    assert fragment in str(refusal.value)


@pytest.mark.parametrize(
    ("name", "path"),
    [("get_revenue", "/revenue"), ("top_revenue", "/revenue/top"), ("revenue_by_region", "/revenue/by-region"),
     ("totals_by_region", "/revenue/totals")],
)  # fmt: skip
def test_the_bundled_endpoints_routes_are_found_and_pass(app, name, path):
    main, database = app
    chain = read_chain("kernels/apps/revenue_app/main.py", name)
    with database.SessionLocal() as db:
        statement = build_statement(chain, getattr(main, name), db)
        keys = compile_query(chain, getattr(main, name), db).keys
        assert check_response_readers(getattr(main, name), chain, statement, keys) == (path,)


def test_a_response_model_edited_after_verification_keeps_the_orm_at_install(shop, tmp_path):
    from repoos_agent.store import Batch, SQLiteStore
    from repoos_agent.tabular.optimize import record_of
    from repoos_agent.tabular.result import TabularResult
    from repoos_agent.tabular.swap import install
    from repoos_agent.tabular.verify import TabularFallbackWarning

    module, path, _ = shop
    graph = tmp_path / "graph.sqlite"
    store = SQLiteStore(graph)
    store.write(Batch((record_of(TabularResult(_verify(shop, "orders", {"above": 2}), 1.0, 0.5, "test"), str(path)),), ()))
    store.close()
    route = next(r for r in module.app.routes if getattr(r, "path", "") == "/orders")
    verified_model, original = route.response_model, route.dependant.call
    try:
        route.response_model = list[module.OrderWithShop]  # as if the schema were edited since
        with pytest.warns(TabularFallbackWarning, match=r"/orders keeps its ORM query: .*`OrderWithShop.shop` reads"):
            assert install(module.app, str(graph)) == []
        assert route.dependant.call is original
        route.response_model = verified_model
        assert install(module.app, str(graph)) == ["/orders"]
    finally:
        route.response_model, route.dependant.call = verified_model, original

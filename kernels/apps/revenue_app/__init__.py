"""A FastAPI back end over SQLAlchemy 2.x models: the seed's revenue endpoint and three of its shape."""

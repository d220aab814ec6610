"""Functions the engine must refuse to model, each for a reason it names."""


def bucket(values, out):
    """A subscript computed from data by arithmetic: which element is written depends on a value."""
    n = values.shape[0]
    for i in range(n):
        out[values[i] // 10] += 1


def until_converged(x, tolerance):
    """A `while` loop: the trip count depends on data."""
    error = 1.0
    while error > tolerance:
        error = error / 2.0
        x[0] = x[0] + error


def first_negative(n, v, out):
    """`break` leaves the loop early: the set of executed iterations is not static."""
    for i in range(n):
        if v[i] < 0.0:
            break
        out[i] = v[i]


def run_length_decode(data, out):
    """A decoder: a cursor that data moves, and a branch on every byte."""
    i = 0
    j = 0
    while i < data.shape[0]:
        if data[i] == 0:
            break
        elif data[i] > 128:
            count = data[i] - 128
            for k in range(count):
                out[j + k] = data[i + 1]
            j += count
            i += 2
        else:
            out[j] = data[i]
            j += 1
            i += 1


def adults(session, User):
    """ORM code: a database query, not a loop nest."""
    return session.query(User).filter(User.age >= 18).order_by(User.name).all()

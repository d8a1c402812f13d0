"""The graph both Python suites run: x [rows, cols] -> softmax -> y -> row sums -> s."""

import gridflow as gf


def softmax_sums(rows, cols, x=None, seed=7, name="py"):
    """x holds the numpy array `x` when given, else seeded uniform values in [-4, 4)."""
    g = gf.Graph(name)
    g.add_buffer("x", "f32", [rows, cols], x if x is not None else gf.Uniform(-4, 4, seed))
    g.add_buffer("y", "f32", [rows, cols])
    g.add_buffer("s", "f32", [rows])
    g.softmax("soft", "x", "y")
    g.reduce("sums", "y", "s", fn="sum", axis="row")
    return g

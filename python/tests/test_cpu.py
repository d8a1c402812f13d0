"""The Python package on the CPU backend (CI): the graph API, sessions and their options, numpy data bound without
copies, errors carrying the C++ messages, traces, reports, profiles."""

from pathlib import Path

import numpy as np
import pytest

import gridflow as gf
import graphs

REPO = Path(__file__).resolve().parents[2]
ROWS, COLS = 24, 200


def softmax_sums(x=None):
    return graphs.softmax_sums(ROWS, COLS, x)


def fresh(seed, shape=(ROWS, COLS)):
    return np.random.default_rng(seed).uniform(-3, 3, size=shape).astype(np.float32)


def plain_results(x, **kw):
    s = gf.Session(softmax_sums(x), backend="cpu", workers=3, **kw)
    s.run()
    assert s.check().passed, s.check().summary
    return s.results()


def test_graph_runs_checks_and_returns_numpy_arrays():
    s = gf.Session(softmax_sums(), backend="cpu", workers=3)
    r = s.run()
    assert r.elapsed_ms > 0 and r.blocks == 3
    report = s.check()
    assert report and report.passed and "check passed" in report.summary
    out = s.results()
    assert set(out) == {"x", "y", "s"}
    assert out["y"].shape == (ROWS, COLS) and out["y"].dtype == np.float32
    np.testing.assert_allclose(out["s"], np.ones(ROWS), rtol=1e-5)
    x = out["x"].astype(np.float64)
    expect = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out["y"], expect / expect.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("schedule", ["dynamic", "static", "auto"])
def test_every_sync_mode_gives_the_same_bits(schedule):
    x = fresh(1)
    first = None
    for mode in ["grid-sync", "barrier", "flags", "sentinel"]:
        out = plain_results(x, mode=mode, schedule=schedule)
        if first is None:
            first = out
        for name in first:
            assert np.array_equal(first[name].view(np.uint32), out[name].view(np.uint32)), (mode, name)


def test_every_op_and_option_is_reachable():
    g = gf.Graph("ops")
    g.add_buffer("v", "f32", [4096], gf.Uniform(-1, 1, 3))
    g.add_buffer("k", "i32", [4096], gf.Uniform(0, 15, 4))
    g.add_buffer("io", "f32", [16], gf.Iota(1, 2))
    g.add_buffer("c", "f32", [8], gf.Constant(0.5))
    for name, shape, dtype in [("sum", [1], "f32"), ("pre", [4096], "f32"), ("hist", [16], "i32"),
                               ("offs", [16], "i32"), ("placed", [4096], "i32"), ("sel", [4096], "f32"),
                               ("count", [1], "i32"), ("lsm", [4, 4], "f32"), ("max8", [1], "f32")]:
        g.add_buffer(name, dtype, shape)
    g.reduce("r", "v", "sum", fn="sum")
    g.scan("sc", "v", "pre", fn="sum", exclusive=True)
    g.histogram("h", "k", "hist")
    g.scan("o", "hist", "offs", fn="sum", exclusive=True)
    g.scatter("p", "k", "offs", "placed")
    g.select("se", "v", "sel", "count", cmp="gt", threshold=0.0)
    g.softmax("ls", gf.View("io", rows=4, cols=4), "lsm", log=True)
    g.reduce("m", gf.View("c", offset=0, length=8), "max8", fn="max", after=["ls"])
    s = gf.Session(g, backend="cpu", workers=2, mode="sentinel", schedule="dynamic", timeout=5.0, trace=True)
    s.run()
    assert s.check().passed, s.check().details
    out = s.results()
    assert out["hist"].sum() == 4096 and out["count"][0] == int((out["v"] > 0).sum())
    assert out["max8"][0] == 0.5
    assert sorted(g.task_names) == sorted(["r", "sc", "h", "o", "p", "se", "ls", "m"])


def test_map_matches_numpy_and_refuses_bad_constants():
    x = fresh(11, (4096,))
    g = gf.Graph("maps")
    g.add_buffer("x", "f32", [4096], x)
    for name in ("relu", "tanh", "clamp"):
        g.add_buffer(name, "f32", [4096])
    g.map("relu", "x", "relu", fn="relu", scale=2.0, shift=-0.5)
    g.map("tanh", "x", "tanh", fn="tanh")
    g.map("clamp", "x", "clamp", fn="clamp", lo=-1.0, hi=0.5)
    s = gf.Session(g, backend="cpu", workers=2, mode="flags")
    s.run()
    assert s.check().passed, s.check().details
    out = s.results()
    np.testing.assert_allclose(out["relu"], np.maximum(2.0 * x.astype(np.float64) - 0.5, 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out["tanh"], np.tanh(x), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out["clamp"], np.clip(x, -1.0, 0.5))
    bad = gf.Graph("bad")
    bad.add_buffer("x", "f32", [8], gf.Uniform(-1, 1, 1))
    bad.add_buffer("y", "f32", [8])
    bad.map("m", "x", "y", fn="clamp", lo=1.0, hi=0.0)
    with pytest.raises(gf.GraphError, match="task 'm'.*lo.*must not exceed hi"):
        bad.validate()


def test_json_round_trip_and_example_graphs(tmp_path):
    g = softmax_sums()
    g.save(str(tmp_path / "g.json"))
    assert gf.load_graph(str(tmp_path / "g.json")).to_json() == g.to_json()
    again = gf.graph_from_json(g.to_json())
    a, b = gf.Session(g, backend="cpu"), gf.Session(again, backend="cpu")
    a.run()
    b.run()
    assert np.array_equal(a.results()["y"], b.results()["y"])
    example = gf.load_graph(str(REPO / "examples" / "graphs" / "attention_rows.json"))
    s = gf.Session(example, backend="cpu", input_dir=str(REPO / "examples" / "graphs"))
    s.run()
    assert s.check().passed


def test_bad_input_raises_graph_error_with_the_cpp_message():
    g = softmax_sums()
    g.reduce("bad", gf.View("y", offset=ROWS * COLS - 1, length=2), "s", fn="sum")
    with pytest.raises(gf.GraphError, match="task 'bad'"):
        g.validate()
    with pytest.raises(gf.GraphError, match="task 'bad'"):
        gf.Session(g, backend="cpu")
    assert issubclass(gf.GraphError, ValueError)
    with pytest.raises(ValueError, match="mode = 'fast'"):
        gf.Session(softmax_sums(), mode="fast")
    with pytest.raises(TypeError, match="unknown option 'speed'"):
        gf.Session(softmax_sums(), speed=1)
    with pytest.raises(gf.GraphError, match="tasks\\[0\\]"):
        gf.graph_from_json('{"gridflow": 1, "buffers": [], "tasks": [{"nme": "x"}]}')
    with pytest.raises(gf.GraphError, match="buffer 'x'"):
        softmax_sums(np.zeros((ROWS, COLS + 1), np.float32)).validate()


def test_bound_numpy_arrays_run_in_place_without_copies():
    x = fresh(2)
    expect = plain_results(x)
    bx, by, bs = x.copy(), np.full((ROWS, COLS), 7.0, np.float32), np.zeros(ROWS, np.float32)
    s = gf.Session(softmax_sums(), backend="cpu", workers=3)
    for name, a in [("x", bx), ("y", by), ("s", bs)]:
        s.bind(name, a)
        assert s.is_bound(name)
    for _ in range(2):
        s.run_async()
        s.wait()
        assert np.array_equal(bx, x)
        assert np.array_equal(by.view(np.uint32), expect["y"].view(np.uint32))
        assert np.array_equal(bs.view(np.uint32), expect["s"].view(np.uint32))
    assert np.array_equal(s.download("s"), bs)


def test_strided_rows_are_staged_and_padding_is_untouched():
    x = fresh(3)
    expect = plain_results(x)
    wide = np.full((ROWS, COLS + 9), 5.0, np.float32)
    wide[:, :COLS] = x
    out = np.full((ROWS, COLS + 3), -1.0, np.float32)
    s = gf.Session(softmax_sums(), backend="cpu", workers=2)
    s.bind("x", wide[:, :COLS])
    s.bind("y", out[:, :COLS])
    s.run_async()
    s.wait()
    assert np.array_equal(out[:, :COLS], expect["y"]) and np.all(out[:, COLS:] == -1.0)
    assert np.all(wide[:, COLS:] == 5.0)


def test_bind_refuses_a_mismatch_naming_the_buffer_and_field():
    s = gf.Session(softmax_sums(), backend="cpu")
    with pytest.raises(gf.GraphError, match="buffer 'x': bind.dtype"):
        s.bind("x", np.zeros((ROWS, COLS), np.float64))
    with pytest.raises(gf.GraphError, match="buffer 'x': bind.shape = \\[24, 201\\]"):
        s.bind("x", np.zeros((ROWS, COLS + 1), np.float32))
    with pytest.raises(gf.GraphError, match="buffer 'x': bind.strides"):
        s.bind("x", np.zeros((ROWS, 2 * COLS), np.float32)[:, ::2])
    row = np.zeros((1, COLS), np.float32)
    broadcast = np.lib.stride_tricks.as_strided(row, shape=(ROWS, COLS), strides=(0, 4), writeable=True)
    with pytest.raises(gf.GraphError, match="buffer 'x': bind.strides = 0: rows must be at least 200 elements apart"):
        s.bind("x", broadcast)  # one row's memory seen as 24: binding it would reach past it
    with pytest.raises(gf.GraphError, match="buffer 'nope'"):
        s.bind("nope", np.zeros(3, np.float32))
    assert not s.is_bound("x")


def test_one_run_in_flight_and_upload_download():
    s = gf.Session(softmax_sums(), backend="cpu")
    with pytest.raises(gf.GridflowError, match="no run in flight"):
        s.wait()
    x = fresh(4)
    s.upload("x", x)
    s.run_async()
    with pytest.raises(gf.GridflowError, match="in flight"):
        s.run_async()
    s.wait()
    assert np.array_equal(s.download("x"), x)
    assert np.array_equal(s.download("y").view(np.uint32), plain_results(x)["y"].view(np.uint32))


def test_traces_analysis_and_profile_as_python_objects():
    s = gf.Session(softmax_sums(), backend="cpu", workers=2, trace=True)
    r = s.run()
    assert r.traced
    trace = s.trace(r)
    assert any(e.get("ph") == "X" for e in trace["traceEvents"])
    analysis = s.analysis(r)
    assert analysis and isinstance(analysis, dict)
    report = gf.profile(softmax_sums(), backend="cpu", workers=2, warmup=1, repeat=2)
    assert "table" in report and report["entries"]
    assert all(e["check"].startswith("check passed") for e in report["entries"] if e.get("check"))


def test_version():
    assert gf.__version__ == "0.1.0"
    assert isinstance(gf.source_commit(), str)


def test_resident_session_over_numpy_arrays():
    rs = gf.ResidentSession(backend="cpu", workers=3, depth=4, idle_spin_ms=0.2)
    rs.start()
    h = rs.add(softmax_sums(), mode="flags")
    inputs = [fresh(40 + i) for i in range(6)]
    outputs = [(np.full((ROWS, COLS), np.nan, np.float32), np.full(ROWS, np.nan, np.float32)) for _ in inputs]
    tickets = [rs.submit(h, {"x": x, "y": y, "s": s}) for x, (y, s) in zip(inputs, outputs)]
    for t in tickets:
        r = rs.wait(t)
        assert r.ticket == t and r.published_ns <= r.first_ns <= r.done_ns
    for x, (y, s) in zip(inputs, outputs):
        want = plain_results(x)
        assert np.array_equal(y.view(np.uint32), want["y"].view(np.uint32))
        assert np.array_equal(s.view(np.uint32), want["s"].view(np.uint32))
    with pytest.raises(gf.GraphError, match="buffer 'x': bind.shape"):
        rs.submit(h, {"x": np.zeros((3, 3), np.float32)})
    with pytest.raises(gf.GridflowError, match="already waited"):
        rs.wait(tickets[0])
    rs.upload(h, "x", inputs[0])
    rs.wait(rs.submit(h))
    assert np.array_equal(rs.download(h, "y").view(np.uint32), plain_results(inputs[0])["y"].view(np.uint32))
    rs.stop()
    assert not rs.running
    with pytest.raises(gf.GridflowError, match="not running"):
        rs.submit(h)

"""The Python package on the GPU with torch: tensors bound without copies, runs on torch's current stream between
torch ops, bit for bit with a plain run, mismatches refused. Skips, visibly, without torch, a GPU or the GPU backend."""

import numpy as np
import pytest

import gridflow as gf
import graphs

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: every GPU test is SKIPPED", allow_module_level=True)

ROWS, COLS = 64, 1024


def softmax_sums(x=None):
    return graphs.softmax_sums(ROWS, COLS, x, seed=5, name="torch")


def gpu_session(graph, **kw):
    try:
        return gf.Session(graph, backend="gpu", **kw)
    except gf.GridflowError as e:  # built without the GPU backend
        pytest.skip(f"no GPU backend: {e}")


@pytest.mark.parametrize("mode", ["grid-sync", "barrier", "flags", "sentinel"])
def test_runs_on_torchs_stream_between_torch_ops(mode):
    torch.manual_seed(0)
    source = torch.randn(ROWS, COLS, device="cuda")
    x = torch.full((ROWS, COLS), float("nan"), device="cuda")
    y = torch.full_like(x, float("nan"))
    s = torch.full((ROWS,), float("nan"), device="cuda")
    sess = gpu_session(softmax_sums(), mode=mode)
    for name, t in [("x", x), ("y", y), ("s", s)]:
        sess.bind(name, t)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # the producer is slow: gridflow must wait for it on the stream
        x.copy_(source)
        sess.run_async()  # torch's current stream: `side`
        z = s * 2 + 1  # a torch op after the run, on the same stream
    sess.wait()
    side.synchronize()
    plain = gpu_session(softmax_sums(source.cpu().numpy()), mode=mode)
    plain.run()
    assert plain.check().passed
    expect = plain.results()
    assert np.array_equal(y.cpu().numpy().view(np.uint32), expect["y"].view(np.uint32))
    assert np.array_equal(s.cpu().numpy().view(np.uint32), expect["s"].view(np.uint32))
    assert torch.equal(z, s * 2 + 1)
    torch.testing.assert_close(y, torch.softmax(source, dim=1), rtol=1e-5, atol=1e-7)


def test_strided_torch_views_and_refusals():
    torch.manual_seed(1)
    wide = torch.randn(ROWS, COLS + 8, device="cuda")
    out = torch.zeros(ROWS, COLS + 4, device="cuda")
    sess = gpu_session(softmax_sums())
    sess.bind("x", wide[:, :COLS])
    sess.bind("y", out[:, :COLS])
    sess.run_async()
    sess.wait()
    torch.cuda.synchronize()
    torch.testing.assert_close(out[:, :COLS], torch.softmax(wide[:, :COLS], dim=1), rtol=1e-5, atol=1e-7)
    assert torch.all(out[:, COLS:] == 0)
    with pytest.raises(gf.GraphError, match="buffer 's': bind.dtype"):
        sess.bind("s", torch.zeros(ROWS, dtype=torch.float64, device="cuda"))
    with pytest.raises(gf.GraphError, match="buffer 's': bind.device = host"):
        sess.bind("s", torch.zeros(ROWS))
    with pytest.raises(gf.GraphError, match="buffer 's': bind.shape"):
        sess.bind("s", torch.zeros(ROWS + 1, device="cuda"))


def test_resident_session_over_torch_tensors():
    # Tensors made, and torch's work on them finished, before the resident kernel starts; compared after it stopped
    # (while it runs, work that waits for the whole device would wait for it).
    torch.manual_seed(3)
    inputs = [torch.randn(ROWS, COLS, device="cuda") for _ in range(4)]
    outputs = [(torch.full((ROWS, COLS), float("nan"), device="cuda"),
                torch.full((ROWS,), float("nan"), device="cuda")) for _ in inputs]
    torch.cuda.synchronize()
    try:
        rs = gf.ResidentSession(backend="gpu", depth=8)
    except gf.GridflowError as e:
        pytest.skip(f"no GPU backend: {e}")
    rs.start()
    h = rs.add(softmax_sums(), mode="flags")
    tickets = [rs.submit(h, {"x": x, "y": y, "s": s}) for x, (y, s) in zip(inputs, outputs)]
    for t in tickets:
        r = rs.wait(t)
        assert r.published_ns <= r.first_ns <= r.done_ns
    rs.stop()
    for x, (y, s) in zip(inputs, outputs):
        plain = gpu_session(softmax_sums(x.cpu().numpy()), mode="flags")
        plain.run()
        expect = plain.results()
        assert np.array_equal(y.cpu().numpy().view(np.uint32), expect["y"].view(np.uint32))
        assert np.array_equal(s.cpu().numpy().view(np.uint32), expect["s"].view(np.uint32))

"""Attention-style rows next to torch: softmax of 256 x 1024 scores, each row's max and sum, the sum of the row
maxima. gridflow runs on torch's tensors and stream (every buffer bound, nothing copied); torch runs the same four
ops. The two are checked against each other, then timed side by side with CUDA events.

    python3 examples/python/attention_rows.py        (needs a GPU, torch and the gridflow package)
"""

import gridflow as gf
from common import GRAPHS, bound_session, need_torch_on_a_gpu, run_on_current_stream, time_side_by_side

torch = need_torch_on_a_gpu("attention_rows.py")

graph = gf.load_graph(str(GRAPHS / "attention_rows.json"))
torch.manual_seed(0)
scores = (torch.rand(256, 1024, device="cuda") * 8 - 4).contiguous()
t = {"scores": scores, "probs": torch.empty_like(scores), "row_max": torch.empty(256, device="cuda"),
     "row_sum": torch.empty(256, device="cuda"), "total": torch.empty(1, device="cuda")}
session = bound_session(graph, t)


def with_torch():
    probs = torch.softmax(scores, dim=1)
    row_max = probs.max(dim=1).values
    return probs, row_max, probs.sum(dim=1), row_max.sum()


run_on_current_stream(session)
torch.cuda.synchronize()
probs, row_max, row_sum, total = with_torch()
torch.testing.assert_close(t["probs"], probs, rtol=1e-5, atol=1e-7)
torch.testing.assert_close(t["row_max"], row_max, rtol=1e-5, atol=1e-7)
torch.testing.assert_close(t["row_sum"], row_sum, rtol=1e-5, atol=1e-6)
torch.testing.assert_close(t["total"][0], total, rtol=1e-5, atol=1e-6)
print("gridflow and torch agree (rtol 1e-5)")
time_side_by_side(session, with_torch, torch)

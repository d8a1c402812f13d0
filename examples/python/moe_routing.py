"""Mixture-of-experts routing next to torch: 65536 tokens x 64 experts; each token's expert (argmax), gate
probabilities (softmax) and top probability, tokens per expert (histogram), expert offsets (exclusive scan) and the
tokens grouped by expert, stable (scatter). gridflow runs on torch's tensors and stream; the two are checked
against each other, then timed side by side with CUDA events.

    python3 examples/python/moe_routing.py           (needs a GPU, torch and the gridflow package)
"""

import gridflow as gf
from common import GRAPHS, bound_session, need_torch_on_a_gpu, run_on_current_stream, time_side_by_side

torch = need_torch_on_a_gpu("moe_routing.py")

TOKENS, EXPERTS = 65536, 64
graph = gf.load_graph(str(GRAPHS / "moe_routing.json"))
torch.manual_seed(0)
logits = torch.rand(TOKENS, EXPERTS, device="cuda") * 8 - 4
i32 = dict(dtype=torch.int32, device="cuda")
t = {"logits": logits, "expert": torch.empty(TOKENS, **i32), "gate": torch.empty_like(logits),
     "top_p": torch.empty(TOKENS, device="cuda"), "counts": torch.empty(EXPERTS, **i32),
     "offsets": torch.empty(EXPERTS, **i32), "order": torch.empty(TOKENS, **i32)}
session = bound_session(graph, t)


def with_torch():
    expert = logits.argmax(dim=1).to(torch.int32)
    gate = torch.softmax(logits, dim=1)
    top_p = gate.max(dim=1).values
    counts = torch.bincount(expert, minlength=EXPERTS).to(torch.int32)
    offsets = (torch.cumsum(counts, 0) - counts).to(torch.int32)
    order = torch.argsort(expert, stable=True).to(torch.int32)
    return expert, gate, top_p, counts, offsets, order


run_on_current_stream(session)
torch.cuda.synchronize()
expert, gate, top_p, counts, offsets, order = with_torch()
assert torch.equal(t["expert"], expert) and torch.equal(t["counts"], counts) and torch.equal(t["offsets"], offsets)
torch.testing.assert_close(t["gate"], gate, rtol=1e-5, atol=1e-7)
torch.testing.assert_close(t["top_p"], top_p, rtol=1e-5, atol=1e-7)
# scatter places token i at offsets[expert[i]] + (its rank among the earlier tokens of that expert): `order` lists the
# tokens grouped by expert, ascending within each, which is torch's stable argsort of the experts.
assert torch.equal(t["order"], order), "the grouping differs from a stable sort by expert"
print("gridflow and torch agree (routing exact, probabilities rtol 1e-5)")
time_side_by_side(session, with_torch, torch)

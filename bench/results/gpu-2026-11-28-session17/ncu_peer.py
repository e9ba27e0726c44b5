"""Runs one workload's cell of one peer a few times, for Nsight Compute to profile:
    python3 ncu_peer.py WORKLOAD_ID [PEER] [CALLS]
(bench/peers.py's own forms: the same arrays, the same jax.jit / torch.compile function)."""
import sys

sys.path.insert(0, "bench")
import peers  # noqa: E402

wid = sys.argv[1]
peer = sys.argv[2] if len(sys.argv) > 2 else "jax"
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 3
peers.load_libraries(peer != "jax", peer.startswith("torch"), peer == "jax")
w = {x.id: x for x in peers.WORKLOADS}[wid]
_, impls, _ = w.make(1)
fn = impls[peer]()
for _ in range(calls):
    out = fn()
    if peer == "jax":
        peers.jax.block_until_ready(out)
if peer != "jax" and peers.torch is not None:
    peers.torch.cuda.synchronize()
print("ran %s %s x%d" % (wid, peer, calls))
if peer == "jax":
    print("jax device %s; result on %s" % (peers.JAX_DEVICE, getattr(out, "devices", lambda: "?")()))

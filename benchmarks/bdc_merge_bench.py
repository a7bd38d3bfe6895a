"""Neuron-level distance correlation: our batched, chunked torch version against a loop over
`dcor.distance_correlation`, for every (source neuron, target neuron) pair.

    python benchmarks/bdc_merge_bench.py [--neurons 256] [--tokens 256] [--pairs 4096] [--memory-mb 64]

The dcor loop runs on a random sample of `--pairs` pairs (all pairs with --pairs 0) and its time
is extrapolated to the full grid; values are compared on the sampled pairs. Peak memory: the
largest centred-distance block ours holds (by construction) and the process's peak resident
memory growth during our call (measured in a child process, so the two do not share a peak).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def _data(neurons: int, tokens: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((tokens, neurons))
    mix = rng.standard_normal((neurons, neurons)) / np.sqrt(neurons)
    y = np.tanh(x @ mix) + 0.5 * rng.standard_normal((tokens, neurons))
    return x, y


def ours(neurons: int, tokens: int, memory_mb: int, dtype: str) -> dict:
    import torch

    from neurips26.papers.bdc_merge.bdcorr import neuron_distance_correlation, peak_block_bytes

    torch.set_num_threads(1)
    x, y = _data(neurons, tokens)
    tx, ty = torch.from_numpy(x).to(getattr(torch, dtype)), torch.from_numpy(y).to(getattr(torch, dtype))
    neuron_distance_correlation(tx[:16, :4], ty[:16, :4])  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    D = neuron_distance_correlation(tx, ty, memory_bytes=memory_mb * 2**20)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "rss_growth_mb": (after - before) / 1024,
            "block_mb": peak_block_bytes(tokens, neurons, neurons, memory_mb * 2**20, getattr(torch, dtype)) / 2**20,
            "values": D.double().numpy().tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neurons", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--pairs", type=int, default=4096, help="dcor pairs to time (0 = all)")
    ap.add_argument("--memory-mb", type=int, default=64)
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(ours(args.neurons, args.tokens, args.memory_mb, args.child)))
        return

    results = {}
    for dtype in ("float32", "float64"):
        proc = subprocess.run([sys.executable, __file__, "--neurons", str(args.neurons), "--tokens", str(args.tokens),
                               "--memory-mb", str(args.memory_mb), "--child", dtype],
                              capture_output=True, text=True, check=True)
        results[dtype] = json.loads(proc.stdout.strip().splitlines()[-1])

    import dcor

    x, y = _data(args.neurons, args.tokens)
    dcor.distance_correlation(x[:, 0], y[:, 0])  # numba compile outside the timing
    total = args.neurons * args.neurons
    rng = np.random.default_rng(1)
    flat = np.arange(total) if args.pairs <= 0 or args.pairs >= total else rng.choice(total, args.pairs, replace=False)
    start = time.perf_counter()
    ref = np.array([dcor.distance_correlation(x[:, k // args.neurons], y[:, k % args.neurons]) for k in flat])
    dcor_seconds = (time.perf_counter() - start) * total / len(flat)

    print(f"neurons {args.neurons} x {args.neurons}, tokens {args.tokens}, memory budget {args.memory_mb} MiB, 1 thread")
    print(f"dcor loop: {len(flat)} of {total} pairs timed"
          + ("" if len(flat) == total else " (time extrapolated to all pairs)") + f": {dcor_seconds:.2f} s")
    for dtype, r in results.items():
        ours_vals = np.array(r["values"]).reshape(-1)[flat]
        err = float(np.abs(ours_vals - ref).max())
        print(f"ours ({dtype}): {r['seconds']:.2f} s, largest block {r['block_mb']:.1f} MiB, "
              f"peak RSS growth {r['rss_growth_mb']:.1f} MiB, max |ours - dcor| = {err:.2e} "
              f"({'within' if err <= 1e-6 else 'NOT within'} 1e-6), speed-up x{dcor_seconds / r['seconds']:.1f}")


if __name__ == "__main__":
    main()

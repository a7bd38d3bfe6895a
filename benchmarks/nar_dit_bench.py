"""Benchmark: one training step of each nar_dit regime at the default size.

Prints, per regime: ms per step, the step-time ratio against plain DiT, the share of
token-block work the routing skips, and the achieved GFLOP/s against this machine's measured
fp32 matmul throughput (same thread count). Not a test: numbers depend on the machine.

    python benchmarks/nar_dit_bench.py [--config config/config.yaml] [--threads 1] [--steps 30]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from neurips26.papers import load_config
from neurips26.papers.nar_dit.diffusion import flow_loss, sample_t
from neurips26.papers.nar_dit.model import DiT, DiTConfig, RoutingPolicy, kept_tokens, train_step_flops

ROOT = Path(__file__).resolve().parents[1]


def matmul_gflops(n: int = 1024, repeats: int = 20) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n ** 3 * repeats / (time.perf_counter() - start) / 1e9


def skipped_share(cfg: DiTConfig, policy: RoutingPolicy) -> float:
    """Share of token-block evaluations (tokens x blocks) that routing skips, batch-averaged."""
    if policy.kind == "none":
        return 0.0
    start, end = policy.route_start, policy.route_end % cfg.depth
    span = end - start + 1
    edges = (0.0, *policy.boundaries, 1.0) if policy.kind == "nar" else (0.0, 1.0)
    ratios = policy.ratios if policy.kind == "nar" else (policy.ratio,)
    skipped = sum((hi - lo) * (cfg.tokens - kept_tokens(cfg.tokens, r)) * span
                  for r, lo, hi in zip(ratios, edges[:-1], edges[1:]))
    return skipped / (cfg.tokens * cfg.depth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", default=[], help="extra config on top of config/config.yaml")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    block = load_config(ROOT, args.config)["nar_dit"]
    m, t = block["model"], block["train"]
    cfg = DiTConfig(image_size=block["data"]["image_size"], patch=m["patch"], depth=m["depth"], hidden=m["hidden"],
                    heads=m["heads"], mlp_ratio=m["mlp_ratio"], num_classes=m["num_classes"])
    batch = t["batch_size"]
    peak = matmul_gflops()
    print(f"DiT depth {cfg.depth}, hidden {cfg.hidden}, {cfg.tokens} tokens, batch {batch}, "
          f"routed blocks {t['route_start']}..{t['route_end'] % cfg.depth}, {args.threads} thread(s)")
    print(f"fp32 matmul 1024^3 on this machine: {peak:.1f} GFLOP/s\n")
    header = f"{'regime':<14}{'ms/step':>10}{'vs DiT':>9}{'work skipped':>14}{'FLOP ratio':>12}{'GFLOP/s':>10}{'% of matmul':>13}"
    print(header)
    print("-" * len(header))
    base_ms = None
    for name in block["run_variants"]:
        v = block["variants"][name]
        policy = RoutingPolicy(kind=v["kind"], ratio=v.get("ratio", 0.0), ratios=tuple(v.get("ratios", ())),
                               boundaries=tuple(v.get("boundaries", (1 / 3, 2 / 3))),
                               route_start=t["route_start"], route_end=t["route_end"])
        model = DiT(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=t["lr"])
        x = torch.rand(batch, cfg.in_channels, cfg.image_size, cfg.image_size) * 2 - 1
        y = torch.randint(0, cfg.num_classes, (batch,))
        times = []
        for i in range(args.steps + 5):
            start = time.perf_counter()
            tt = sample_t(batch)
            loss = flow_loss(model, x, y, tt, torch.randn_like(x), policy.ratios_for(tt), policy.route_start, policy.route_end)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i >= 5:
                times.append(time.perf_counter() - start)
        ms = 1000 * sorted(times)[len(times) // 2]
        base_ms = base_ms or ms
        flops = train_step_flops(cfg, policy, batch)
        dense = train_step_flops(cfg, RoutingPolicy(), batch)
        gflops = flops / (ms / 1000) / 1e9
        print(f"{name:<14}{ms:>10.1f}{ms / base_ms:>9.2f}{skipped_share(cfg, policy):>14.1%}"
              f"{flops / dense:>12.2f}{gflops:>10.1f}{gflops / peak:>13.1%}")


if __name__ == "__main__":
    main()

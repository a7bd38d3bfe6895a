"""angular_nets benchmark (not a test): prints two tables.

1. Bit-packed storage of every backbone x method at the default config's sizes, against fp32.
2. Inference time of a packed 1-bit angular layer against the fp32 nn.Linear it replaces, at a
   few sizes, one CPU thread: the fp32 matmul; the angular layer end to end (centre, project
   with G in fp32, sign, pack to bits, XOR + popcount against the stored packed weight codes);
   and the XOR + popcount kernel alone (the part that replaces the matmul when the input
   projection is already binary).

    python benchmarks/angular_nets_bench.py [--sizes 256 1024 4096] [--batch 64] [--nu 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def storage_table():
    from neurips26.papers import load_config
    from neurips26.papers.angular_nets.models import build
    from neurips26.papers.angular_nets.steps import method_spec
    from neurips26.papers.angular_nets.storage import storage_bytes

    block = load_config(".")["angular_nets"]
    infos = {"resnet": {"channels": 3, "image_size": 16, "num_classes": 10},
             "vit": {"channels": 3, "image_size": 16, "num_classes": 10},
             "bert": {"vocab_size": 45, "max_len": 16, "num_classes": 10}}
    print("bit-packed storage (default-config sizes)")
    print(f"{'backbone':<8} {'method':<14} {'W/A bits':>9} {'MB packed':>10} {'MB fp32':>9} {'ratio':>7}")
    for backbone, info in infos.items():
        torch.manual_seed(0)
        fp = storage_bytes(build(backbone, method_spec("fp", block["methods"]["fp"], block["angular"], 0),
                                 block["arch"][backbone], info))
        for name, settings in block["methods"].items():
            spec = method_spec(name, settings, block["angular"], 0)
            size = storage_bytes(build(backbone, spec, block["arch"][backbone], info))
            bits = f"{spec.weight_bits:g}/{spec.activation_bits:g}"
            print(f"{backbone:<8} {name:<14} {bits:>9} {size / 1e6:>10.4f} {fp / 1e6:>9.4f} {fp / size:>6.1f}x")


def _time(fn, repeats=7):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def timing_table(sizes, batch, nu):
    from neurips26.papers.angular_nets.angular import (AngularLinear, centre_rows, pack_signs_u64,
                                                       packed_sign_matmul)

    torch.set_num_threads(1)
    print(f"\ninference, batch {batch}, one thread, nu = {nu} (median of 7; milliseconds)")
    print(f"{'d_in=d_out':>10} {'fp32 linear':>12} {'angular e2e':>12} {'popcount':>10} {'weight KB fp32':>15} {'packed':>8}")
    for d in sizes:
        torch.manual_seed(0)
        linear = torch.nn.Linear(d, d)
        layer = AngularLinear(d, d, nu=nu)
        x = torch.randn(batch, d)
        with torch.no_grad():
            w_packed = pack_signs_u64((layer.weight_codes().T.numpy() * 2.0 - 1.0))  # (out, words)
        G = layer.G
        n = layer.n_rows
        gain, bias = layer.gain.detach().numpy(), layer.bias.detach().numpy()

        def fp32():
            with torch.no_grad():
                linear(x)

        def angular():
            with torch.no_grad():  # the fp32 projection, in torch's one-thread BLAS
                z = (centre_rows(x) @ G.T).numpy()
            xb = pack_signs_u64(z)
            out = np.empty((batch, d))
            for s in range(0, d, 256):  # chunks of outputs bound the XOR buffer
                out[:, s:s + 256] = packed_sign_matmul(xb, w_packed[s:s + 256], n)
            return out * gain + bias

        with torch.no_grad():
            xb = pack_signs_u64((centre_rows(x) @ G.T).numpy())

        def popcount():
            for s in range(0, d, 256):
                packed_sign_matmul(xb, w_packed[s:s + 256], n)

        # check the packed path against the layer's own forward before timing it
        with torch.no_grad():
            ref = layer(x).numpy()
        assert np.allclose(angular(), ref, atol=1e-4), "packed angular layer disagrees with AngularLinear"
        t_fp, t_ang, t_pop = (_time(f) * 1e3 for f in (fp32, angular, popcount))
        print(f"{d:>10} {t_fp:>12.3f} {t_ang:>12.3f} {t_pop:>10.3f} {d * d * 4 / 1e3:>15.1f} {n * d / 8 / 1e3:>8.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--nu", type=float, default=1.0)
    args = parser.parse_args()
    storage_table()
    timing_table(args.sizes, args.batch, args.nu)


if __name__ == "__main__":
    main()

"""FD and KID accumulated chunk by chunk equal the one-shot computation."""

import pytest
import torch

from neurips26.core.metrics import chunks, frechet_and_kid, frechet_and_kid_stream


def test_chunked_features_equal_one_shot():
    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 8)).eval()
    real = torch.rand(60, 3, 4, 4, generator=g)
    fake = (torch.rand(50, 3, 4, 4, generator=g) * 0.8 + 0.1)
    one_shot = frechet_and_kid(net, 8, real, fake, batch_size=len(real), kid_subsets=5, seed=3)
    # odd chunk sizes, the images produced lazily as a generator would decode them
    streamed = frechet_and_kid_stream(net, 8, (c.clone() for c in chunks(real, 7)), (c.clone() for c in chunks(fake, 11)),
                                      n=50, kid_subsets=5, seed=3)
    assert one_shot["fd"] > 0.01
    # FD: float64 running sums grouped otherwise; KID: the same features in the same order
    assert streamed["fd"] == pytest.approx(one_shot["fd"], rel=1e-9, abs=1e-9)
    assert streamed["kid_mean"] == pytest.approx(one_shot["kid_mean"], rel=1e-5, abs=1e-9)
    assert streamed["kid_std"] == pytest.approx(one_shot["kid_std"], rel=1e-5, abs=1e-9)

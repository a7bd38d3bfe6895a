"""Metric helpers shared by papers: Frechet distance and KID in a given feature network."""

from __future__ import annotations


def _feature_extractor(net, num_features: int):
    """`net` as torchmetrics' custom feature extractor: a Module with `num_features`."""
    import torch

    class FeatureExtractor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.num_features = num_features

        def forward(self, x):
            with torch.no_grad():
                return net(x)

    return FeatureExtractor().eval()


def chunks(images, size: int):
    """`images` in consecutive chunks of `size` (the last one shorter)."""
    for start in range(0, len(images), size):
        yield images[start:start + size]


def frechet_and_kid(feature_net, num_features: int, real, fake, batch_size: int = 256,
                    kid_subsets: int = 20, kid_subset_size: int | None = None, seed: int = 0) -> dict:
    """Frechet distance and KID (mean, std) between `real` and `fake` images in `feature_net`'s
    features, through torchmetrics' custom-feature path. Images are float tensors as the
    network expects them. The KID subset draw is seeded, so the result is deterministic."""
    return frechet_and_kid_stream(feature_net, num_features, chunks(real, batch_size), chunks(fake, batch_size),
                                  n=min(len(real), len(fake)), kid_subsets=kid_subsets,
                                  kid_subset_size=kid_subset_size, seed=seed)


def frechet_and_kid_stream(feature_net, num_features: int, real_chunks, fake_chunks, n: int,
                           kid_subsets: int = 20, kid_subset_size: int | None = None, seed: int = 0) -> dict:
    """`frechet_and_kid` over images that arrive in chunks (iterables of image batches, e.g.
    decoded as they are generated): only each chunk's features are kept (FD: running sums of the
    features and their outer products; KID: the features), never the images, so 50k samples at
    256x256 need their 2048-dim features (0.4 GB a side), not the images (39 GB a side). `n`: the
    smaller side's count, which sets the KID subset size as `frechet_and_kid` does."""
    import torch
    from torchmetrics.image.fid import FrechetInceptionDistance
    from torchmetrics.image.kid import KernelInceptionDistance

    extractor = _feature_extractor(feature_net, num_features)
    subset = kid_subset_size or max(2, min(100, n // 2))
    fid = FrechetInceptionDistance(feature=extractor, normalize=True, reset_real_features=True)
    kid = KernelInceptionDistance(feature=extractor, normalize=True, subsets=kid_subsets,
                                  subset_size=subset)
    for stream, is_real in ((real_chunks, True), (fake_chunks, False)):
        for chunk in stream:
            fid.update(chunk, real=is_real)
            kid.update(chunk, real=is_real)
    fd = float(fid.compute())
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    kid_mean, kid_std = kid.compute()
    torch.random.set_rng_state(state)
    return {"fd": fd, "kid_mean": float(kid_mean), "kid_std": float(kid_std)}

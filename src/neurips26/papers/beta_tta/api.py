"""A trained classifier behind a black-box API: probabilities out, nothing else.

`BlackBoxAPI(model, latency_per_call_s, latency_per_image_s, price_per_1k_queries)` answers
`predict(images) -> numpy probabilities` and keeps the books: `queries` (images sent), `calls`
(requests), `simulated_latency_s` (latency_per_call_s per request + latency_per_image_s per
image), `cost` (price per 1000 images) and `model_seconds` (CPU time measured inside the model's
forward pass: what standard inference costs on this machine, machine-dependent). The model is
held in a closure, not an attribute: the object has no `parameters()`, no `state_dict()`, no
module or tensor among its attributes, and its answers are fresh numpy arrays with no autograd
history.
"""

from __future__ import annotations

import time

import numpy as np


class BlackBoxAPI:
    __slots__ = ("_predict", "queries", "calls", "simulated_latency_s", "cost", "_latency_call",
                 "_latency_image", "_price", "model_seconds")

    def __init__(self, model, latency_per_call_s: float = 0.0, latency_per_image_s: float = 0.0,
                 price_per_1k_queries: float = 0.0):
        import torch

        model = model.eval()
        for p in model.parameters():
            p.requires_grad_(False)

        def predict(images):
            x = torch.as_tensor(np.asarray(images, dtype=np.float32))
            with torch.no_grad():
                return torch.softmax(model(x), -1).numpy().astype(np.float64)

        self._predict = predict
        self._latency_call, self._latency_image = float(latency_per_call_s), float(latency_per_image_s)
        self._price = float(price_per_1k_queries)
        self.reset_counters()

    def reset_counters(self) -> None:
        self.queries, self.calls, self.simulated_latency_s, self.cost = 0, 0, 0.0, 0.0
        self.model_seconds = 0.0

    def predict(self, images) -> np.ndarray:
        """Class probabilities (n, classes) of a batch of images (n, 3, H, W) in [0, 1]."""
        images = images.detach().cpu().numpy() if hasattr(images, "detach") else np.asarray(images)
        n = len(images)
        self.queries += n
        self.calls += 1
        self.simulated_latency_s += self._latency_call + self._latency_image * n
        self.cost += self._price * n / 1000
        start = time.process_time()
        out = self._predict(images)
        self.model_seconds += time.process_time() - start
        return out

    def __getstate__(self):
        raise TypeError("BlackBoxAPI cannot be pickled: the model behind it stays private")

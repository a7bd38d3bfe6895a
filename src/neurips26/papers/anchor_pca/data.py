"""Multi-domain data for Anchor PCA: simulated domains with a planted invariant subspace,
scikit-learn's wine (cultivars as domains, one held out), scikit-learn's digits (digit classes
as domains, a random four unseen per seed), and the UCI gas sensor array drift files (batches as
domains, later batches held out; not shipped, read from a folder named in config/paper.yaml).

Simulation: x = Q diag(sqrt(base + inflation_e)) z, z ~ N(0, I_p), Q a random rotation. The
first k columns of Q carry invariant variance `invariant_variances` (plus the base variance 1) in
every domain; a pool of `spurious_pool` further columns can be inflated: each domain inflates
`inflated_per_domain` of them, drawn at random, by a variance drawn from U(low, high). All other
columns have the base variance. Training and unseen domains follow the same law.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class MultiDomainData:
    train: list[np.ndarray]
    test: list[np.ndarray]
    train_names: list[str]
    test_names: list[str]
    planted: np.ndarray | None = None   # p x k basis of the planted invariant subspace


def simulate(p: int, k: int, invariant_variances: list[float], spurious_pool: int, inflated_per_domain: int,
             inflation: tuple[float, float], train_domains: int, test_domains: int, samples_per_domain: int,
             rng: np.random.Generator) -> MultiDomainData:
    if len(invariant_variances) != k:
        raise ValueError(f"config key 'anchor_pca.variants.*.invariant_variances': need {k} values (k), "
                         f"got {len(invariant_variances)}")
    Q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    pool = np.arange(k, k + spurious_pool)

    def domain() -> np.ndarray:
        var = np.ones(p)
        var[:k] += np.asarray(invariant_variances, dtype=float)
        hit = rng.choice(pool, size=inflated_per_domain, replace=False)
        var[hit] += rng.uniform(inflation[0], inflation[1], size=inflated_per_domain)
        z = rng.standard_normal((samples_per_domain, p))
        return (z * np.sqrt(var)) @ Q.T

    train = [domain() for _ in range(train_domains)]
    test = [domain() for _ in range(test_domains)]
    return MultiDomainData(train, test, [f"train{i}" for i in range(train_domains)],
                           [f"unseen{i}" for i in range(test_domains)], planted=Q[:, :k])


def standardise(data: MultiDomainData) -> MultiDomainData:
    """Scale every feature by its pooled within-domain standard deviation on the training domains."""
    centred = np.concatenate([X - X.mean(axis=0) for X in data.train])
    scale = centred.std(axis=0)
    scale[scale == 0] = 1.0
    return MultiDomainData([X / scale for X in data.train], [X / scale for X in data.test],
                           data.train_names, data.test_names, data.planted)


def wine_domains(held_out: int, subsample: float, rng: np.random.Generator) -> MultiDomainData:
    """scikit-learn's wine data (178 x 13, shipped with the package): the three cultivars are the
    domains, `held_out` is the unseen one; each training cultivar keeps a random `subsample` share."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    train, names = [], []
    for c in sorted(set(y.tolist())):
        if c == held_out:
            continue
        rows = np.flatnonzero(y == c)
        keep = np.sort(rng.choice(rows, size=max(3, int(round(subsample * len(rows)))), replace=False))
        train.append(X[keep])
        names.append(f"cultivar{c}")
    return standardise(MultiDomainData(train, [X[y == held_out]], names, [f"cultivar{held_out}"]))


def digits_domains(train_classes: int, subsample: float, rng: np.random.Generator) -> MultiDomainData:
    """scikit-learn's handwritten digits (1797 x 64, 8x8 images, shipped with the package): the
    ten digit classes are the domains; a seed draws which `train_classes` of them are training
    domains (the others unseen) and keeps a random `subsample` share of each training class."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    classes = rng.permutation(10)
    train_c, test_c = sorted(classes[:train_classes].tolist()), sorted(classes[train_classes:].tolist())
    train = []
    for c in train_c:
        rows = np.flatnonzero(y == c)
        train.append(X[np.sort(rng.choice(rows, size=max(3, int(round(subsample * len(rows)))), replace=False))])
    return standardise(MultiDomainData(train, [X[y == c] for c in test_c], [f"digit{c}" for c in train_c],
                                       [f"digit{c}" for c in test_c]))


# ---------------------------------------------------------------- UCI gas sensor array drift
def read_gas_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One batchN.dat file: lines 'label;concentration idx:value ...' (libsvm-like, 1-based
    feature indices, 128 features). Returns (features n x 128, labels, concentrations)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"gas sensor batch file {path} does not exist")
    rows, labels, conc = [], [], []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        head, *pairs = line.split()
        label, sep, concentration = head.partition(";")
        if not sep:
            raise ValueError(f"{path}:{lineno}: expected 'label;concentration' before the features, got {head!r}")
        feats = {}
        for pair in pairs:
            idx, sep, value = pair.partition(":")
            if not sep:
                raise ValueError(f"{path}:{lineno}: expected 'index:value', got {pair!r}")
            feats[int(idx)] = float(value)
        rows.append(feats)
        labels.append(int(float(label)))
        conc.append(float(concentration))
    if not rows:
        raise ValueError(f"{path}: no samples")
    width = max(max(r) for r in rows if r)
    X = np.zeros((len(rows), width))
    for i, feats in enumerate(rows):
        for idx, value in feats.items():
            X[i, idx - 1] = value
    return X, np.asarray(labels), np.asarray(conc)


def gas_sensor_domains(data_dir: str | Path, train_batches: list[int], test_batches: list[int]) -> MultiDomainData:
    """Batches of the drift data set as domains (batch1.dat ... batch10.dat in `data_dir`),
    features standardised on the training batches."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"config key 'anchor_pca.data.gas_dir': {data_dir} is not a folder")
    load = lambda b: read_gas_batch(data_dir / f"batch{b}.dat")[0]  # noqa: E731
    train = [load(b) for b in train_batches]
    test = [load(b) for b in test_batches]
    width = max(X.shape[1] for X in train + test)
    pad = lambda X: np.pad(X, ((0, 0), (0, width - X.shape[1])))  # noqa: E731
    return standardise(MultiDomainData([pad(X) for X in train], [pad(X) for X in test],
                                       [f"batch{b}" for b in train_batches], [f"batch{b}" for b in test_batches]))

"""Data for acopula: simulated censored nested data, the Swiss stock returns shipped in
`copulae` (sectors as nesting groups), a clustered censored survival data set from `lifelines`
(the first three recurrence gap times of each subject with at least three records in `load_recur`), and the real-format
loaders config/paper.yaml names (S&P 500 prices + sectors, MIMIC-IV-style survival table).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Sector of each SMI constituent in copulae's `load_smi` (Swiss Market Index, 2011-2012).
SMI_SECTORS = {
    "ABBN": "industrials", "ADEN": "industrials", "SGSN": "industrials",
    "ATLN": "health", "NOVN": "health", "ROG": "health", "SYST": "health",
    "CSGN": "financials", "BAER": "financials", "SREN": "financials", "UBSN": "financials", "ZURN": "financials",
    "GIVN": "materials", "HOLN": "materials", "SYNN": "materials",
    "NESN": "consumer", "CFR": "consumer", "UHR": "consumer",
    "SCMN": "telecom", "RIGN": "energy",
}


def pseudo_observations(x: np.ndarray) -> np.ndarray:
    """Column ranks / (n + 1)."""
    from scipy.stats import rankdata

    return rankdata(x, axis=0) / (x.shape[0] + 1)


def smi_returns() -> tuple[np.ndarray, list[str], dict[str, str]]:
    """copulae's SMI prices, read from the CSV the package ships (importing copulae costs ~4 s)."""
    import importlib.util

    import pandas as pd

    spec = importlib.util.find_spec("copulae")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("acopula: the copulae package (which ships the SMI data) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "smi.csv"
    if not path.exists():
        raise FileNotFoundError(f"acopula: data file {path} does not exist")
    prices = pd.read_csv(path, index_col=0)
    prices.columns = [c.strip() for c in prices.columns]
    returns = np.diff(np.log(prices.to_numpy(dtype=float)), axis=0)
    return returns, list(prices.columns), SMI_SECTORS


def load_prices(prices_path: str | Path, sectors_path: str | Path) -> tuple[np.ndarray, list[str], dict[str, str]]:
    """Daily log returns from a prices CSV (first column date, one column per ticker) and a
    sectors CSV (columns ticker,sector). Tickers without a sector are dropped."""
    import pandas as pd

    prices_path, sectors_path = Path(prices_path), Path(sectors_path)
    for p in (prices_path, sectors_path):
        if not p.exists():
            raise FileNotFoundError(f"acopula: data file {p} does not exist")
    prices = pd.read_csv(prices_path, index_col=0)
    sectors = pd.read_csv(sectors_path)
    if not {"ticker", "sector"} <= set(sectors.columns):
        raise ValueError(f"acopula: {sectors_path} needs columns ticker,sector")
    mapping = dict(zip(sectors["ticker"].astype(str), sectors["sector"].astype(str)))
    cols = [c for c in prices.columns if c in mapping]
    if len(cols) < 2:
        raise ValueError(f"acopula: fewer than two tickers of {prices_path} have a sector in {sectors_path}")
    prices = prices[cols].dropna()
    returns = np.diff(np.log(prices.to_numpy(dtype=float)), axis=0)
    return returns, cols, {c: mapping[c] for c in cols}


def sector_tree_spec(tickers: list[str], sectors: dict[str, str], family: str) -> dict:
    """Root over sectors; a sector with >= 2 tickers is a child node, a lone ticker a root leaf."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tickers):
        groups.setdefault(sectors[t], []).append(i)
    children = []
    for name in sorted(groups):
        cols = groups[name]
        children.append({"family": family, "children": cols, "name": name} if len(cols) > 1 else cols[0])
    return {"family": family, "children": children, "name": "market"}


def _km_u(times: np.ndarray, events: np.ndarray) -> np.ndarray:
    """u = S(t) from the Kaplan-Meier estimate of each margin, shrunk by n/(n+1) away from 0."""
    from lifelines import KaplanMeierFitter

    n = times.shape[0]
    u = np.empty_like(times, dtype=float)
    for j in range(times.shape[1]):
        km = KaplanMeierFitter().fit(times[:, j], events[:, j])
        s = km.survival_function_at_times(times[:, j]).to_numpy()
        # survival just before t for events (the jump), at t for censored times
        s_before = km.survival_function_at_times(np.nextafter(times[:, j], -np.inf)).to_numpy()
        u[:, j] = np.where(events[:, j] == 1, (s + s_before) / 2, s)
    return np.clip(u * n / (n + 1), 0.5 / (n + 1), 1 - 0.5 / (n + 1))


def recur_clusters(gaps: int = 3) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The first `gaps` recurrence gap times (days) of every subject in lifelines' `load_recur` that
    has at least `gaps` records, with their event flags (CENSOR: 1 = the recurrence was seen, 0 = the
    gap was right-censored by the end of follow-up). A cluster is one subject's gaps.

    Only recorded gaps enter: a gap that never started (its subject was censored earlier) is not a
    right-censored observation of it, so subjects with fewer than `gaps` records are left out rather
    than given invented censored gaps. In `load_recur` (400 subjects, at most 4 gaps each) a censored
    gap is always a subject's last record, so with gaps = 3 the first two gaps of the kept subjects
    are observed and the third is censored for some."""
    from lifelines.datasets import load_recur

    if gaps < 2:
        raise ValueError(f"config key 'acopula.survival.recur_gaps': need at least 2 gaps per cluster, got {gaps}")
    df = load_recur().sort_values(["ID", "EVENT"])
    times, events = [], []
    for _, g in df.groupby("ID"):
        rows = g.to_dict("records")
        if len(rows) < gaps:
            continue
        times.append([max(r["TIME1"] - r["TIME0"], 0.5) for r in rows[:gaps]])  # same-day recurrences: half a day
        events.append([int(r["CENSOR"]) for r in rows[:gaps]])
    if len(times) < 10:
        raise ValueError(f"config key 'acopula.survival.recur_gaps': only {len(times)} subjects have {gaps} gaps")
    return np.asarray(times, dtype=float), np.asarray(events, dtype=int), [f"gap{k + 1}" for k in range(gaps)]


def load_survival_table(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """CSV with columns <name>_time and <name>_event (1 = observed, 0 = right-censored) per
    variable, one row per subject (MIMIC-IV-style wide table)."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"acopula: data file {path} does not exist")
    df = pd.read_csv(path)
    names = [c[:-5] for c in df.columns if c.endswith("_time")]
    missing = [n for n in names if f"{n}_event" not in df.columns]
    if not names or missing:
        raise ValueError(f"acopula: {path} needs <name>_time and <name>_event columns (missing events for {missing})")
    return df[[f"{n}_time" for n in names]].to_numpy(float), df[[f"{n}_event" for n in names]].to_numpy(int), names


def survival_to_copula_scale(times: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _km_u(times, events), events.astype(bool)

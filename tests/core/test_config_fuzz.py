"""Generated configs against the schema: every invalid one is rejected with the key named
(wrong types, floats for integers, zero or negative sizes, unknown nested keys, names that
could not be paths, empty or repeated seeds); valid ones pass. Two Snakemake dry runs check
that the workflow stops on them before anything under results/ exists."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neurips26.core.config import ConfigError
from neurips26.papers import load_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
BASE = load_config(ROOT, [ROOT / "config" / "smoke.yaml"])
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# integer keys of the config that count or size something (minimum >= 1)
SIZES = [("nar_dit", "train", "steps"), ("nar_dit", "train", "batch_size"), ("nar_dit", "classifier", "steps"),
         ("angular_nets", "train", "steps"), ("apexphys", "train", "steps_per_task"), ("threads_per_job",)]
PAPERS_WITH_VARIANTS = sorted(p for p in BASE["papers"] if "variants" in BASE[p] and "run_variants" in BASE[p])
PAPERS_WITH_SEEDS = sorted(p for p in BASE["papers"] if "seeds" in BASE[p])
# outside the schemas' name pattern ^[A-Za-z0-9_]+$ ("_" alone is inside it)
bad_names = st.text(min_size=1, max_size=12).filter(lambda s: re.fullmatch(r"[A-Za-z0-9_]+", s) is None)


def put(config, path, value):
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


def rejected(config, key: str) -> str:
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT)
    assert key in str(err.value), (key, str(err.value))
    return str(err.value)


@FUZZ
@given(path=st.sampled_from(SIZES), value=st.one_of(
    st.integers(max_value=0), st.floats(allow_nan=False).filter(lambda f: f > 0), st.text(max_size=5),
    st.booleans(), st.none(), st.lists(st.integers(), max_size=2)))
def test_bad_sizes_are_rejected_with_the_key(path, value):
    rejected(put(BASE, path, value), ".".join(path))


@FUZZ
@given(path=st.sampled_from(SIZES), value=st.integers(min_value=4, max_value=64))  # some sizes have a minimum (a batch of 3 noise groups)
def test_positive_integer_sizes_pass(path, value):
    validate_config(put(BASE, path, value), ROOT)


@FUZZ
@given(path=st.sampled_from(SIZES), value=st.integers(min_value=4, max_value=64))  # some sizes have a minimum (a batch of 3 noise groups)
def test_a_float_where_an_integer_is_meant_is_rejected(path, value):
    rejected(put(BASE, path, float(value)), ".".join(path))


@FUZZ
@given(section=st.sampled_from([("nar_dit", "train"), ("nar_dit", "model"), ("angular_nets", "data"),
                                ("lm_assets", "tokenizer"), ()]),
       key=st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_unknown_nested_keys_are_rejected(section, key):
    node = BASE
    for part in section:
        node = node[part]
    if key in node or (not section and key in ("keep_checkpoints",)):
        return
    config = put(BASE, (*section, key), 1) if section else {**BASE, key: 1}
    rejected(config, ".".join((*section, key)))


@FUZZ
@given(paper=st.sampled_from(PAPERS_WITH_VARIANTS), name=bad_names)
def test_variant_names_outside_the_pattern_are_rejected(paper, name):
    block = copy.deepcopy(BASE[paper])
    first = block["run_variants"][0]
    block["variants"][name] = block["variants"][first]
    rejected({**BASE, paper: block}, f"{paper}.variants")
    block = copy.deepcopy(BASE[paper])
    block["run_variants"] = [name]
    rejected({**BASE, paper: block}, f"{paper}.run_variants")


@FUZZ
@given(paper=st.sampled_from(PAPERS_WITH_SEEDS), seeds=st.one_of(
    st.just([]), st.integers(0, 9).map(lambda s: [s, s]), st.lists(st.integers(max_value=-1), min_size=1, max_size=2),
    st.lists(st.floats(0.5, 9.5), min_size=1, max_size=2)))
def test_empty_repeated_or_bad_seeds_are_rejected(paper, seeds):
    rejected(put(BASE, (paper, "seeds"), seeds), f"{paper}.seeds")


@FUZZ
@given(paper=st.sampled_from(PAPERS_WITH_SEEDS), seeds=st.lists(st.integers(0, 10_000), min_size=1, max_size=4, unique=True),
       name=st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True))
def test_valid_seeds_and_names_pass(paper, seeds, name):
    config = put(BASE, (paper, "seeds"), seeds)
    if paper in PAPERS_WITH_VARIANTS:
        block = config[paper]
        block["variants"][name] = block["variants"][block["run_variants"][0]]
    validate_config(config, ROOT)


@pytest.mark.parametrize("bad, key", [
    ({"nar_dit": {"train": {"steps": 10.0}}}, "nar_dit.train.steps"),
    ({"nar_dit": {"variants": {"../../../x": {"kind": "none"}}, "run_variants": ["../../../x"]}}, "nar_dit.variants"),
])
def test_dry_run_stops_before_any_job_and_creates_no_results(tmp_path, bad, key):
    snakemake = str(Path(sys.executable).parent / "snakemake")
    wf = tmp_path / "wf"
    for name in ["Snakefile", "workflow", "config", "profiles"]:
        src = ROOT / name
        (subprocess.run(["cp", "-r", str(src), str(wf / name)], check=True) if wf.exists()
         else (wf.mkdir(), subprocess.run(["cp", "-r", str(src), str(wf / name)], check=True)))
    (wf / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run([snakemake, "-n", "--cores", "1", "--configfile", "config/smoke.yaml", "bad.yaml"],
                          cwd=wf, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert key in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert not (wf / "results").exists()

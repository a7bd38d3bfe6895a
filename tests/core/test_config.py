"""The config schema: bad keys, types, papers and values stop with the key named."""

import copy

import pytest
import yaml

from neurips26.core.config import ConfigError, deep_merge
from neurips26.papers import load_config, validate_config


@pytest.fixture
def config(root):
    return yaml.safe_load((root / "config" / "config.yaml").read_text())


def test_default_smoke_and_paper_configs_validate(root):
    for extra in ([], [root / "config/smoke.yaml"], [root / "config/paper.yaml"]):
        cfg = load_config(root, extra)
        assert cfg["papers"]


def test_unknown_top_level_key_is_named(root, config):
    config["epochs"] = 3
    with pytest.raises(ConfigError, match="unknown config key 'epochs'"):
        validate_config(config, root)


def test_unknown_nested_key_is_named(root, config):
    config["nar_dit"]["train"]["stpes"] = 10
    with pytest.raises(ConfigError, match=r"'nar_dit\.train\.stpes'"):
        validate_config(config, root)


def test_wrong_type_names_the_key(root, config):
    config["nar_dit"]["train"]["steps"] = "many"
    with pytest.raises(ConfigError, match=r"config key 'nar_dit\.train\.steps'.*not of type 'integer'"):
        validate_config(config, root)


def test_unknown_paper_is_named(root, config):
    config["papers"] = ["nar_dit", "not_a_paper"]
    with pytest.raises(ConfigError, match=r"papers\[1\]'.*unknown paper 'not_a_paper'"):
        validate_config(config, root)


def test_impossible_values(root, config):
    bad = copy.deepcopy(config)
    bad["nar_dit"]["train"]["ema_decay"] = 1.5
    with pytest.raises(ConfigError, match=r"nar_dit\.train\.ema_decay"):
        validate_config(bad, root)
    bad = copy.deepcopy(config)
    bad["nar_dit"]["train"]["route_start"] = 5
    bad["nar_dit"]["train"]["route_end"] = 2
    with pytest.raises(ConfigError, match=r"nar_dit\.train\.route_start/route_end"):
        validate_config(bad, root)
    bad = copy.deepcopy(config)
    bad["nar_dit"]["variants"]["nar"]["ratios"] = [0.2, 0.8]
    with pytest.raises(ConfigError, match=r"nar_dit\.variants\.nar\.ratios"):
        validate_config(bad, root)
    bad = copy.deepcopy(config)
    bad["nar_dit"]["run_variants"] = ["dit", "nope"]
    with pytest.raises(ConfigError, match=r"nar_dit\.run_variants"):
        validate_config(bad, root)


def test_defaults_are_filled(root, config):
    del config["nar_dit"]["evaluate"]["probe_ratio"]
    assert validate_config(config, root)["nar_dit"]["evaluate"]["probe_ratio"] == 0.5


def test_deep_merge_overrides_leaves_only():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert deep_merge(base, {"a": {"c": [3]}}) == {"a": {"b": 1, "c": [3]}, "d": 1}
    assert base["a"]["c"] == [1, 2]

"""The shared language-model assets (a step group, not a paper): generated corpora and the BPE
tokenizer are reproducible from the config, the tokenizer covers its corpora, and a model name the
config lacks is refused with the key named."""

import pytest

from neurips26.core.config import load_config
from neurips26.papers import available, info, steps_module


@pytest.fixture
def params(root):
    block = load_config(root, [root / "config" / "smoke.yaml"])["lm_assets"]
    return {"paper": "lm_assets", "scale": "smoke", **block}


def _build(params, out):
    steps = steps_module("lm_assets")
    steps.corpora(params, {}, out / "corpora")
    steps.tokenizer(params, {"corpora": out / "corpora"}, out / "tokenizer")
    return out


def test_is_a_step_group_not_a_paper():
    assert "lm_assets" not in available()
    mod, steps = info("lm_assets"), steps_module("lm_assets")
    assert all(callable(getattr(steps, s)) for s in mod.STEPS)


def test_corpora_and_tokenizer_are_reproducible_and_cover_the_text(params, tmp_path):
    from neurips26.core import lm
    from neurips26.data import lm_corpora

    a, b = _build(params, tmp_path / "a"), _build(params, tmp_path / "b")
    for rel in ("corpora/manifest.json", "tokenizer/tokenizer.json"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    manifest = lm_corpora.read_manifest(a / "corpora")
    tok = lm.load_tokenizer(a / "tokenizer")
    unk = tok.unk_token_id
    for name in sorted(manifest["corpora"]):
        line = lm_corpora.read_lines(a / "corpora", name, "valid")[0]
        ids = tok(line)["input_ids"]
        assert ids and unk not in ids, (name, line)
        assert tok.decode(ids, skip_special_tokens=True).replace(" ", "") == line.replace(" ", "")


def test_pretrain_refuses_a_model_the_config_lacks(params, tmp_path):
    with pytest.raises(ValueError, match="lm_assets.models"):
        steps_module("lm_assets").pretrain({**params, "model": "no_such_model"}, {}, tmp_path)

"""Converters of public low-resource benchmarks into the task-folder format `run` reads
(`neurips26.data.lm_corpora`: manifest.json, <task>.train.txt, <task>.valid.txt, <task>.cloze.jsonl).

Belebele (Bandarkar et al. 2024; one JSON-lines file per language variety, e.g. `swh_Latn.jsonl`,
each line a multiple-choice question on a FLORES-200 passage with the fields `link`,
`question_number`, `flores_passage`, `question`, `mc_answer1`..`mc_answer4` and
`correct_answer_num` "1".."4"): per language, the unique passages are split by a seeded draw into
calibration text (`train`, the passages a merge may calibrate or a LoRA baseline may train on) and
held-out passages (`valid`, perplexity); the cloze items are the questions on the held-out
passages only: prefix = passage, question and "Answer:", the four answers as choices. The language
named `general` (English by default) becomes the high-resource task for general ability.

    python -m neurips26.papers.bdc_merge.convert belebele IN_DIR OUT_DIR [--languages swh_Latn,...]
        [--general eng_Latn] [--heldout 0.5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

FIELDS = ("flores_passage", "question", "mc_answer1", "mc_answer2", "mc_answer3", "mc_answer4", "correct_answer_num")


def _clean(text: str) -> str:
    return " ".join(str(text).split())          # one line, single spaces: word positions are well defined


def read_belebele(path: Path) -> list[dict]:
    items = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise ValueError(f"{path}: line {i + 1} lacks the Belebele fields {missing}")
        answer = int(row["correct_answer_num"]) - 1
        if not 0 <= answer < 4:
            raise ValueError(f"{path}: line {i + 1}: correct_answer_num {row['correct_answer_num']!r} is not 1..4")
        items.append({"passage": _clean(row["flores_passage"]), "question": _clean(row["question"]),
                      "choices": [_clean(row[f"mc_answer{k}"]) for k in range(1, 5)], "answer": answer})
    if not items:
        raise ValueError(f"{path}: no questions")
    return items


def belebele_task(items: list[dict], heldout: float, rng: np.random.Generator) -> tuple[list[str], list[str], list[dict]]:
    """(train passages, held-out passages, cloze items on the held-out passages)."""
    passages = sorted({it["passage"] for it in items})
    n_held = max(1, int(round(heldout * len(passages))))
    if n_held >= len(passages):
        raise ValueError(f"heldout {heldout}: {len(passages)} passages leave none for calibration")
    held = {passages[i] for i in rng.choice(len(passages), n_held, replace=False)}
    train = [p for p in passages if p not in held]
    valid = [p for p in passages if p in held]
    cloze = [{"prefix": f"{it['passage']} {it['question']} Answer: ", "suffix": "", "choices": it["choices"],
              "answer": it["answer"]} for it in items if it["passage"] in held]
    return train, valid, cloze


def convert_belebele(in_dir: Path, out: Path, languages: list[str] | None = None, general: str = "eng_Latn",
                     heldout: float = 0.5, seed: int = 0) -> dict:
    in_dir, out = Path(in_dir), Path(out)
    files = {p.stem: p for p in sorted(in_dir.glob("*.jsonl"))}
    if general not in files:
        raise FileNotFoundError(f"{in_dir}: no {general}.jsonl for the general (high-resource) task")
    names = languages or [n for n in files if n != general]
    unknown = [n for n in names if n not in files]
    if unknown:
        raise FileNotFoundError(f"{in_dir}: no Belebele file for {unknown}; found {sorted(files)}")
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"corpora": {}, "source": "belebele", "heldout": heldout, "seed": seed}
    for k, (name, task, kind) in enumerate([(general, "general", "high")] + [(n, n, "low") for n in names]):
        train, valid, cloze = belebele_task(read_belebele(files[name]), heldout, np.random.default_rng([seed, k]))
        (out / f"{task}.train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
        (out / f"{task}.valid.txt").write_text("\n".join(valid) + "\n", encoding="utf-8")
        (out / f"{task}.cloze.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n"
                                                         for c in cloze), encoding="utf-8")
        manifest["corpora"][task] = {"kind": kind, "language": name, "train": len(train), "valid": len(valid),
                                     "cloze": len(cloze)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="format", required=True)
    b = sub.add_parser("belebele", help="Belebele JSON-lines files (one per language) -> task folder")
    b.add_argument("in_dir")
    b.add_argument("out_dir")
    b.add_argument("--languages", default="", help="comma-separated file stems (default: every file but --general)")
    b.add_argument("--general", default="eng_Latn")
    b.add_argument("--heldout", type=float, default=0.5)
    b.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    manifest = convert_belebele(Path(args.in_dir), Path(args.out_dir), [x for x in args.languages.split(",") if x],
                                args.general, args.heldout, args.seed)
    print(json.dumps(manifest["corpora"], indent=1))


if __name__ == "__main__":
    main()

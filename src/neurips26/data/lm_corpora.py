"""Offline text corpora for the language-model papers, generated from one probabilistic grammar.

One abstract sentence distribution (a probabilistic context-free grammar over lemmas with
number agreement and selectional preferences: each verb takes subjects and objects from some
noun classes) is realised as several languages. The "high-resource" language and each
"low-resource" language differ in their own pseudo-word lexicon (different syllable inventory),
word order (SVO, SOV, VSO, ...), adjective position, plural and agreement morphology (suffix,
prefix or separate particle), object case marking, pre- or postpositions and whether
determiners are written, so a low-resource sentence is not a token-by-token cipher of its
high-resource counterpart. Two "specialised knowledge" sets are synthetic fact bases (entities
with attributes), stated in the high-resource language and asked as multiple-choice cloze.

Output folder format (also the format `config/paper.yaml` points at for real tasks):
  manifest.json              {"corpora": {name: {"kind": "high"|"low"|"knowledge", ...}}}
  <name>.train.txt           one sentence (document) per line
  <name>.valid.txt           held-out sentences (perplexity)
  <name>.cloze.jsonl         {"prefix": str, "suffix": str, "choices": [str], "answer": int}
                             (the text with choice c is prefix + c + suffix)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

NOUN_CLASSES = ("person", "animal", "thing", "place")
# Which noun classes each verb class takes as subject and object.
VERB_FRAMES = {
    "eat": (("person", "animal"), ("thing",)),
    "see": (("person", "animal"), ("person", "animal", "thing", "place")),
    "carry": (("person",), ("thing", "animal")),
    "visit": (("person",), ("place", "person")),
    "chase": (("animal", "person"), ("animal",)),
}


@dataclass
class Lemmas:
    nouns: dict[str, list[str]]          # class -> lemma ids
    verbs: dict[str, list[str]]          # frame -> lemma ids
    intransitive: list[str]
    adjectives: list[str]
    prepositions: list[str]


@dataclass
class LanguageSpec:
    """How one language realises the shared abstract sentences."""
    name: str
    consonants: str
    vowels: str
    order: str = "SVO"                   # permutation of S, V, O
    adjective_after: bool = False
    determiners: bool = True
    plural: str = "suffix"               # suffix | prefix | particle
    agreement: str = "suffix"            # suffix | prefix | none
    object_case: str = "none"            # none | suffix | particle
    postpositions: bool = False
    seed: int = 0
    lexicon: dict[str, str] = field(default_factory=dict)
    affixes: dict[str, str] = field(default_factory=dict)


def _syllable_words(rng: np.random.Generator, consonants: str, vowels: str, count: int,
                    syllables: tuple[int, int], taken: set[str]) -> list[str]:
    words = []
    while len(words) < count:
        n = int(rng.integers(syllables[0], syllables[1] + 1))
        w = "".join(consonants[rng.integers(len(consonants))] + vowels[rng.integers(len(vowels))] for _ in range(n))
        if rng.random() < 0.3:
            w += consonants[rng.integers(len(consonants))]
        if w not in taken:
            taken.add(w)
            words.append(w)
    return words


def make_lemmas(nouns_per_class: int, verbs_per_frame: int, intransitive: int, adjectives: int,
                prepositions: int) -> Lemmas:
    return Lemmas(
        nouns={c: [f"n_{c}_{i}" for i in range(nouns_per_class)] for c in NOUN_CLASSES},
        verbs={f: [f"v_{f}_{i}" for i in range(verbs_per_frame)] for f in VERB_FRAMES},
        intransitive=[f"vi_{i}" for i in range(intransitive)],
        adjectives=[f"a_{i}" for i in range(adjectives)],
        prepositions=[f"p_{i}" for i in range(prepositions)],
    )


def all_lemmas(lemmas: Lemmas) -> list[str]:
    out = [x for c in NOUN_CLASSES for x in lemmas.nouns[c]]
    out += [x for f in VERB_FRAMES for x in lemmas.verbs[f]]
    return out + lemmas.intransitive + lemmas.adjectives + lemmas.prepositions + ["det_def", "det_indef", "and"]


def build_lexicon(spec: LanguageSpec, lemmas: Lemmas) -> LanguageSpec:
    """Give the language its own pseudo-words for every lemma and its affixes."""
    rng = np.random.default_rng([spec.seed, 7919])
    names = all_lemmas(lemmas)
    taken: set[str] = set()
    words = _syllable_words(rng, spec.consonants, spec.vowels, len(names), (2, 3), taken)
    spec.lexicon = dict(zip(names, words))
    short = _syllable_words(rng, spec.consonants, spec.vowels, 4, (1, 1), taken)
    spec.affixes = dict(zip(("plural", "agreement", "object", "spare"), short))
    return spec


@dataclass
class Clause:
    subject: dict
    verb: str
    obj: dict | None
    pp: tuple[str, dict] | None


def _noun_phrase(rng, lemmas: Lemmas, classes: Sequence[str], p_adj: float) -> dict:
    cls = classes[rng.integers(len(classes))]
    noun = lemmas.nouns[cls][rng.integers(len(lemmas.nouns[cls]))]
    adjs = []
    while rng.random() < p_adj and len(adjs) < 2:
        adjs.append(lemmas.adjectives[rng.integers(len(lemmas.adjectives))])
    return {"noun": noun, "cls": cls, "plural": bool(rng.random() < 0.35), "definite": bool(rng.random() < 0.6),
            "adjectives": adjs}


def sample_clause(rng: np.random.Generator, lemmas: Lemmas, p_adj: float = 0.3, p_pp: float = 0.25,
                  p_intransitive: float = 0.2) -> Clause:
    if rng.random() < p_intransitive:
        subj = _noun_phrase(rng, lemmas, ("person", "animal"), p_adj)
        verb = lemmas.intransitive[rng.integers(len(lemmas.intransitive))]
        obj = None
    else:
        frames = list(VERB_FRAMES)
        frame = frames[rng.integers(len(frames))]
        subj_classes, obj_classes = VERB_FRAMES[frame]
        subj = _noun_phrase(rng, lemmas, subj_classes, p_adj)
        verb = lemmas.verbs[frame][rng.integers(len(lemmas.verbs[frame]))]
        obj = _noun_phrase(rng, lemmas, obj_classes, p_adj)
    pp = None
    if rng.random() < p_pp:
        pp = (lemmas.prepositions[rng.integers(len(lemmas.prepositions))],
              _noun_phrase(rng, lemmas, ("place", "thing"), p_adj * 0.5))
    return Clause(subj, verb, obj, pp)


def _realise_np(spec: LanguageSpec, np_: dict, is_object: bool) -> list[str]:
    lex, aff = spec.lexicon, spec.affixes
    noun = lex[np_["noun"]]
    words: list[str] = []
    if np_["plural"]:
        if spec.plural == "suffix":
            noun = noun + aff["plural"]
        elif spec.plural == "prefix":
            noun = aff["plural"] + noun
        else:
            words.append(aff["plural"])
    if is_object and spec.object_case == "suffix":
        noun = noun + aff["object"]
    adjs = [lex[a] for a in np_["adjectives"]]
    core = ([noun] + adjs) if spec.adjective_after else (adjs + [noun])
    words = words + core
    if spec.determiners:
        words = [lex["det_def" if np_["definite"] else "det_indef"]] + words
    if is_object and spec.object_case == "particle":
        words = words + [aff["object"]]
    return words


def realise_clause(spec: LanguageSpec, clause: Clause) -> list[str]:
    lex, aff = spec.lexicon, spec.affixes
    verb = lex[clause.verb]
    if clause.subject["plural"]:
        if spec.agreement == "suffix":
            verb = verb + aff["agreement"]
        elif spec.agreement == "prefix":
            verb = aff["agreement"] + verb
    parts = {"S": _realise_np(spec, clause.subject, False), "V": [verb],
             "O": _realise_np(spec, clause.obj, True) if clause.obj is not None else []}
    words = [w for slot in spec.order for w in parts[slot]]
    if clause.pp is not None:
        prep, np_ = clause.pp
        phrase = _realise_np(spec, np_, False)
        words += (phrase + [lex[prep]]) if spec.postpositions else ([lex[prep]] + phrase)
    return words


def sentence(spec: LanguageSpec, clauses: Sequence[Clause]) -> str:
    words: list[str] = []
    for i, c in enumerate(clauses):
        if i:
            words.append(spec.lexicon["and"])
        words += realise_clause(spec, c)
    return " ".join(words) + " ."


def sample_sentences(spec: LanguageSpec, lemmas: Lemmas, n: int, rng: np.random.Generator,
                     p_coordinate: float = 0.15) -> list[str]:
    out = []
    for _ in range(n):
        clauses = [sample_clause(rng, lemmas)]
        if rng.random() < p_coordinate:
            clauses.append(sample_clause(rng, lemmas))
        out.append(sentence(spec, clauses))
    return out


def _with_slot(spec: LanguageSpec, clause: Clause, slot: str) -> tuple[str, str, list[str]]:
    """Prefix and suffix around the one-word slot (the verb, or the object noun) of a clause."""
    marker = "\x00"
    if slot == "verb":
        saved = spec.lexicon[clause.verb]
        spec.lexicon[clause.verb] = marker
        words = realise_clause(spec, clause)
        spec.lexicon[clause.verb] = saved
    else:
        saved = spec.lexicon[clause.obj["noun"]]
        spec.lexicon[clause.obj["noun"]] = marker
        words = realise_clause(spec, clause)
        spec.lexicon[clause.obj["noun"]] = saved
    text = " ".join(words) + " ."
    i = text.index(marker)
    # the slot word may carry affixes around the marker inside the same word
    start = text.rfind(" ", 0, i) + 1
    end = text.find(" ", i)
    word_template = text[start:end]
    return text[:start], text[end:], [word_template]


def language_cloze(spec: LanguageSpec, lemmas: Lemmas, n: int, rng: np.random.Generator,
                   choices: int = 4) -> list[dict]:
    """Object-noun cloze: the right noun against nouns of classes the verb does not take
    (same inflection), so answering needs the language's lexicon and selectional preferences."""
    items = []
    while len(items) < n:
        clause = sample_clause(rng, lemmas, p_pp=0.0, p_intransitive=0.0)
        frame = clause.verb.split("_")[1]
        wrong_classes = [c for c in NOUN_CLASSES if c not in VERB_FRAMES[frame][1]]
        if not wrong_classes:
            continue
        prefix, suffix, (template,) = _with_slot(spec, clause, "object")
        pool = [x for c in wrong_classes for x in lemmas.nouns[c]]
        distractors = list(rng.choice(pool, size=choices - 1, replace=False))
        options = [template.replace("\x00", spec.lexicon[x]) for x in [clause.obj["noun"], *distractors]]
        order = rng.permutation(choices)
        items.append({"prefix": prefix, "suffix": suffix, "choices": [options[k] for k in order],
                      "answer": int(np.argmax(order == 0))})
    return items


def high_resource_spec(seed: int) -> LanguageSpec:
    return LanguageSpec(name="high", consonants="ptkbdgmnlrsv", vowels="aeiou", order="SVO",
                        adjective_after=False, determiners=True, plural="suffix", agreement="suffix",
                        object_case="none", postpositions=False, seed=seed)


def low_resource_spec(name: str, settings: dict, seed: int) -> LanguageSpec:
    allowed = {k for k in LanguageSpec.__dataclass_fields__} - {"name", "seed", "lexicon", "affixes"}
    unknown = set(settings) - allowed
    if unknown:
        raise ValueError(f"config key 'lm_assets.corpora.low_resource.{name}': unknown settings {sorted(unknown)}")
    if sorted(settings.get("order", "SVO")) != ["O", "S", "V"]:
        raise ValueError(f"config key 'lm_assets.corpora.low_resource.{name}.order': a permutation of S, V, O")
    return LanguageSpec(name=name, seed=seed, **settings)


# ---- knowledge sets ----------------------------------------------------------------------------

def knowledge_base(name: str, entities: int, attributes: int, values: int, spec: LanguageSpec,
                   seed: int) -> dict:
    """Entities (pseudo-names) with `attributes` attributes, each taking one of `values` values;
    relation and value words are new words of the high-resource language."""
    rng = np.random.default_rng([seed, 104729])
    taken = set(spec.lexicon.values()) | set(spec.affixes.values())
    names = _syllable_words(rng, spec.consonants, spec.vowels, entities, (3, 3), taken)
    relations = _syllable_words(rng, spec.consonants, spec.vowels, attributes, (2, 2), taken)
    value_words = [_syllable_words(rng, spec.consonants, spec.vowels, values, (2, 2), taken)
                   for _ in range(attributes)]
    facts = [[int(rng.integers(values)) for _ in range(attributes)] for _ in range(entities)]
    return {"name": name, "entities": names, "relations": relations, "values": value_words, "facts": facts}


def fact_statements(kb: dict, spec: LanguageSpec) -> list[tuple[int, int, str, str, str]]:
    """(entity, attribute, prefix, value word, suffix) for every fact, in the template
    `<det> <relation> <of> <entity> <is> <value> .`"""
    lex = spec.lexicon
    out = []
    for e, name in enumerate(kb["entities"]):
        for a, rel in enumerate(kb["relations"]):
            prefix = f"{lex['det_def']} {rel} {lex['p_0']} {name} {lex['vi_0']} "
            out.append((e, a, prefix, kb["values"][a][kb["facts"][e][a]], " ."))
    return out


def knowledge_cloze(kb: dict, spec: LanguageSpec, rng: np.random.Generator, choices: int = 4) -> list[dict]:
    items = []
    for e, a, prefix, value, suffix in fact_statements(kb, spec):
        wrong = [v for v in kb["values"][a] if v != value]
        options = [value, *rng.choice(wrong, size=choices - 1, replace=False)]
        order = rng.permutation(choices)
        items.append({"prefix": prefix, "suffix": suffix, "choices": [str(options[k]) for k in order],
                      "answer": int(np.argmax(order == 0))})
    return items


# ---- writing and reading -----------------------------------------------------------------------

def generate(out: Path, cfg: dict) -> dict:
    """Write every corpus of the config block `lm_assets.corpora` under `out`; returns the manifest."""
    seed = int(cfg["seed"])
    lx = cfg["lexicon"]
    lemmas = make_lemmas(lx["nouns_per_class"], lx["verbs_per_frame"], lx["intransitive"], lx["adjectives"],
                         lx["prepositions"])
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"corpora": {}}

    def write(name, train, valid, cloze, info):
        (out / f"{name}.train.txt").write_text("\n".join(train) + "\n")
        (out / f"{name}.valid.txt").write_text("\n".join(valid) + "\n")
        (out / f"{name}.cloze.jsonl").write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in cloze))
        manifest["corpora"][name] = {**info, "train": len(train), "valid": len(valid), "cloze": len(cloze)}

    high = build_lexicon(high_resource_spec(seed), lemmas)
    specs = [(high, cfg["high_resource_sentences"], "high")]
    for i, (name, settings) in enumerate(sorted(cfg["low_resource"].items())):
        specs.append((build_lexicon(low_resource_spec(name, settings, seed + 101 * (i + 1)), lemmas),
                      cfg["low_resource_sentences"], "low"))
    for k, (spec, n_train, kind) in enumerate(specs):
        rng = np.random.default_rng([seed, 31, k])
        train = sample_sentences(spec, lemmas, n_train, rng)
        valid = sample_sentences(spec, lemmas, cfg["valid_sentences"], rng)
        cloze = language_cloze(spec, lemmas, cfg["cloze_questions"], rng)
        write(spec.name, train, valid, cloze, {"kind": kind, "order": spec.order})
    kc = cfg["knowledge"]
    for j, name in enumerate(sorted(kc["sets"])):
        kb = knowledge_base(name, kc["entities"], kc["attributes"], kc["values"], high, seed + 1009 * (j + 1))
        rng = np.random.default_rng([seed, 37, j])
        statements = [p + v + s for _, _, p, v, s in fact_statements(kb, high)]
        # the fact base is the knowledge: training repeats it, perplexity is measured on it
        train = [statements[i] for i in rng.permutation(np.repeat(np.arange(len(statements)), kc["repeats"]))]
        write(name, train, statements, knowledge_cloze(kb, high, rng), {"kind": "knowledge",
                                                                         "entities": kc["entities"]})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"corpus folder {folder} has no manifest.json")
    return json.loads(path.read_text())


def read_lines(folder: Path, name: str, split: str) -> list[str]:
    path = Path(folder) / f"{name}.{split}.txt"
    if not path.exists():
        raise FileNotFoundError(f"corpus file {path} does not exist")
    return [line for line in path.read_text().splitlines() if line.strip()]


def read_cloze(folder: Path, name: str) -> list[dict]:
    path = Path(folder) / f"{name}.cloze.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"cloze file {path} does not exist")
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for i, it in enumerate(items):
        if not {"prefix", "suffix", "choices", "answer"} <= set(it) or not 0 <= it["answer"] < len(it["choices"]):
            raise ValueError(f"{path}: line {i + 1} needs prefix, suffix, choices and an answer index")
    return items

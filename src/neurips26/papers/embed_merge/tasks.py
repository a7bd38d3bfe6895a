"""Offline tasks: eight image tasks derived from the project's procedural image sets and five
text classification tasks written from templates.

Images (3 x size x size in [0, 1]): the ViT is pre-trained on the 10 shape classes of
`neurips26.data.images.shapes`; the fine-tuning tasks change the inputs (rotated, inverted,
noisy shapes), the label set (4 shape families) or the image source (scikit-learn digits:
the digit, its parity, greater than 4, and the digit mod 3 on inverted images).
Text: sentiment (of the last clause, with negated adjectives and contrasting clauses), topic
(half of the sentences name a set-aside noun of another topic first), tense (simple,
progressive and perfect forms), negation (with double negatives: "did not fail to") and which of
two quantities is larger (half of the pairs one apart, spelled out or in digits); sentences are
drawn from word lists and templates with a seeded generator.
"""

from __future__ import annotations

import numpy as np
import torch

VISION_TASKS = ("digits", "shapes_rotated", "digit_parity", "shapes_inverted", "digit_greater_than_4",
                "shapes_noisy", "digits_inverted_mod3", "shape_families")
TEXT_TASKS = ("sentiment", "topic", "tense", "negation", "more_or_fewer")

SHAPE_FAMILIES = (0, 0, 1, 1, 1, 2, 2, 3, 3, 3)  # round, polygon, strokes, texture


def pretraining_set(n: int, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    from neurips26.data.images import shapes

    x, y = shapes(n, size, seed=seed)
    return torch.from_numpy(x), torch.from_numpy(y)


def _split(x, y, sizes: dict, rng: np.random.Generator) -> dict:
    order = rng.permutation(len(y))
    out, i = {}, 0
    for name, n in sizes.items():
        idx = torch.from_numpy(order[i:i + n])
        out[name] = (x[idx].contiguous(), y[idx].contiguous())
        i += n
    if i > len(y):
        raise ValueError(f"config key 'embed_merge.variants.<vision>.data': splits need {i} images, only {len(y)} exist")
    return out


def vision_task(name: str, size: int, sizes: dict, seed: int) -> tuple[dict, int]:
    """{'train'|'val'|'test': (x, y)} and the number of classes of one image task."""
    from neurips26.data.images import digits, shapes

    rng = np.random.default_rng(seed)
    if name.startswith("digit"):
        x, y = digits(size)
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        if name == "digits":
            classes = 10
        elif name == "digit_parity":
            y, classes = y % 2, 2
        elif name == "digit_greater_than_4":
            y, classes = (y > 4).long(), 2
        elif name == "digits_inverted_mod3":
            x, y, classes = 1 - x, y % 3, 3
        else:
            raise KeyError(name)
        return _split(x, y, sizes, rng), classes
    x, y = shapes(sum(sizes.values()), size, seed=int(rng.integers(2**31)))
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    classes = 10
    if name == "shapes_rotated":
        x = torch.rot90(x, 1, dims=(2, 3))
    elif name == "shapes_inverted":
        x = 1 - x
    elif name == "shapes_noisy":
        x = (x + 0.25 * torch.from_numpy(rng.standard_normal(x.shape).astype(np.float32))).clamp(0, 1)
    elif name == "shape_families":
        y, classes = torch.tensor(SHAPE_FAMILIES)[y], 4
    else:
        raise KeyError(f"config key 'embed_merge.variants.<vision>.tasks': unknown task '{name}'")
    return _split(x, y, sizes, rng), classes


# ---------------------------------------------------------------- text
PEOPLE = ["my sister", "the teacher", "our neighbour", "a student", "the doctor", "my friend", "the driver",
          "his uncle", "the manager", "a farmer", "the artist", "her cousin"]
THINGS = ["movie", "meal", "hotel", "phone", "concert", "book", "service", "game", "trip", "show", "class", "car"]
POSITIVE = ["wonderful", "excellent", "delightful", "fantastic", "great", "lovely", "superb", "enjoyable", "brilliant"]
NEGATIVE = ["terrible", "awful", "boring", "disappointing", "horrible", "dreadful", "poor", "annoying", "bad"]
ADVERBS = ["", "really ", "quite ", "truly ", "rather ", "very "]
TOPICS = {
    "sports": ["the football match", "the tennis final", "the marathon", "the basketball team", "the swimming race",
               "the goalkeeper", "the league table"],
    "food": ["the pasta recipe", "the chocolate cake", "the vegetable soup", "the bakery", "the spicy curry",
             "the breakfast menu", "the fresh bread"],
    "technology": ["the new laptop", "the software update", "the smartphone app", "the computer chip",
                   "the wireless network", "the programming language", "the robot"],
    "weather": ["the heavy rain", "the snow storm", "the sunny afternoon", "the strong wind", "the cold front",
                "the thunderstorm", "the forecast for tomorrow"],
}
TOPIC_FRAMES = ["{p} talked about {n} {t}.", "{p} read an article on {n}.", "everyone was discussing {n} {t}.",
                "{p} asked me about {n}.", "there was news about {n} {t}."]
# the labelled noun comes after a noun of another topic that the sentence sets aside
TOPIC_DISTRACTED = ["{p} ignored {d} and talked about {n} {t}.", "instead of {d}, {p} asked me about {n}.",
                    "{p} stopped reading about {d} and read about {n}.", "not {d} but {n} was in the news {t}."]
TIMES = ["yesterday", "this morning", "last night", "today", "at lunch", "on the radio"]
# tense: past, present, future, each in simple, progressive and perfect or periphrastic forms
VERBS = [("walked to", "walks to", "will walk to", "was walking to", "is walking to", "is going to walk to",
          "had walked to", "has walked to", "will be walking to"),
         ("cleaned", "cleans", "will clean", "was cleaning", "is cleaning", "is going to clean",
          "had cleaned", "has cleaned", "will be cleaning"),
         ("painted", "paints", "will paint", "was painting", "is painting", "is going to paint",
          "had painted", "has painted", "will be painting"),
         ("visited", "visits", "will visit", "was visiting", "is visiting", "is going to visit",
          "had visited", "has visited", "will be visiting"),
         ("opened", "opens", "will open", "was opening", "is opening", "is going to open",
          "had opened", "has opened", "will be opening"),
         ("watched", "watches", "will watch", "was watching", "is watching", "is going to watch",
          "had watched", "has watched", "will be watching")]
PLACES = ["the kitchen", "the old house", "the school", "the garden", "the library", "the station", "the office"]
NEG_VERBS = [("like", "liked"), ("finish", "finished"), ("open", "opened"), ("answer", "answered"),
             ("read", "read"), ("enjoy", "enjoyed"), ("sign", "signed")]
NEG_OBJECTS = ["the letter", "the report", "the email", "the contract", "the novel", "the test", "the door"]
# negation: label 1 when the action did not happen; double negatives mean it did
NOT_DONE = ["did not {b}", "didn't {b}", "never {p}", "failed to {b}", "refused to {b}", "forgot to {b}"]
DONE = ["{p}", "did {b}", "always {p}", "did not fail to {b}", "never failed to {b}", "did not forget to {b}",
        "remembered to {b}"]
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
ITEMS = ["apples", "books", "chairs", "birds", "coins", "cups", "pens", "boxes", "shirts", "plates"]
CONTAINERS = ["in the basket", "on the table", "in the room", "on the shelf", "in the box", "near the door"]


def number_word(i: int, rng: np.random.Generator) -> str:
    """The number NUMBERS[i] (i + 1) spelled out or, half of the time, in digits."""
    return NUMBERS[i] if rng.random() < 0.5 else str(i + 1)


def _sentence(task: str, rng: np.random.Generator) -> tuple[str, int]:
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    if task == "sentiment":
        # the label is the sentiment of the last clause; "not" flips the adjective it precedes
        label = int(rng.integers(2))
        negate = bool(rng.random() < 0.4)
        adj = pick(POSITIVE if label != negate else NEGATIVE)
        last = f"{'not ' if negate else pick(ADVERBS)}{adj}"
        form = int(rng.integers(3))
        if form == 0:
            frame = pick(["the {t} was {j}.", "i thought the {t} was {j}.", "{p} said the {t} was {j}.",
                          "honestly, the {t} felt {j}."])
            return frame.format(t=pick(THINGS), j=last, p=pick(PEOPLE)), label
        first = pick(NEGATIVE if label else POSITIVE)  # the clause the sentence turns away from
        t1, t2 = rng.choice(len(THINGS), size=2, replace=False)
        if form == 1:
            return f"the {THINGS[t1]} was {first}, but the {THINGS[t2]} was {last}.", label
        return f"although the {THINGS[t1]} was {first}, the {THINGS[t2]} was {last}.", label
    if task == "topic":
        label = int(rng.integers(4))
        noun = pick(TOPICS[list(TOPICS)[label]])
        if rng.random() < 0.5:
            return pick(TOPIC_FRAMES).format(p=pick(PEOPLE), n=noun, t=pick(TIMES)), label
        other = list(TOPICS)[(label + 1 + int(rng.integers(3))) % 4]
        return pick(TOPIC_DISTRACTED).format(p=pick(PEOPLE), n=noun, d=pick(TOPICS[other]), t=pick(TIMES)), label
    if task == "tense":
        label = int(rng.integers(3))
        form = int(rng.integers(3))
        return f"{pick(PEOPLE)} {pick(VERBS)[3 * form + label]} {pick(PLACES)}.", label
    if task == "negation":
        label = int(rng.integers(2))
        base, past = pick(NEG_VERBS)
        verb = pick(NOT_DONE if label else DONE).format(b=base, p=past)
        return f"{pick(PEOPLE)} {verb} {pick(NEG_OBJECTS)}.", label
    if task == "more_or_fewer":
        # half of the pairs differ by one; numbers spelled out or in digits
        if rng.random() < 0.5:
            lo = int(rng.integers(len(NUMBERS) - 1))
            a, b = (lo, lo + 1) if rng.random() < 0.5 else (lo + 1, lo)
        else:
            a, b = (int(x) for x in rng.choice(len(NUMBERS), size=2, replace=False))
        i1, i2 = rng.choice(len(ITEMS), size=2, replace=False)
        label = int(a > b)
        return (f"there are {number_word(a, rng)} {ITEMS[i1]} and {number_word(b, rng)} {ITEMS[i2]} "
                f"{pick(CONTAINERS)}."), label
    raise KeyError(f"config key 'embed_merge.variants.<language>.tasks': unknown task '{task}'")


TEXT_CLASSES = {"sentiment": 2, "topic": 4, "tense": 3, "negation": 2, "more_or_fewer": 2}


def text_task(name: str, sizes: dict, seed: int) -> tuple[dict, int]:
    """{'train'|'val'|'test': (sentences, labels)} and the number of classes of one text task."""
    rng = np.random.default_rng(seed)
    out = {}
    for split, n in sizes.items():
        pairs = [_sentence(name, rng) for _ in range(n)]
        out[split] = ([s for s, _ in pairs], torch.tensor([y for _, y in pairs]))
    return out, TEXT_CLASSES[name]

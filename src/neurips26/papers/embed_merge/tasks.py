"""Offline tasks: eight image tasks derived from the project's procedural image sets and five
text classification tasks written from templates.

Images (3 x size x size in [0, 1]): the ViT is pre-trained on the 10 shape classes of
`neurips26.data.images.shapes`; the fine-tuning tasks change the inputs (rotated, inverted,
noisy shapes), the label set (4 shape families) or the image source (scikit-learn digits:
the digit, its parity, greater than 4, and the digit mod 3 on inverted images).
Text: sentiment, topic, tense, negation and which of two quantities is larger; sentences are
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
TIMES = ["yesterday", "this morning", "last night", "today", "at lunch", "on the radio"]
VERBS = [("walked to", "walks to", "will walk to"), ("cleaned", "cleans", "will clean"),
         ("painted", "paints", "will paint"), ("visited", "visits", "will visit"),
         ("opened", "opens", "will open"), ("watched", "watches", "will watch"),
         ("fixed", "fixes", "will fix"), ("called", "calls", "will call")]
PLACES = ["the kitchen", "the old house", "the school", "the garden", "the library", "the station", "the office"]
NEG_VERBS = [("like", "likes"), ("finish", "finished"), ("open", "opened"), ("answer", "answered"),
             ("read", "read"), ("enjoy", "enjoyed"), ("sign", "signed")]
NEG_OBJECTS = ["the letter", "the report", "the email", "the contract", "the novel", "the test", "the door"]
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
ITEMS = ["apples", "books", "chairs", "birds", "coins", "cups", "pens", "boxes", "shirts", "plates"]
CONTAINERS = ["in the basket", "on the table", "in the room", "on the shelf", "in the box", "near the door"]


def _sentence(task: str, rng: np.random.Generator) -> tuple[str, int]:
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    if task == "sentiment":
        label = int(rng.integers(2))
        adj = pick(POSITIVE if label else NEGATIVE)
        frame = pick(["the {t} was {a}{j}.", "i thought the {t} was {a}{j}.", "{p} said the {t} was {a}{j}.",
                      "what a {a}{j} {t}.", "honestly, the {t} felt {a}{j}."])
        return frame.format(t=pick(THINGS), a=pick(ADVERBS), j=adj, p=pick(PEOPLE)), label
    if task == "topic":
        label = int(rng.integers(4))
        noun = pick(TOPICS[list(TOPICS)[label]])
        return pick(TOPIC_FRAMES).format(p=pick(PEOPLE), n=noun, t=pick(TIMES)), label
    if task == "tense":
        label = int(rng.integers(3))
        return f"{pick(PEOPLE)} {pick(VERBS)[label]} {pick(PLACES)}.", label
    if task == "negation":
        label = int(rng.integers(2))
        base, past = pick(NEG_VERBS)
        who, obj = pick(PEOPLE), pick(NEG_OBJECTS)
        if label:
            verb = pick([f"did not {base}", f"didn't {base}", f"never {past}", f"does not {base}"])
        else:
            verb = pick([past, f"did {base}", f"always {past}", f"quickly {past}"])
        return f"{who} {verb} {obj}.", label
    if task == "more_or_fewer":
        a, b = rng.choice(len(NUMBERS), size=2, replace=False)
        i1, i2 = rng.choice(len(ITEMS), size=2, replace=False)
        label = int(a > b)
        return f"there are {NUMBERS[a]} {ITEMS[i1]} and {NUMBERS[b]} {ITEMS[i2]} {pick(CONTAINERS)}.", label
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

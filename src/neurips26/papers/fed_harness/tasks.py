"""The federated harness's text classification tasks live in `neurips26.data.text_classification`
(the LoRA harness uses them too, and neither harness imports the other); this name is the same
module, kept for the harness's callers."""

import sys

from neurips26.data import text_classification

sys.modules[__name__] = text_classification

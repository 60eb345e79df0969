"""Hand-picked captions for QACE explanations: (category, candidate, references, wrong word).

``wrong`` is the word of the candidate that the references contradict or do not support;
``None`` for captions the references support. docs/QACE.md prints their tables
(``python benchmarks/qace_examples.py``).
"""

REFS_HORSE = ["Two men are riding horses on a beach.", "Two men ride brown horses along the beach.",
              "Two people riding horses on the sand by the ocean."]
REFS_DOG = ["A brown dog catches a ball in the grass.", "A brown dog is catching a red ball.",
            "A dog jumps to catch a ball on the lawn."]
REFS_GIRL = ["A little girl in a pink dress is climbing the stairs.",
             "A girl wearing a pink dress climbs stairs.", "A small girl climbs up the wooden stairs."]
REFS_KIDS = ["Three children play soccer in a park.", "Three kids are playing soccer on the grass.",
             "Three young boys kick a soccer ball in the park."]
REFS_BIKE = ["A man in a red shirt rides a bicycle down the street.",
             "A man wearing a red shirt is riding a bike on the road.",
             "A cyclist in red rides down a city street."]

CASES = [
    ("hallucinated object", "Two men are riding camels on a beach.", REFS_HORSE, "camel"),
    ("hallucinated object", "A brown dog catches a frisbee in the grass.", REFS_DOG, "frisbee"),
    ("hallucinated object", "A man in a red shirt rides a horse down the street.", REFS_BIKE, "horse"),
    ("wrong place", "Two men are riding horses on a mountain.", REFS_HORSE, "mountain"),
    ("wrong place", "A little girl in a pink dress is climbing a tree.", REFS_GIRL, "tree"),
    ("wrong attribute", "A black dog catches a ball in the grass.", REFS_DOG, "black"),
    ("wrong attribute", "A little girl in a blue dress is climbing the stairs.", REFS_GIRL, "blue"),
    ("wrong attribute", "A man in a green shirt rides a bicycle down the street.", REFS_BIKE, "green"),
    ("wrong attribute", "Two men ride white horses along the beach.", REFS_HORSE, "white"),
    ("wrong count", "Five men are riding horses on a beach.", REFS_HORSE, "five"),
    ("wrong count", "Two children play soccer in a park.", REFS_KIDS, "two"),
    ("wrong subject", "A woman in a red shirt rides a bicycle down the street.", REFS_BIKE, "woman"),
    ("wrong subject", "A cat catches a ball in the grass.", REFS_DOG, "cat"),
    ("wrong clothing", "A little girl in a pink hat is climbing the stairs.", REFS_GIRL, "hat"),
    ("wrong activity object", "Three children play basketball in a park.", REFS_KIDS, "basketball"),
    ("correct paraphrase", "Two men ride horses on the beach.", REFS_HORSE, None),
    ("correct paraphrase", "A brown dog catches a ball.", REFS_DOG, None),
    ("correct paraphrase", "A girl in a pink dress climbs the stairs.", REFS_GIRL, None),
    ("correct paraphrase", "Three kids play soccer in the park.", REFS_KIDS, None),
    ("correct paraphrase", "A man rides a bike down the street.", REFS_BIKE, None),
]

"""Every loader on a fixture holding the oddities its format allows, each with its stated outcome
(docs/DATA_FORMATS.md, Oddities of published files):

- a line break inside a caption or reference (``\\n``, ``\\r\\n``, U+2028 where the format can hold
  it) is read as a space and counted in the protocol (``breaks: space:N``); strict mode
  (``line_breaks="refuse"``) refuses the table naming the first such text. In line-based files
  ``\\n`` and ``\\r\\n`` end the line, so only U+2028 (and a lone ``\\r``) can sit inside one;
- a byte-order mark opening a file is dropped;
- trailing spaces are kept by the as-released loaders (THumB, Nebula, Polaris) and stripped by
  the whitespace-normalising ones;
- duplicate references are kept as released;
- an empty reference is dropped and counted (``empty_refs: dropped:N``); an empty candidate is an
  error naming its row;
- ids that JSON may give as numbers or strings are read as text (``7`` and ``"7"`` are one id);
  booleans, fractions and null are refused.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from capeval import data
from capeval.errors import InputError

from .modern_fixtures import pin_fixtures, pinned_root

BOM = "\ufeff"


class Root(type(Path())):  # a data root that can rewrite its fixture file (and pin it again)
    def __new__(cls, path, put):
        self = super().__new__(cls, path)
        self.put = put
        return self
LS = "\u2028"


def strict(name, root, **options):
    """The table under strict mode must be refused, naming a text that held a line break."""
    with pytest.raises(InputError, match=r"contains a line break .*Strict mode \(--strict-line-breaks"):
        data.load(name, root, line_breaks="refuse", **options)


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def jsonl(records) -> str:
    """JSON Lines with Windows line ends, after a byte-order mark."""
    return BOM + "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records)


# ---- Nebula (EXPERT's JSON list) ---------------------------------------------------------------

NEBULA = [
    {"imgid": "n1", "mt": "a dog\nruns", "score": 0.5,
     "refs": ["A dog runs.\r\n", "A dog runs.\r\n", "A dog  on" + LS + "grass. ", "", "A brown dog."]},
    {"imgid": 7, "mt": "two cats ", "score": 0.25, "refs": ["Two cats.", "Two cats."]},
    {"imgid": "7", "mt": "a cat", "score": 1, "refs": ["A cat sits."]},
]


@pytest.fixture
def nebula_root(tmp_path, monkeypatch):
    root = pinned_root(tmp_path, monkeypatch, "nebula")

    def put(items):
        write(root / "nebula/nebula_test.json", BOM + json.dumps(items, ensure_ascii=False, indent=1))
        pin_fixtures(monkeypatch, root)
    put(NEBULA)
    return Root(root, put)


def test_nebula(nebula_root):
    t = data.load("nebula", nebula_root)
    assert t.candidates == ["a dog runs", "two cats ", "a cat"]  # as released: trailing space kept
    assert t.references == [["A dog runs.  ", "A dog runs.  ", "A dog  on grass. ", "A brown dog."],
                            ["Two cats.", "Two cats."], ["A cat sits."]]
    assert t.protocol["breaks"] == "space:4" and t.protocol["empty_refs"] == "dropped:1"
    assert t.groups == ["n1", "7", "7"] and t.images == ["n1.jpg", "7.jpg", "7.jpg"]
    assert t.human.tolist() == [0.5, 0.25, 1.0]
    strict("nebula", nebula_root)


@pytest.mark.parametrize("imgid", [True, 1.5, None, " "])
def test_nebula_refuses_non_ids(nebula_root, imgid):
    nebula_root.put([NEBULA[0], {**NEBULA[1], "imgid": imgid}])
    with pytest.raises(InputError, match="item 1: imgid .* is not an image id"):
        data.load("nebula", nebula_root)


def test_nebula_empty_candidate_and_all_empty_references(nebula_root):
    nebula_root.put([NEBULA[0], {**NEBULA[1], "mt": "\n"}])
    with pytest.raises(InputError, match=r"candidate of row 1 \(group '7'\) is empty"):
        data.load("nebula", nebula_root)
    nebula_root.put([NEBULA[0], {**NEBULA[1], "refs": ["", " "]}])
    with pytest.raises(InputError, match=r"every reference of row 1 \(group '7'\) is empty"):
        data.load("nebula", nebula_root)


# ---- THumB (two JSON Lines files) --------------------------------------------------------------

def thumb_rows():
    rows = []
    for sys_id in ("A", "B", "Human"):
        rows.append({"SYS": sys_id, "seg_id": 1, "set_id": 0, "hyp": f"{sys_id} a man\r\nrides ", "image": "x1.jpg",
                     "P": 4, "R": 3, "human_score": 3.5})
        rows.append({"SYS": sys_id, "seg_id": "2", "set_id": "1", "hyp": f"{sys_id} a cake", "image": "x2.jpg",
                     "P": "4.5", "R": 4, "human_score": "4.25"})
    return rows


THUMB_REFS = [{"seg_id": "1", "set_id": "0", "refs": ["A man rides" + LS + "a bike. ", "A man rides a bike. ", "",
                                                      "A man rides a bike. "]},
              {"seg_id": 2, "set_id": 1, "refs": ["A cake.\n", "A big cake."]}]


@pytest.fixture
def thumb_root(tmp_path, monkeypatch):
    root = pinned_root(tmp_path, monkeypatch, "thumb")

    def put(rows, refs):
        write(root / "thumb/mscoco/mscoco_THumB-1.0.jsonl", jsonl(rows))
        write(root / "thumb/mscoco/mscoco_references.json", jsonl(refs))
        pin_fixtures(monkeypatch, root)
    put(thumb_rows(), THUMB_REFS)
    return Root(root, put)


def test_thumb(thumb_root):
    t = data.load("thumb", thumb_root)
    assert t.candidates == ["A a man  rides ", "A a cake", "B a man  rides ", "B a cake"]
    assert t.groups == ["1", "2", "1", "2"]  # seg_id 1 and "1" are one image
    assert t.references[0] == ["A man rides a bike. ", "A man rides a bike. ", "A man rides a bike. "]
    assert t.references[1] == ["A cake. ", "A big cake."]
    # two machine hypotheses and two rows' references held breaks: 2 + 2 (per row) + 2
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:2"
    assert t.human.tolist() == [3.5, 4.25, 3.5, 4.25]
    s = data.load("thumb", thumb_root, table="system", rows="all")
    assert s.systems["Human"] == ["Human a man  rides ", "Human a cake"]
    strict("thumb", thumb_root)


def test_thumb_ids_of_both_types_are_one_id(thumb_root):
    thumb_root.put(thumb_rows(), [*THUMB_REFS, {"seg_id": 1, "set_id": 0, "refs": ["again"]}])
    with pytest.raises(InputError, match="line 3: duplicate seg_id '1' .first at line 1"):
        data.load("thumb", thumb_root)
    thumb_root.put([{**thumb_rows()[0], "seg_id": 1.0}], THUMB_REFS)
    with pytest.raises(InputError, match="line 1: seg_id 1.0 is not an id"):
        data.load("thumb", thumb_root)


# ---- Polaris (a CSV, and EXPERT's JSON without references) -------------------------------------

POLARIS_CSV = (BOM + 'id,mt,refs,score,imgid\r\n'
               '0,"a plate\nof food ","[\'A plate of food.\\n\', \'A plate of food.\\n\', \'\', \'Food. \']",0.875,'
               'p1.jpg\r\n'
               '1,"a man\r\nsurfing","[\'A surfer\\u2028rides.\']",0.25,p2.jpg\r\n')


@pytest.fixture
def polaris_root(tmp_path, monkeypatch):
    root = pinned_root(tmp_path, monkeypatch, "polaris")
    write(root / "polaris/polaris_test.csv", POLARIS_CSV)
    items = [{"id": 0, "imgid": 11, "mt": "a plate" + LS + "of food", "score": 0.75},
             {"id": 1, "imgid": "11", "mt": "a dog ", "score": "0.25"}]
    write(root / "polaris/polaris_exp_val.json", BOM + json.dumps(items, ensure_ascii=False))
    pin_fixtures(monkeypatch, root)
    return root


def test_polaris_csv(polaris_root):
    t = data.load("polaris", polaris_root)
    assert t.candidates == ["a plate of food ", "a man  surfing"]  # the quoted \r\n is two characters
    assert t.references == [["A plate of food. ", "A plate of food. ", "Food. "], ["A surfer rides."]]
    assert t.protocol["breaks"] == "space:5" and t.protocol["empty_refs"] == "dropped:1"
    assert t.groups == ["p1.jpg", "p2.jpg"]
    strict("polaris", polaris_root)


def test_polaris_exp_val(polaris_root):
    t = data.load("polaris", polaris_root, split="exp-val")
    assert t.candidates == ["a plate of food", "a dog "] and t.references is None
    assert t.groups == ["11", "11"] and t.images == ["11.jpg", "11.jpg"]
    assert t.protocol["breaks"] == "space:1" and t.human.tolist() == [0.75, 0.25]
    strict("polaris", polaris_root, split="exp-val")


# ---- Flickr8k token file, Flickr8k-CF, Flickr8k-Expert ----------------------------------------

TOKENS = {
    "im1.jpg": ["A dog runs .", "A dog" + LS + "runs .", "A dog runs .", "A brown dog . ", ""],
    "im2.jpg": ["A cat sits .", "A cat\rsits .", "A cat .", "Cat on a mat .", "A cat indoors ."],
}


def write_tokens(root, tokens=TOKENS):
    lines = [f"{img}#{k}\t{c}" for img, caps in tokens.items() for k, c in enumerate(caps)]
    write(root / "flickr8k/Flickr8k_text/Flickr8k.token.txt", BOM + "\r\n".join(lines) + "\r\n")


@pytest.fixture
def f8k(tmp_path):
    write_tokens(tmp_path)
    return tmp_path


def test_flickr8k_cf(f8k):
    write(f8k / "flickr8k/Flickr8k_text/CrowdFlowerAnnotations.txt",
          BOM + "im1.jpg\tim2.jpg#1\t0\t0\t3\r\nim2.jpg\tim1.jpg#1\t0.5\t1\t1\r\nim1.jpg\tim1.jpg#3\t1\t2\t0\r\n")
    t = data.load("flickr8k-cf", f8k)
    assert t.groups == ["im1", "im2", "im1"]  # the first image id of the file, after its byte-order mark
    assert t.candidates == ["A cat sits .", "A dog runs .", "A brown dog ."]
    # per-image removal of the image's own CF candidate (im1#3); duplicates kept, the empty caption dropped
    assert t.references[0] == t.references[2] == ["A dog runs .", "A dog runs .", "A dog runs ."]
    assert t.references[1] == ["A cat sits .", "A cat sits .", "A cat .", "Cat on a mat .", "A cat indoors ."]
    assert t.protocol["breaks"] == "space:5" and t.protocol["empty_refs"] == "dropped:2"
    strict("flickr8k-cf", f8k)


def test_a_line_break_in_a_line_based_file_ends_the_line(f8k):
    write_tokens(f8k, {"im1.jpg": ["A dog\nruns ."]})
    write(f8k / "flickr8k/Flickr8k_text/CrowdFlowerAnnotations.txt", "im1.jpg\tim1.jpg#0\t0\t0\t3\n")
    with pytest.raises(InputError, match=r"line 2 is not '<image>#<n>\\t<caption>': 'runs .'"):
        data.load("flickr8k-cf", f8k)


def test_flickr8k_expert_raw(f8k):
    write(f8k / "flickr8k/Flickr8k_text/ExpertAnnotations.txt", BOM + "im1.jpg\tim2.jpg#1\t1\t2\t1\r\n")
    t = data.load("flickr8k-expert", f8k, rebuild_from_raw=True)
    assert t.candidates == ["A cat sits ."] * 3
    assert t.references[0] == ["A dog runs .", "A dog runs .", "A dog runs .", "A brown dog ."]
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:3"
    strict("flickr8k-expert", f8k, rebuild_from_raw=True)


def expert_json(ratings):
    gt = ["A dog runs .", "A dog runs .", "A  dog\r\nruns . ", "", "Dog" + LS + "on grass ."]
    return BOM + json.dumps({"im1": {"image_path": "Flickr8k_Dataset/im1.jpg", "ground_truth": gt,
                                     "human_judgement": [{"caption": "A cat\n sits . ", "rating": r}
                                                         for r in ratings]}}, ensure_ascii=False)


def test_flickr8k_expert_json(f8k):
    path = f8k / "flickr8k/clipscore_format_EXPERT/flickr8k.json"
    write(path, expert_json([2, "3"]))
    t = data.load("flickr8k-expert", f8k)
    assert t.candidates == ["A cat sits ."] * 2 and t.human.tolist() == [2.0, 3.0]
    assert t.references[0] == ["A dog runs .", "A dog runs .", "A dog runs .", "Dog on grass ."]
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:2"
    strict("flickr8k-expert", f8k)
    write(path, expert_json([2, True]))
    with pytest.raises(InputError, match="image im1 judgement 1: rating True is not a number"):
        data.load("flickr8k-expert", f8k)


def test_flickr8k_expert_elliott_keller(tmp_path):
    d = tmp_path / "flickr8k/elliott_keller_2014"
    write(d / "judgements", BOM + "imageid,j1,j2,j3\r\nim1.jpg,1,2,2\r\n")
    write(d / "candidates", "A dog" + LS + "runs . \r\n")
    for k in range(5):
        write(d / f"ref-{k}", ["Dog .", "Dog .", "A  dog\rruns .", "", "A dog . "][k] + "\n")
    t = data.load("flickr8k-expert", tmp_path, protocol="elliott-keller")
    assert t.images == ["im1.jpg"] * 3 and t.candidates == ["A dog runs ."] * 3
    assert t.references[0] == ["Dog .", "Dog .", "A dog runs .", "A dog ."]
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:3"
    strict("flickr8k-expert", tmp_path, protocol="elliott-keller")


# ---- COMPOSITE (JSON Lines) --------------------------------------------------------------------

COMPOSITE = [
    {"subset": "flickr8k", "image": "c1.jpg", "position": 0, "candidate": "a dog\r\nruns", "score": 5,
     "refs_flickr8k": ["A cat .", "A cat .", "", "A cat" + LS + "sits . ", "a dog runs"]},
    {"subset": "flickr8k", "image": "c1.jpg", "position": "1", "candidate": "a cat ", "score": "2",
     "refs_flickr8k": ["A cat .", "A cat .", "", "A cat" + LS + "sits . ", "a dog runs"]},
    {"subset": "flickr8k", "image": 42, "position": 0.0, "candidate": "a small bird", "score": 1.5,
     "refs_flickr8k": ["A bird .\n"]},
]


def test_composite(tmp_path):
    path = tmp_path / "composite/composite_umic_decoded.jsonl"
    write(path, jsonl(COMPOSITE))
    t = data.load("composite", tmp_path)
    assert t.candidates == ["a dog runs", "a cat", "a small bird"]
    # image-minus-human: the position-0 caption ("a dog runs") leaves both rows of c1
    assert t.references[:2] == [["A cat .", "A cat .", "A cat sits ."]] * 2
    assert t.references[2] == ["A bird ."]  # its trailing break is trailing whitespace
    assert t.groups == ["flickr8k/c1.jpg", "flickr8k/c1.jpg", "flickr8k/42"]
    assert t.extra["position"].tolist() == [0, 1, 0] and t.human.tolist() == [5.0, 2.0, 1.5]
    assert t.protocol["breaks"] == "space:3" and t.protocol["empty_refs"] == "dropped:2"
    strict("composite", tmp_path)
    for field, value, message in [("position", 1.5, "position 1.5 is not an integer"),
                                  ("score", True, "score True is not a number"),
                                  ("image", None, "image None is not an id")]:
        write(path, jsonl([COMPOSITE[0], {**COMPOSITE[1], field: value}]))
        with pytest.raises(InputError, match=f"line 2: {message}"):
            data.load("composite", tmp_path)


# ---- PASCAL-50S (EXPERT's JSON, and the MATLAB files) ------------------------------------------

def pascal_json(label=1):
    item = {"image": "2008_1.jpg", "captions": ["a man\nin a boat", "a boat "], "label": 0,
            "references": ["A boat .", "A boat .", "", "A man" + LS + "fishing . ", "A boat ."]}
    return BOM + json.dumps({"HC": [item], "HI": [{**item, "image": 7, "label": 1.0}], "HM": [],
                             "MM": [{**item, "label": label}]}, ensure_ascii=False)


def test_pascal50s_expert_json(tmp_path):
    path = tmp_path / "pascal50s/EXPERT_processed/pascal_50s.json"
    write(path, pascal_json())
    t = data.load("pascal50s", tmp_path)
    assert t.candidates_a == ["a man in a boat"] * 3 and t.candidates_b == ["a boat"] * 3
    assert t.references[0] == ["A boat .", "A boat .", "A man fishing .", "A boat ."]
    assert t.labels.tolist() == [0.0, 1.0, 1.0] and t.images == ["2008_1.jpg", "7", "2008_1.jpg"]
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:3"
    strict("pascal50s", tmp_path)
    write(path, pascal_json(label=True))
    with pytest.raises(InputError, match=r"MM\[0\] .*label True is not 0 or 1"):
        data.load("pascal50s", tmp_path)


def savemat(path, **arrays):
    from scipy.io import savemat as _save

    path.parent.mkdir(parents=True, exist_ok=True)
    _save(str(path), arrays)


def structs(fields, rows):
    out = np.empty((1, len(rows)), dtype=[(f, object) for f in fields])
    for i, row in enumerate(rows):
        for f in fields:
            out[0, i][f] = row[f]
    return out


def cell(texts):
    out = np.empty((len(texts),), dtype=object)
    out[:] = texts
    return out


def test_pascal50s_pair_majority(tmp_path):
    d = tmp_path / "pascal50s/vrama91_cider-matlab"
    sents = cell(["A boat .", "A boat .", "", "A man" + LS + "fishing . ", "A dog\n."])
    savemat(d / "pascal50S.mat", refs=structs(["image", "sent"], [{"image": "p1.jpg", "sent": sents}]))
    pairs = structs(["name", "sent1", "sent2"], [{"name": "p1.jpg", "sent1": " a man\r\nin a boat ",
                                                  "sent2": " a dog "}])
    votes = structs(["result"], [{"result": np.array([1, 1, -1], dtype=float)}])
    savemat(d / "pair_pascal.mat", new_input=pairs, category=np.array([[2]]), result=votes)
    t = data.load("pascal50s", tmp_path, labels="pair-majority", k="all")
    assert t.candidates_a == ["a man in a boat"] and t.candidates_b == ["a dog"] and t.labels.tolist() == [0.0]
    assert t.references == [["A boat .", "A boat .", "A man fishing .", "A dog ."]]
    assert t.protocol["breaks"] == "space:3" and t.protocol["empty_refs"] == "dropped:1"
    strict("pascal50s", tmp_path, labels="pair-majority", k="all")


# ---- ABSTRACT-50S (MATLAB files) ---------------------------------------------------------------

def test_abstract50s(tmp_path):
    refs = ["Jenny plays .", "Jenny plays .", "", "Mike" + LS + "runs . ", "A dog\nbarks ."]
    # a target scene has two pairs sharing one candidate (capeval.data.abstract50s_categories)
    rows = [{"A": a, "B": "Mike\r\nand Jenny . ", "C": c, "rating": r}
            for c in ("A duck .", "Jenny smiles .") for a, r in zip(refs, [1, 1, -1, 1, 1])]
    savemat(tmp_path / "abstract50s/consensus_abstract.mat", triplets=structs(["A", "B", "C", "rating"], rows))
    scenes = [{"sentences": cell(refs), "name": "http://x/clipart/Scene1_0.png"},
              {"sentences": cell(["A duck .", "A duck swims ."]), "name": "http://x/clipart/Scene2_0.png"}]
    savemat(tmp_path / "abstract50s/abstract50S.mat", abs_sent=structs(["sentences", "name"], scenes))
    t = data.load("abstract50s", tmp_path)
    assert t.candidates_a == ["Mike and Jenny ."] * 2 and t.candidates_b == ["A duck .", "Jenny smiles ."]
    assert t.references == [["Jenny plays .", "Jenny plays .", "Mike runs .", "A dog barks ."]] * 2
    assert t.images == ["Scene1_0.png"] * 2 and t.labels.tolist() == [0.0, 0.0]
    assert t.protocol["breaks"] == "space:6" and t.protocol["empty_refs"] == "dropped:2"
    strict("abstract50s", tmp_path)


# ---- FOIL-COCO (COCO-style JSON) ---------------------------------------------------------------

def test_foil(tmp_path):
    anns = [
        {"id": 5, "image_id": 42, "caption": "A dog\non grass .", "target_word": "ORIG"},
        {"id": "5", "image_id": "42", "caption": "A cat on grass . ", "target_word": "dog", "foil_word": "cat",
         "foil_id": 1},
        {"id": 6, "image_id": 42, "caption": "A dog" + LS + "runs .", "target_word": "ORIG"},
        {"id": 7, "image_id": "42", "caption": "A dog runs .", "target_word": "ORIG"},
        {"id": 8, "image_id": 42, "caption": "", "target_word": "ORIG"},
    ]
    path = tmp_path / "foil_sample_only/sample_foil_test2017.json"
    write(path, BOM + json.dumps({"images": [{"id": 42, "file_name": "COCO_val2014_000000000042.jpg"}],
                                  "annotations": anns}, ensure_ascii=False))
    t = data.load("foil-sample", tmp_path)
    assert t.protocol["pairs"] == "id"  # 5 and "5" are one annotation id
    assert t.candidates_a == ["A dog on grass ."] and t.candidates_b == ["A cat on grass ."]
    assert t.references == [["A dog runs .", "A dog runs ."]]  # duplicates kept, the empty one dropped
    assert t.images == ["COCO_val2014_000000000042.jpg"] and t.extra["image_id"] == [42]
    assert t.protocol["breaks"] == "space:2" and t.protocol["empty_refs"] == "dropped:1"
    strict("foil-sample", tmp_path)
    anns[1]["id"] = True
    write(path, json.dumps({"annotations": anns}))
    with pytest.raises(InputError, match="annotation 1: id True is not an id"):
        data.load("foil-sample", tmp_path)


# ---- Tanti (line files) ------------------------------------------------------------------------

def test_tanti_flickr8k(f8k):
    from capeval.data.tanti import ARCHS, RUNS
    from capeval.data._common import TANTI_RESULTS

    write(f8k / TANTI_RESULTS / "imgs_flickr8k.txt", BOM + "im1.jpg\r\nim2.jpg\r\n")
    for a in ARCHS:
        for r in RUNS:
            write(f8k / TANTI_RESULTS / f"flickr8k_{a}_{r}/generated_captions.txt",
                  f"a dog{LS}runs \r\na cat  sits\r\n")
    t = data.load("tanti-flickr8k", f8k)
    assert t.image_ids == ["im1.jpg", "im2.jpg"]
    assert t.systems["init_1"] == ["a dog runs", "a cat sits"]
    assert t.references[0] == ["A dog runs .", "A dog runs .", "A dog runs .", "A brown dog ."]
    # 12 systems x 1 caption, and the references of both images (1 each)
    assert t.protocol["breaks"] == "space:14" and t.protocol["empty_refs"] == "dropped:1"
    strict("tanti-flickr8k", f8k)
    write(f8k / TANTI_RESULTS / "flickr8k_init_1/generated_captions.txt", "a dog\r\n \r\n")
    with pytest.raises(InputError, match=r"system 'init_1' of row 1 \(group 'im2.jpg'\) is empty"):
        data.load("tanti-flickr8k", f8k)


# ---- distractors (token file and image list) ---------------------------------------------------

def test_distractors(f8k):
    from .test_distractors import nouns

    write(f8k / "flickr8k/Flickr8k_text/Flickr_8k.testImages.txt", BOM + "im1.jpg\r\nim2.jpg\r\n")
    t = data.load("distractors", f8k, datasets="flickr8k", tasks="shuffle", parser=nouns)
    assert t.protocol["empty_captions"] == "dropped:1" and t.protocol["source"] == "flickr8k-test"
    assert {it.image for it in t.extra["items"]} <= {"flickr8k/im1.jpg", "flickr8k/im2.jpg"}
    texts = [*t.candidates_a, *t.candidates_b, *(r for refs in t.references for r in refs)]
    assert all(LS not in x and "\r" not in x and x.strip() for x in texts)
    assert t.protocol.get("breaks", "space:0") != "space:0"
    strict("distractors", f8k, datasets="flickr8k", tasks="shuffle", parser=nouns)


def test_tanti_human200(tmp_path):
    """The SQL dump can hold any character inside its quoted values; the Karpathy-test reference
    file is line-aligned (5 lines per image of Tanti's COCO image list)."""
    from capeval.data._common import TANTI_RESULTS

    img = "COCO_val2014_000000000001.jpg"
    write(tmp_path / TANTI_RESULTS / "imgs_mscoco.txt", BOM + img + "\r\n")
    refs = ["a bird\u2028on wood ", "A bird on wood .", "A bird on wood .", "", "a yellow bird sitting"]
    write(tmp_path / "references_karpathy_test/coco_precomp/testall_caps.txt", "\r\n".join(refs) + "\r\n")
    caps = ["a yellow bird\\nsitting", "a bird\r\non a bench ", "a bird", "a small bird", "a bird  perched"]
    values = ",\n".join(f"\t '{c}'" for c in [img, *caps, "0"])
    write(tmp_path / "machine_captions/tanti_phd_humaneval/data.sql",
          BOM + "INSERT INTO `tbl_questions` VALUES\r\n(\r\n" + values + "\r\n);\r\n")
    header = "user_id\timage\t" + "\t".join(f"acc_{s}\tflu_{s}" for s in ("human", "init", "pre", "par", "merge"))
    write(tmp_path / "machine_captions/tanti_phd_humaneval/humaneval_export.txt",
          BOM + header + "\r\n" + f"5\t{img}\t" + "\t".join(["1", "0"] * 5) + "\r\n")
    t = data.load("tanti-human200", tmp_path)
    assert t.groups == [img] * 5 and t.extra["system"] == ["human", "init", "pre", "par", "merge"]
    # the SQL escape \n is a line break, read as a space; the refs lose the one matching cap_human
    assert t.candidates == ["a yellow bird sitting", "a bird on a bench", "a bird", "a small bird", "a bird perched"]
    assert t.references[0] == ["a bird on wood", "A bird on wood .", "A bird on wood ."]
    assert t.protocol["breaks"] == "space:7" and t.protocol["empty_refs"] == "dropped:5"
    strict("tanti-human200", tmp_path)


def test_nebula_hugging_face_shards(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    # file_name may be a Windows path: its last part names the image
    rows = {"file_name": ["images\\n1.jpg", "n2.jpg"], "mt": ["a dog\r\nruns ", "a cat"],
            "refs": [["A dog" + LS + "runs.", "A dog runs.", ""], ["A cat.\n", "A cat.\n"]],
            "human_score": [0.5, 1.0]}
    path = tmp_path / "nebula/data/test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table(rows), path)
    t = data.load("nebula", tmp_path, source="hf")
    assert t.images == ["n1.jpg", "n2.jpg"] and t.groups == ["n1", "n2"]
    assert t.candidates == ["a dog  runs ", "a cat"]
    assert t.references == [["A dog runs.", "A dog runs."], ["A cat. ", "A cat. "]]
    assert t.protocol["breaks"] == "space:4" and t.protocol["empty_refs"] == "dropped:1"
    assert t.protocol["files"].startswith("test-00000-of-00001.parquet=unpinned-")
    strict("nebula", tmp_path, source="hf")

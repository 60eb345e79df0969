"""pycocoevalcap's ``COCOEvalCap`` over capeval's scorers: the same flow, printed lines and
``eval`` / ``imgToEval`` / ``evalImgs`` as pycocoevalcap 1.2, without Java."""
from __future__ import annotations

from .._notices import notice
from ._requirements import require
from .bleu.bleu import Bleu
from .cider.cider import Cider
from .meteor.meteor import Meteor
from .rouge.rouge import Rouge
from .spice.spice import Spice
from .tokenizer.ptbtokenizer import PTBTokenizer


class COCOEvalCap:
    """Evaluate a pycocotools ``COCO`` result set (``coco.loadRes(...)``) against its annotations."""

    def __init__(self, coco, cocoRes):
        self.evalImgs = []
        self.eval = {}
        self.imgToEval = {}
        self.coco = coco
        self.cocoRes = cocoRes
        self.params = {"image_id": coco.getImgIds()}

    def evaluate(self):
        # Everything the five scorers read, named in one error before any work (pycocoevalcap
        # would fail at METEOR, then at SPICE, one missing piece per run).
        require(("METEOR", "SPICE"), "COCOEvalCap.evaluate() (BLEU, METEOR, ROUGE-L, CIDEr, SPICE)")
        imgIds = self.params["image_id"]
        gts = {}
        res = {}
        for imgId in imgIds:
            gts[imgId] = self.coco.imgToAnns[imgId]
            res[imgId] = self.cocoRes.imgToAnns[imgId]

        print("tokenization...")
        tokenizer = PTBTokenizer()
        gts = tokenizer.tokenize(gts)
        res = tokenizer.tokenize(res)

        print("setting up scorers...")
        scorers = [
            (Bleu(4), ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"]),
            (Meteor(), "METEOR"),
            (Rouge(), "ROUGE_L"),
            (Cider(), "CIDEr"),
            (Spice(), "SPICE"),
        ]
        for scorer, method in scorers:
            print("computing %s score..." % (scorer.method()))
            score, scores = scorer.compute_score(gts, res)
            if isinstance(method, list):
                for sc, scs, m in zip(score, scores, method):
                    self.setEval(sc, m)
                    self.setImgToEvalImgs(scs, gts.keys(), m)
                    print("%s: %0.3f" % (m, sc))
            else:
                self.setEval(score, method)
                if method == "SPICE" and list(gts.keys()) != sorted(gts.keys()):
                    notice("spice-pairing", "COCOEvalCap pairs SPICE's per-image scores, which come in sorted "
                           "image-id order, with the images in their own order, as pycocoevalcap 1.2 does: with "
                           "these unsorted ids, imgToEval[id]['SPICE'] holds another image's score (the corpus "
                           "SPICE is unaffected). Kept for identical outputs; Spice().compute_score(gts, res) "
                           "returns the scores in sorted id order.", UserWarning)
                self.setImgToEvalImgs(scores, gts.keys(), method)
                print("%s: %0.3f" % (method, score))
        self.setEvalImgs()

    def setEval(self, score, method):
        self.eval[method] = score

    def setImgToEvalImgs(self, scores, imgIds, method):
        for imgId, score in zip(imgIds, scores):
            if imgId not in self.imgToEval:
                self.imgToEval[imgId] = {}
                self.imgToEval[imgId]["image_id"] = imgId
            self.imgToEval[imgId][method] = score

    def setEvalImgs(self):
        self.evalImgs = [eval for imgId, eval in self.imgToEval.items()]

"""Scene-graph tuples from a dependency graph: the rule set of SPICE's parser (Schuster et al.
2015 scene-graph rules as SPICE 1.0 applies them), written over :class:`DepGraph`.

Tuples are lower-case lemmas: ``(object,)``, ``(object, attribute)``, ``(subject, relation,
object)``. Rules, in the order they fire (order matters only for merging in the scene graph):

1. subject-verb-object: ``nsubj(v, s)`` plus ``dobj``/``iobj``/``nmod:p`` object ``o`` (v not a
   copula predicate) -> ``(s, v[+particle][+ p], o)``: "man riding horse on beach" ->
   (man, ride, horse), (man, ride on, beach). A copular "be" yields just ``p`` ("man is in water"
   -> (man, in, water)).
2. reduced relatives: ``acl(s, v)`` with an object -> the same triple ("a cat sitting in a chair").
3. subject-predicate: ``nsubj(v, s)`` without such an object -> ``(s, v)`` ("a woman is smiling"
   -> (woman, smile)); copular predicates -> ``(s, pred)`` ("the dog is black" -> (dog, black)).
4. adjectival modifiers ``(noun, adj)``; 5. noun + prepositional modifier ``(n, p, o)``;
6. possessives ``(owner, have, thing)``; 7. passives with an agent ``(agent, v, patient)``;
8. counts: a plural noun with a preceding number ``(noun, two)`` or quantity word;
9. compounds ``(head, modifier)`` ("tennis court" -> (court, tennis)), whose words are not
   objects on their own; 10. every other noun is an object.
"""
from __future__ import annotations

from .depgraph import DepGraph, is_nmod

Tuple = tuple[str, ...]

_OBJ_RELS = ("iobj", "dobj")


def _is_obj_rel(rel: str) -> bool:
    return rel in _OBJ_RELS or is_nmod(rel)


def _predicate(g: DepGraph, v: int) -> str:
    """Verb lemma with its particle ("pick up"); a copula with a particle keeps only the particle."""
    lemma = g.words[v].lemma
    prt = g.children(v, "compound:prt")
    if prt:
        part = g.words[prt[0]].text.lower()
        return f"{'' if lemma == 'be' else lemma} {part}".strip()
    return lemma


def _with_prep(pred: str, rel: str) -> str:
    if is_nmod(rel) and rel not in ("nmod:poss", "nmod:agent"):
        prep = rel[5:].replace("_", " ")
        # SPICE drops the copula from relations: "man is in water" -> (man, in, water)
        return prep if pred == "be" else f"{pred} {prep}"
    return pred


def extract(g: DepGraph) -> list[Tuple]:
    """All proposed tuples of one sentence, duplicates included (the graph merges them)."""
    W = g.words
    out: list[Tuple] = []
    lemma = lambda i: W[i].lemma  # noqa: E731

    def objects_of(v: int) -> list[tuple[str, int]]:
        return [(r, o) for _, r, o in g.out(v, _is_obj_rel) if W[o].is_noun]

    # 1. subject - predicate - object
    for v, rel, s in g.edges:
        if rel != "nsubj" or not W[s].is_noun or g.has(v, "cop"):
            continue
        for r, o in objects_of(v):
            out.append((lemma(s), _with_prep(_predicate(g, v), r), lemma(o)))

    # 2. reduced relative clauses with an object
    for s, rel, v in g.edges:
        if rel != "acl" or not W[v].tag.startswith("V"):
            continue
        for r, o in objects_of(v):
            out.append((lemma(s), _with_prep(_predicate(g, v), r), lemma(o)))

    # 3. subject - predicate pairs, then copular predicates
    for v, rel, s in g.edges:
        if rel != "nsubj" or not W[s].is_noun or g.has(v, "cop") or objects_of(v):
            continue
        if lemma(v) != "be":
            out.append((lemma(s), lemma(v)))
    for v, rel, s in g.edges:
        if rel != "nsubj" or not W[s].is_noun or not g.has(v, "cop"):
            continue
        case = g.children(v, "case")
        if case:
            out.append((lemma(s), W[case[0]].text.lower(), lemma(v)))
        elif lemma(v) != "be":
            out.append((lemma(s), lemma(v)))

    # 4. adjectival modifiers; predicative adjectives
    for n, rel, a in g.edges:
        if rel == "amod":
            out.append((lemma(n), lemma(a)))
    for a, rel, n in g.edges:
        if rel == "nsubj" and W[a].tag.startswith("J"):
            out.append((lemma(n), lemma(a)))

    # 5. noun + prepositional modifier
    for n, rel, o in g.edges:
        if is_nmod(rel) and W[n].is_noun and rel not in ("nmod:poss", "nmod:agent"):
            out.append((lemma(n), rel[5:].replace("_", " "), lemma(o)))

    # 6. possessives
    for n, rel, o in g.edges:
        if rel == "nmod:poss" and W[n].is_noun and W[o].is_noun:
            out.append((lemma(o), "have", lemma(n)))

    # 7. passive with agent
    for v, rel, agent in g.edges:
        if rel != "nmod:agent" or not W[v].tag.startswith("V") or not W[agent].is_noun:
            continue
        for patient in g.children(v, "nsubjpass"):
            if W[patient].is_noun:
                out.append((lemma(agent), _predicate(g, v), lemma(patient)))

    # 8. counts on plural nouns
    for w in W:
        if not w.is_plural:
            continue
        nums = g.children(w.i, "nummod")
        if nums:
            if nums[0] < w.i:  # "number 5" is a name, not a count
                out.append((w.lemma, lemma(nums[0])))
        else:
            q = g.children(w.i, "det:qmod")
            if q:
                out.append((w.lemma, lemma(q[0])))

    # 9. compounds
    compound_words: set[int] = set()
    for head, rel, mod in g.edges:
        if rel == "compound" and W[head].is_noun and W[mod].is_noun:
            compound_words.update((head, mod))
            out.append((lemma(head), lemma(mod)))

    # 10. objects
    skip = compound_words | g.mwe_inner
    for w in W:
        if w.is_noun and w.i not in skip:
            out.append((w.lemma,))
    return out

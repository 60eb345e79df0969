/* The optional compiled core of native METEOR (capeval._meteor_speedups).
 *
 * Each function has a Python twin in capeval/metrics/_meteor_native giving the same results
 * (tests compare both with ==):
 *   align_stats      align.align_stats of one pair from its one-word and paraphrase matches;
 *                    the search is the jar's, position by position (align._resolve_stepwise)
 *   resolve          that search alone, for the tests
 *   reference_phrases, positions   phrases.reference_phrases and phrases.positions
 *   phrases_within   resources._phrases_within (the batch's usable anchored phrases)
 *
 * Search paths are ranked by one packed integer key exactly as align.py packs it:
 * (-weighted * 2^20 + chunks) * 2^20 + distance. Inputs too long for that to fit in 64 bits
 * are refused with OverflowError (callers then use the Python path).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* The JVM's Math.pow(frag, 0.2) where it differs from the C library's pow (issue 36); generated
 * by scripts/meteor_pow_table.py, shared with score.py's pow_beta. */
#include "metrics/_meteor_native/_jvm_pow_table.h"

#define CHUNK ((int64_t)1 << 20)
#define MATCH ((int64_t)1 << 40)
/* weighted counts stay below 2^22 and distances below 2^43: keys fit in int64 */
#define MAX_WORDS 20000

typedef struct {
    int s, ln, st1, ml, mod;
    PyObject *obj; /* borrowed: the match tuple */
} Match;

typedef struct {
    int64_t key;
    int idx, last_end, chosen; /* chosen: node index, -1 for none */
    int seq;                   /* order of creation: the stable sort's tie-break */
} Path;

typedef struct {
    int match, parent;
} Node;

typedef struct {
    Path *p;
    uint64_t *bits; /* words per path: W */
    int n, cap;
} PathSet;

typedef struct {
    int n1, n2, W;
    Match *all;        /* every match, grouped by reference position */
    int *row_start;    /* matches of position j: all[row_start[j] .. row_start[j + 1]) */
    int *fixed;        /* per position: index into all, or -1 */
    uint64_t *used;    /* W words: hypothesis bits 0..n1-1, reference bits n1.. */
    double weights[4];
    int beam;
    Node *nodes;
    int n_nodes, cap_nodes;
    PathSet a, b;
} Search;

static int grow_paths(PathSet *ps, int need, int W) {
    if (need <= ps->cap)
        return 0;
    int cap = ps->cap ? ps->cap : 64;
    while (cap < need)
        cap *= 2;
    Path *p = PyMem_Realloc(ps->p, sizeof(Path) * (size_t)cap);
    if (!p)
        return -1;
    ps->p = p;
    uint64_t *bits = PyMem_Realloc(ps->bits, sizeof(uint64_t) * (size_t)cap * (size_t)(W ? W : 1));
    if (!bits)
        return -1;
    ps->bits = bits;
    ps->cap = cap;
    return 0;
}

static inline int test_range(const uint64_t *u, int start, int len) {
    for (int k = start; k < start + len; k++)
        if (u[k >> 6] >> (k & 63) & 1)
            return 1;
    return 0;
}

static inline void set_range(uint64_t *u, int start, int len) {
    for (int k = start; k < start + len; k++)
        u[k >> 6] |= (uint64_t)1 << (k & 63);
}

/* Append a path to ps copying the bit set `from`; returns its index or -1 (memory). */
static int push(Search *S, PathSet *ps, int64_t key, int idx, int last_end, int chosen, const uint64_t *from) {
    if (grow_paths(ps, ps->n + 1, S->W) < 0)
        return -1;
    int i = ps->n++;
    Path *p = &ps->p[i];
    p->key = key;
    p->idx = idx;
    p->last_end = last_end;
    p->chosen = chosen;
    p->seq = i;
    memcpy(ps->bits + (size_t)i * S->W, from, sizeof(uint64_t) * (size_t)S->W);
    return i;
}

static int new_node(Search *S, int match, int parent) {
    if (S->n_nodes == S->cap_nodes) {
        int cap = S->cap_nodes ? 2 * S->cap_nodes : 256;
        Node *n = PyMem_Realloc(S->nodes, sizeof(Node) * (size_t)cap);
        if (!n)
            return -1;
        S->nodes = n;
        S->cap_nodes = cap;
    }
    S->nodes[S->n_nodes].match = match;
    S->nodes[S->n_nodes].parent = parent;
    return S->n_nodes++;
}

static const Path *sort_base;

static int cmp_path(const void *x, const void *y) {
    const Path *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->seq < b->seq ? -1 : (a->seq > b->seq);
}

/* The order of a stable sort by key of ps's paths (Python's list.sort). */
static int *sorted_order(const PathSet *ps) {
    int *order = PyMem_Malloc(sizeof(int) * (size_t)(ps->n ? ps->n : 1));
    if (!order)
        return NULL;
    for (int i = 0; i < ps->n; i++)
        order[i] = i;
    if (ps->n > 1) {
        sort_base = ps->p;
        qsort(order, (size_t)ps->n, sizeof(int), cmp_path);
    }
    return order;
}

static inline int64_t weighted(const Search *S, const Match *m) {
    double w = S->weights[m->mod];
    return (int64_t)(m->ml * w) + (int64_t)(m->ln * w);
}

/* align._resolve_stepwise: fills *best (the best final path) and its bits; -1 on memory error. */
static int run_search(Search *S, Path *best) {
    int W = S->W, n1 = S->n1, n2 = S->n2;
    PathSet *cur = &S->a, *next = &S->b;
    cur->n = next->n = 0;
    if (push(S, next, 0, 0, -1, -1, S->used) < 0)
        return -1;
    for (int current = 0; current <= n2; current++) {
        /* paths = the next paths, stably sorted by key, cut to the beam */
        int *order = sorted_order(next);
        if (!order)
            return -1;
        int keep = next->n < S->beam ? next->n : S->beam;
        cur->n = 0;
        if (grow_paths(cur, keep, W) < 0) {
            PyMem_Free(order);
            return -1;
        }
        for (int i = 0; i < keep; i++) {
            cur->p[i] = next->p[order[i]];
            memcpy(cur->bits + (size_t)i * W, next->bits + (size_t)order[i] * W, sizeof(uint64_t) * (size_t)W);
        }
        cur->n = keep;
        PyMem_Free(order);
        next->n = 0;
        int bit = n1 + current;
        for (int pi = 0; pi < cur->n; pi++) {
            Path p = cur->p[pi];
            const uint64_t *u = cur->bits + (size_t)pi * W;
            if (current == n2) {
                if (p.last_end != -1)
                    p.key += CHUNK;
                if (push(S, next, p.key, p.idx, p.last_end, p.chosen, u) < 0)
                    return -1;
                continue;
            }
            if (u[bit >> 6] >> (bit & 63) & 1) {
                if (current < p.idx) {
                    if (push(S, next, p.key, p.idx, p.last_end, p.chosen, u) < 0)
                        return -1;
                } else if (S->fixed[p.idx] >= 0) { /* a fixed match starts here */
                    const Match *m = &S->all[S->fixed[p.idx]];
                    int64_t key = p.key - weighted(S, m) * MATCH;
                    if (p.last_end != -1 && m->st1 != p.last_end)
                        key += CHUNK;
                    key += abs(m->s - m->st1);
                    if (push(S, next, key, m->s + m->ln, m->st1 + m->ml, p.chosen, u) < 0)
                        return -1;
                }
                continue;
            }
            int64_t key = p.key;
            for (int k = S->row_start[current]; k < S->row_start[current + 1]; k++) {
                const Match *m = &S->all[k];
                /* the bit set may move when next grows: index it after pushing */
                if (test_range(u, m->st1, m->ml) || test_range(u, n1 + m->s, m->ln))
                    continue;
                int node = new_node(S, k, p.chosen);
                if (node < 0)
                    return -1;
                int64_t nk = key - weighted(S, m) * MATCH;
                if (p.last_end != -1 && m->st1 != p.last_end)
                    nk += CHUNK;
                int at = push(S, next, nk, m->s + m->ln, m->st1 + m->ml, node, u);
                if (at < 0)
                    return -1;
                uint64_t *nb = next->bits + (size_t)at * W;
                set_range(nb, m->st1, m->ml);
                set_range(nb, n1 + m->s, m->ln);
                key += abs(m->s - m->st1); /* distance goes to the parent, as the jar does */
            }
            if (p.last_end != -1)
                key += CHUNK;
            if (push(S, next, key, p.idx + 1, -1, p.chosen, u) < 0)
                return -1;
        }
        if (next->n == 0) { /* the jar warns and carries on with the best path */
            if (push(S, next, cur->p[0].key, cur->p[0].idx, cur->p[0].last_end, cur->p[0].chosen, cur->bits) < 0)
                return -1;
        }
    }
    int *order = sorted_order(next);
    if (!order)
        return -1;
    *best = next->p[order[0]];
    PyMem_Free(order);
    return 0;
}

static void search_free(Search *S) {
    PyMem_Free(S->all);
    PyMem_Free(S->row_start);
    PyMem_Free(S->fixed);
    PyMem_Free(S->used);
    PyMem_Free(S->nodes);
    PyMem_Free(S->a.p);
    PyMem_Free(S->a.bits);
    PyMem_Free(S->b.p);
    PyMem_Free(S->b.bits);
}

static int read_int(PyObject *o, int *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v > MAX_WORDS) {
        PyErr_SetString(PyExc_OverflowError, "match field out of range");
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int read_match(PyObject *t, Match *m) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5) {
        PyErr_SetString(PyExc_TypeError, "a match is a 5-tuple");
        return -1;
    }
    if (read_int(PyTuple_GET_ITEM(t, 0), &m->s) < 0 || read_int(PyTuple_GET_ITEM(t, 1), &m->ln) < 0 ||
        read_int(PyTuple_GET_ITEM(t, 2), &m->st1) < 0 || read_int(PyTuple_GET_ITEM(t, 3), &m->ml) < 0 ||
        read_int(PyTuple_GET_ITEM(t, 4), &m->mod) < 0)
        return -1;
    if (m->mod > 3) {
        PyErr_SetString(PyExc_ValueError, "unknown module");
        return -1;
    }
    m->obj = t;
    return 0;
}

static int check_match(const Search *S, const Match *m, int j) {
    if (m->s != j || m->s + m->ln > S->n2 || m->st1 + m->ml > S->n1) {
        PyErr_SetString(PyExc_ValueError, "a match outside its lines");
        return -1;
    }
    return 0;
}

static int read_weights(Search *S, PyObject *weights) {
    PyObject *seq = PySequence_Fast(weights, "weights must be a sequence");
    if (!seq)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 4) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "four module weights");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        S->weights[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (S->weights[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int alloc_lines(Search *S, int n1, int n2, int n_matches) {
    if (n1 < 0 || n2 < 0 || n1 > MAX_WORDS || n2 > MAX_WORDS) {
        PyErr_SetString(PyExc_OverflowError, "line too long for the compiled aligner");
        return -1;
    }
    S->n1 = n1;
    S->n2 = n2;
    S->W = (n1 + n2 + 63) / 64;
    if (S->W == 0)
        S->W = 1;
    S->all = PyMem_Malloc(sizeof(Match) * (size_t)(n_matches ? n_matches : 1));
    S->row_start = PyMem_Calloc((size_t)n2 + 2, sizeof(int));
    S->fixed = PyMem_Malloc(sizeof(int) * (size_t)(n2 ? n2 : 1));
    S->used = PyMem_Calloc((size_t)S->W, sizeof(uint64_t));
    if (!S->all || !S->row_start || !S->fixed || !S->used) {
        PyErr_NoMemory();
        return -1;
    }
    for (int j = 0; j < n2; j++)
        S->fixed[j] = -1;
    return 0;
}

/* resolve(matches, fixed, n1, weights, beam) -> (key, idx, last_end, [chosen matches, last first]):
 * align._resolve_stepwise on the same inputs (used words: those of the fixed matches). */
static PyObject *py_resolve(PyObject *self, PyObject *args) {
    PyObject *matches, *fixed, *weights;
    int n1, beam;
    if (!PyArg_ParseTuple(args, "O!O!iOi", &PyList_Type, &matches, &PyList_Type, &fixed, &n1, &weights, &beam))
        return NULL;
    Search S;
    memset(&S, 0, sizeof S);
    Py_ssize_t n2 = PyList_GET_SIZE(matches);
    PyObject *result = NULL;
    if (PyList_GET_SIZE(fixed) != n2) {
        PyErr_SetString(PyExc_ValueError, "one fixed entry per reference position");
        return NULL;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < n2; j++) {
        PyObject *row = PyList_GET_ITEM(matches, j);
        if (!PyList_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "matches: a list per reference position");
            return NULL;
        }
        total += PyList_GET_SIZE(row);
    }
    if (n2 > MAX_WORDS || total > INT_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "too many matches");
        return NULL;
    }
    if (read_weights(&S, weights) < 0 || alloc_lines(&S, n1, (int)n2, (int)total) < 0)
        goto done;
    S.beam = beam < 1 ? 1 : beam;
    int at = 0;
    for (int j = 0; j < (int)n2; j++) {
        PyObject *row = PyList_GET_ITEM(matches, j);
        PyObject *f = PyList_GET_ITEM(fixed, j);
        S.row_start[j] = at;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(row); k++) {
            PyObject *t = PyList_GET_ITEM(row, k);
            if (read_match(t, &S.all[at]) < 0 || check_match(&S, &S.all[at], j) < 0)
                goto done;
            if (t == f || (f != Py_None && S.fixed[j] < 0 && PyObject_RichCompareBool(t, f, Py_EQ) == 1))
                S.fixed[j] = at;
            at++;
        }
        if (f != Py_None) {
            if (S.fixed[j] < 0) {
                PyErr_SetString(PyExc_ValueError, "a fixed match must be among its position's matches");
                goto done;
            }
            const Match *m = &S.all[S.fixed[j]];
            set_range(S.used, m->st1, m->ml);
            set_range(S.used, n1 + m->s, m->ln);
        }
    }
    S.row_start[n2] = at;
    Path best;
    if (run_search(&S, &best) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *chosen = PyList_New(0);
    if (!chosen)
        goto done;
    for (int node = best.chosen; node >= 0; node = S.nodes[node].parent) {
        if (PyList_Append(chosen, S.all[S.nodes[node].match].obj) < 0) {
            Py_DECREF(chosen);
            goto done;
        }
    }
    result = Py_BuildValue("(LiiN)", (long long)best.key, best.idx, best.last_end, chosen);
done:
    search_free(&S);
    return result;
}

static int truthy_list(PyObject *seq, int n, char *out) {
    PyObject *fast = PySequence_Fast(seq, "function flags must be a sequence");
    if (!fast)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "one function flag per word");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int t = PyObject_IsTrue(PySequence_Fast_GET_ITEM(fast, i));
        if (t < 0) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (char)t;
    }
    Py_DECREF(fast);
    return 0;
}

/* align.align_stats once S holds the candidate matches by reference position and cov1/2
 * count the matches covering each word: the fixed matches, the search, the statistics. */
static PyObject *finish(Search *S, const char *fw1, const char *fw2, const int *cov1, const int *cov2, int *final) {
    int n1 = S->n1;
    /* fixed matches: a position's only match, whose words no other match covers */
    int open_choice = 0;
    for (int j = 0; j < S->n2; j++) {
        int lo = S->row_start[j], hi = S->row_start[j + 1];
        if (hi == lo)
            continue;
        if (hi - lo == 1) {
            const Match *m = &S->all[lo];
            int ok = 1;
            for (int x = m->s; x < m->s + m->ln && ok; x++)
                ok = cov2[x] == 1;
            for (int x = m->st1; x < m->st1 + m->ml && ok; x++)
                ok = cov1[x] == 1;
            if (ok) {
                S->fixed[j] = lo;
                set_range(S->used, m->st1, m->ml);
                set_range(S->used, n1 + m->s, m->ln);
                continue;
            }
        }
        open_choice = 1;
    }
    for (int j = 0; j < S->n2; j++)
        final[j] = S->fixed[j];
    if (open_choice) {
        Path best;
        if (run_search(S, &best) < 0)
            return PyErr_NoMemory();
        for (int node = best.chosen; node >= 0; node = S->nodes[node].parent) {
            int k = S->nodes[node].match;
            final[S->all[k].s] = k;
        }
    }
    long counts[16];
    memset(counts, 0, sizeof counts);
    for (int j = 0; j < S->n2; j++) {
        if (final[j] < 0)
            continue;
        const Match *m = &S->all[final[j]];
        int base = 4 * m->mod;
        for (int x = m->st1; x < m->st1 + m->ml; x++)
            counts[base + (fw1[x] ? 2 : 0)]++;
        for (int x = m->s; x < m->s + m->ln; x++)
            counts[base + (fw2[x] ? 3 : 1)]++;
    }
    /* align._count_chunks */
    long chunks = 0;
    int idx = 0, last_end = -1;
    while (idx < S->n2) {
        if (final[idx] < 0) {
            if (last_end != -1) {
                chunks++;
                last_end = -1;
            }
            idx++;
        } else {
            const Match *m = &S->all[final[idx]];
            if (last_end != -1 && m->st1 != last_end)
                chunks++;
            idx = m->s + m->ln;
            last_end = m->st1 + m->ml;
        }
    }
    if (last_end != -1)
        chunks++;
    long nf1 = 0, nf2 = 0, tm = 0, rm = 0;
    for (int i = 0; i < n1; i++)
        nf1 += fw1[i];
    for (int j = 0; j < S->n2; j++)
        nf2 += fw2[j];
    for (int k = 0; k < 4; k++) {
        tm += counts[4 * k];
        rm += counts[4 * k + 1];
    }
    for (int k = 0; k < 4; k++) {
        tm += counts[4 * k + 2];
        rm += counts[4 * k + 3];
    }
    PyObject *result = PyTuple_New(23);
    if (!result)
        return NULL;
    long vals[23] = {S->n1, S->n2, nf1, nf2};
    for (int k = 0; k < 16; k++)
        vals[4 + k] = counts[k];
    vals[20] = chunks;
    vals[21] = tm;
    vals[22] = rm;
    for (int k = 0; k < 23; k++) {
        PyObject *v = PyLong_FromLong(vals[k]);
        if (!v) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, k, v);
    }
    return result;
}

/* align_stats(singles, para, functions1, functions2, weights, beam) -> the 23 statistics.
 * singles: per reference position a record whose item 0 is a tuple of (hypothesis
 * position, module) one-word matches; para: paraphrase matches (5-tuples) in the jar's
 * order; functions1/2: the function-word flags of the hypothesis and the reference. */
static PyObject *py_align_stats(PyObject *self, PyObject *args) {
    PyObject *singles, *para, *fun1, *fun2, *weights;
    int beam;
    if (!PyArg_ParseTuple(args, "O!O!OOOi", &PyList_Type, &singles, &PyList_Type, &para, &fun1, &fun2, &weights,
                          &beam))
        return NULL;
    Search S;
    memset(&S, 0, sizeof S);
    PyObject *result = NULL;
    char *fw1 = NULL, *fw2 = NULL;
    int *cov1 = NULL, *cov2 = NULL, *final = NULL, *para_row = NULL;
    Py_ssize_t n2 = PyList_GET_SIZE(singles), np = PyList_GET_SIZE(para);
    Py_ssize_t n1s = PyObject_Length(fun1);
    if (n1s < 0)
        return NULL;
    if (PyObject_Length(fun2) != n2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "one reference record per reference word");
        return NULL;
    }
    if (n2 > MAX_WORDS || n1s > MAX_WORDS || np > INT_MAX / 4) {
        PyErr_SetString(PyExc_OverflowError, "line too long for the compiled aligner");
        return NULL;
    }
    int n1 = (int)n1s;
    Py_ssize_t total = np;
    for (Py_ssize_t j = 0; j < n2; j++) {
        PyObject *rec = PyList_GET_ITEM(singles, j);
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 1 || !PyTuple_Check(PyTuple_GET_ITEM(rec, 0))) {
            PyErr_SetString(PyExc_TypeError, "a reference record is a tuple whose item 0 is a tuple of matches");
            return NULL;
        }
        total += PyTuple_GET_SIZE(PyTuple_GET_ITEM(rec, 0));
        if (total > INT_MAX / 4) {
            PyErr_SetString(PyExc_OverflowError, "too many matches");
            return NULL;
        }
    }
    if (read_weights(&S, weights) < 0 || alloc_lines(&S, n1, (int)n2, (int)total) < 0)
        goto done;
    S.beam = beam < 1 ? 1 : beam;
    fw1 = PyMem_Malloc((size_t)n1 + 1);
    fw2 = PyMem_Malloc((size_t)n2 + 1);
    cov1 = PyMem_Calloc((size_t)n1 + 1, sizeof(int));
    cov2 = PyMem_Calloc((size_t)n2 + 1, sizeof(int));
    final = PyMem_Malloc(sizeof(int) * ((size_t)n2 + 1));
    para_row = PyMem_Calloc((size_t)n2 + 2, sizeof(int));
    if (!fw1 || !fw2 || !cov1 || !cov2 || !final || !para_row) {
        PyErr_NoMemory();
        goto done;
    }
    if (truthy_list(fun1, n1, fw1) < 0 || truthy_list(fun2, (int)n2, fw2) < 0)
        goto done;
    /* paraphrase matches: read once, counted per reference position */
    Match *pm = S.all + (total - np);
    for (Py_ssize_t k = 0; k < np; k++) {
        Match *m = &pm[k];
        if (read_match(PyList_GET_ITEM(para, k), m) < 0)
            goto done;
        if (m->s >= n2 || m->s + m->ln > n2 || m->st1 + m->ml > n1) {
            PyErr_SetString(PyExc_ValueError, "a match outside its lines");
            goto done;
        }
        para_row[m->s]++;
    }
    /* candidate_matches: per reference position its one-word matches, then its paraphrases
     * in the order given; the paraphrases are moved to their rows (a stable placement) */
    Match *tmp = NULL;
    if (np) {
        tmp = PyMem_Malloc(sizeof(Match) * (size_t)np);
        if (!tmp) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(tmp, pm, sizeof(Match) * (size_t)np);
    }
    int at = 0;
    int *para_fill = para_row; /* reused as the write cursor of each row */
    int *para_at = PyMem_Malloc(sizeof(int) * ((size_t)n2 + 1));
    if (!para_at) {
        PyMem_Free(tmp);
        PyErr_NoMemory();
        goto done;
    }
    for (int j = 0; j < (int)n2; j++) {
        PyObject *got = PyTuple_GET_ITEM(PyList_GET_ITEM(singles, j), 0);
        Py_ssize_t g = PyTuple_GET_SIZE(got);
        S.row_start[j] = at;
        for (Py_ssize_t k = 0; k < g; k++) {
            PyObject *t = PyTuple_GET_ITEM(got, k);
            int i, mod;
            if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 || read_int(PyTuple_GET_ITEM(t, 0), &i) < 0 ||
                read_int(PyTuple_GET_ITEM(t, 1), &mod) < 0 || i >= n1 || mod > 3) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "a one-word match is (hypothesis position, module)");
                PyMem_Free(tmp);
                PyMem_Free(para_at);
                goto done;
            }
            Match *m = &S.all[at++];
            m->s = j;
            m->ln = 1;
            m->st1 = i;
            m->ml = 1;
            m->mod = mod;
            m->obj = NULL;
            cov1[i]++;
        }
        cov2[j] = (int)g;
        para_at[j] = at;
        at += para_fill[j];
    }
    S.row_start[n2] = at;
    for (Py_ssize_t k = 0; k < np; k++) {
        Match m = tmp[k];
        S.all[para_at[m.s]++] = m;
        for (int x = m.st1; x < m.st1 + m.ml; x++)
            cov1[x]++;
        for (int x = m.s; x < m.s + m.ln; x++)
            cov2[x]++;
    }
    PyMem_Free(tmp);
    PyMem_Free(para_at);
    result = finish(&S, fw1, fw2, cov1, cov2, final);
done:
    PyMem_Free(fw1);
    PyMem_Free(fw2);
    PyMem_Free(cov1);
    PyMem_Free(cov2);
    PyMem_Free(final);
    PyMem_Free(para_row);
    search_free(&S);
    return result;
}

/* ---- a line's word facts, packed: int32 [n, n_syn, keys[n], stem_keys[n], functions[n],
 * paraphrase-table ids[n], syn_offsets[n + 1], synset ids (ascending per word)] ---------- */
typedef struct {
    int n;
    const int32_t *keys, *stems, *fun, *para, *off, *syn;
} LineView;

static int view_line(PyObject *b, LineView *L) {
    if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) < 8) {
        PyErr_SetString(PyExc_TypeError, "a packed line is bytes from line()");
        return -1;
    }
    const int32_t *x = (const int32_t *)PyBytes_AS_STRING(b);
    Py_ssize_t words = PyBytes_GET_SIZE(b) / 4;
    int n = x[0], ns = x[1];
    if (n < 0 || ns < 0 || n > MAX_WORDS || words != 2 + 5 * (Py_ssize_t)n + 1 + ns) {
        PyErr_SetString(PyExc_ValueError, "a damaged packed line");
        return -1;
    }
    L->n = n;
    L->keys = x + 2;
    L->stems = L->keys + n;
    L->fun = L->stems + n;
    L->para = L->fun + n;
    L->off = L->para + n;
    L->syn = L->off + n + 1;
    return 0;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int read_i32(PyObject *o, int32_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a word key or synset id outside 32 bits");
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* word(key, stem_key, synsets, function, para) -> bytes: one word's facts, int32
 * [key, stem_key, function, n_synsets, para, synset ids ascending] (para: its id in the
 * paraphrase table, -1 when absent) */
static PyObject *py_word(PyObject *self, PyObject *args) {
    PyObject *key, *stem, *syns, *fun, *para;
    if (!PyArg_ParseTuple(args, "OOOOO", &key, &stem, &syns, &fun, &para))
        return NULL;
    Py_ssize_t ns = PyObject_Length(syns);
    if (ns < 0)
        return NULL;
    if (ns > INT32_MAX / 8) {
        PyErr_SetString(PyExc_OverflowError, "too many synsets");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (5 + ns) * 4);
    if (!out)
        return NULL;
    int32_t *x = (int32_t *)PyBytes_AS_STRING(out);
    int t = PyObject_IsTrue(fun);
    if (t < 0 || read_i32(key, &x[0]) < 0 || read_i32(stem, &x[1]) < 0 || read_i32(para, &x[4]) < 0)
        goto fail;
    x[2] = t;
    x[3] = (int32_t)ns;
    PyObject *it = PyObject_GetIter(syns);
    if (!it)
        goto fail;
    Py_ssize_t at = 0;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        int bad = at >= ns || read_i32(item, &x[5 + at]) < 0;
        Py_DECREF(item);
        if (bad) {
            Py_DECREF(it);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "a synset set changed size");
            goto fail;
        }
        at++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    if (at != ns) {
        PyErr_SetString(PyExc_RuntimeError, "a synset set changed size");
        goto fail;
    }
    qsort(x + 5, (size_t)ns, sizeof(int32_t), cmp_i32);
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* line(words) -> bytes: a line's facts for pair_bound, from word()'s bytes of each word */
static PyObject *py_line(PyObject *self, PyObject *arg) {
    if (!PyTuple_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line() takes a tuple of word() bytes");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(arg), ns = 0;
    if (n > MAX_WORDS) {
        PyErr_SetString(PyExc_OverflowError, "line too long for the compiled aligner");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(arg, i);
        if (!PyBytes_Check(w) || PyBytes_GET_SIZE(w) < 20 || ((const int32_t *)PyBytes_AS_STRING(w))[3] < 0 ||
            PyBytes_GET_SIZE(w) != 4 * (5 + (Py_ssize_t)((const int32_t *)PyBytes_AS_STRING(w))[3])) {
            PyErr_SetString(PyExc_ValueError, "a damaged packed word");
            return NULL;
        }
        ns += ((const int32_t *)PyBytes_AS_STRING(w))[3];
    }
    if (ns > INT32_MAX / 8) {
        PyErr_SetString(PyExc_OverflowError, "too many synsets");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (2 + 5 * n + 1 + ns) * 4);
    if (!out)
        return NULL;
    int32_t *x = (int32_t *)PyBytes_AS_STRING(out);
    x[0] = (int32_t)n;
    x[1] = (int32_t)ns;
    int32_t *k = x + 2, *st = k + n, *fu = st + n, *pa = fu + n, *off = pa + n, *sy = off + n + 1;
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t *w = (const int32_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(arg, i));
        k[i] = w[0];
        st[i] = w[1];
        fu[i] = w[2];
        pa[i] = w[4];
        memcpy(sy + off[i], w + 5, sizeof(int32_t) * (size_t)w[3]);
        off[i + 1] = off[i] + w[3];
    }
    return out;
}

static int intersects(const int32_t *a, int na, const int32_t *b, int nb) {
    int i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j])
            return 1;
        if (a[i] < b[j])
            i++;
        else
            j++;
    }
    return 0;
}

/* ---- paraphrase matches (align.paraphrase_matches) ------------------------------------ */
typedef struct {
    Match *m;
    Py_ssize_t n, cap;
} MatchVec;

static int mv_push(MatchVec *v, int s, int ln, int st1, int ml) {
    if (v->n == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 64;
        if (cap > INT_MAX / 16) {
            PyErr_SetString(PyExc_OverflowError, "too many matches");
            return -1;
        }
        Match *m = PyMem_Realloc(v->m, sizeof(Match) * (size_t)cap);
        if (!m) {
            PyErr_NoMemory();
            return -1;
        }
        v->m = m;
        v->cap = cap;
    }
    Match *m = &v->m[v->n++];
    m->s = s, m->ln = ln, m->st1 = st1, m->ml = ml, m->mod = 3;
    m->obj = NULL;
    return 0;
}

static int small_int(PyObject *o, int limit, int *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v > limit) {
        PyErr_SetString(PyExc_ValueError, "a phrase position outside its line");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* group(paraphrases) -> bytes: a reference phrase's paraphrases (tuples of table ids) in
 * table order, int32 [count, (length, ids...) ...] */
static PyObject *py_group(PyObject *self, PyObject *arg) {
    PyObject *fast = PySequence_Fast(arg, "group() takes a sequence of paraphrases");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), total = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *par = PySequence_Fast_GET_ITEM(fast, k);
        if (!PyTuple_Check(par)) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "a paraphrase is a tuple of table ids");
            return NULL;
        }
        total += 1 + PyTuple_GET_SIZE(par);
    }
    if (total > INT32_MAX / 8) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_OverflowError, "too many paraphrases");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total * 4);
    if (!out) {
        Py_DECREF(fast);
        return NULL;
    }
    int32_t *x = (int32_t *)PyBytes_AS_STRING(out);
    *x++ = (int32_t)n;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *par = PySequence_Fast_GET_ITEM(fast, k);
        *x++ = (int32_t)PyTuple_GET_SIZE(par);
        for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(par); q++) {
            if (read_i32(PyTuple_GET_ITEM(par, q), x) < 0 || *x < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "a paraphrase's table id is negative");
                Py_DECREF(out);
                Py_DECREF(fast);
                return NULL;
            }
            x++;
        }
    }
    Py_DECREF(fast);
    return out;
}

/* The paraphrases of the reference phrases of line `self_` (`occurrences`: (start, length,
 * phrase); `groups`: phrase -> its group() bytes) found in line `other` (by table ids; the
 * empty paraphrase is everywhere), by occurrence, then table order, then position.
 * forward: self_ is the reference. align.paraphrase_matches. */
static int collect_para(PyObject *occurrences, PyObject *groups, const LineView *self_, const LineView *other,
                        int forward, MatchVec *out) {
    if (!PyList_Check(occurrences) || !PyDict_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "occurrences: a list; groups: a dict");
        return -1;
    }
    int on = other->n;
    for (Py_ssize_t o = 0; o < PyList_GET_SIZE(occurrences); o++) {
        PyObject *occ = PyList_GET_ITEM(occurrences, o);
        int at, length;
        if (!PyTuple_Check(occ) || PyTuple_GET_SIZE(occ) != 3) {
            PyErr_SetString(PyExc_TypeError, "an occurrence is (start, length, phrase)");
            return -1;
        }
        if (small_int(PyTuple_GET_ITEM(occ, 0), self_->n, &at) < 0 ||
            small_int(PyTuple_GET_ITEM(occ, 1), self_->n - at, &length) < 0)
            return -1;
        PyObject *gb = PyDict_GetItemWithError(groups, PyTuple_GET_ITEM(occ, 2));
        if (!gb) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "an occurrence's phrase has no group");
            return -1;
        }
        if (!PyBytes_Check(gb) || PyBytes_GET_SIZE(gb) < 4) {
            PyErr_SetString(PyExc_TypeError, "a group is group() bytes");
            return -1;
        }
        const int32_t *x = (const int32_t *)PyBytes_AS_STRING(gb);
        const int32_t *end = x + PyBytes_GET_SIZE(gb) / 4;
        int32_t count = *x++;
        for (int32_t k = 0; k < count; k++) {
            if (x >= end || x[0] < 0 || x + 1 + x[0] > end) {
                PyErr_SetString(PyExc_ValueError, "damaged group bytes");
                return -1;
            }
            int n = x[0];
            const int32_t *ids = x + 1;
            x += 1 + n;
            for (int pos = 0; pos + n <= on; pos++) {
                if (n && (other->para[pos] != ids[0] || memcmp(other->para + pos, ids, sizeof(int32_t) * (size_t)n)))
                    continue;
                if ((forward ? mv_push(out, at, length, pos, n) : mv_push(out, pos, n, at, length)) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

/* Both directions: paraphrases of reference phrases found in the hypothesis, then of
 * hypothesis phrases found in the reference; spec: (occurrences2, occurrences1, groups). */
static int pair_para(PyObject *spec, const LineView *A, const LineView *B, MatchVec *out) {
    PyObject *occ2, *occ1, *groups;
    if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "OOO", &occ2, &occ1, &groups))
        return -1;
    if (collect_para(occ2, groups, B, A, 1, out) < 0)
        return -1;
    return collect_para(occ1, groups, A, B, 0, out);
}

/* paraphrase_matches(line1, line2, spec) -> list of (start, length, match_start,
 * match_length, 3): align.paraphrase_matches (lines: line() bytes; spec as pair_para's) */
static PyObject *py_paraphrase_matches(PyObject *self, PyObject *args) {
    PyObject *b1, *b2, *spec;
    if (!PyArg_ParseTuple(args, "OOO!", &b1, &b2, &PyTuple_Type, &spec))
        return NULL;
    LineView A, B;
    if (view_line(b1, &A) < 0 || view_line(b2, &B) < 0)
        return NULL;
    MatchVec v = {NULL, 0, 0};
    PyObject *out = NULL;
    if (pair_para(spec, &A, &B, &v) < 0)
        goto done;
    out = PyList_New(v.n);
    if (!out)
        goto done;
    for (Py_ssize_t k = 0; k < v.n; k++) {
        const Match *m = &v.m[k];
        PyObject *t = Py_BuildValue("(iiiii)", m->s, m->ln, m->st1, m->ml, m->mod);
        if (!t) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, t);
    }
done:
    PyMem_Free(v.m);
    return out;
}

/* The hypothesis' synsets: id -> bit mask of the hypothesis positions (< 64) having it,
 * open addressing (slots hold id + 1; 0 is empty). */
typedef struct {
    int64_t *slots;
    uint64_t *masks;
    uint32_t mask; /* size - 1 */
} SynTable;

static inline uint32_t syn_hash(int32_t id) { return (uint32_t)id * 2654435761u; }

static int syn_build(SynTable *t, const LineView *L) {
    uint32_t size = 16;
    while (size < 2u * (uint32_t)L->off[L->n] + 2)
        size *= 2;
    t->slots = PyMem_Calloc(size, sizeof(int64_t));
    t->masks = PyMem_Calloc(size, sizeof(uint64_t));
    if (!t->slots || !t->masks)
        return -1;
    t->mask = size - 1;
    for (int i = 0; i < L->n; i++)
        for (int q = L->off[i]; q < L->off[i + 1]; q++) {
            int64_t key = (int64_t)L->syn[q] + 1;
            uint32_t h = syn_hash(L->syn[q]) & t->mask;
            while (t->slots[h] && t->slots[h] != key)
                h = (h + 1) & t->mask;
            t->slots[h] = key;
            t->masks[h] |= (uint64_t)1 << i;
        }
    return 0;
}

static inline uint64_t syn_lookup(const SynTable *t, int32_t id) {
    int64_t key = (int64_t)id + 1;
    uint32_t h = syn_hash(id) & t->mask;
    while (t->slots[h]) {
        if (t->slots[h] == key)
            return t->masks[h];
        h = (h + 1) & t->mask;
    }
    return 0;
}

/* pair_bound(line1, line2, para, same) -> (bound, candidates). para: the paraphrase matches
 * (a list), or where to find them: (occurrences2, occurrences1, groups) as
 * paraphrase_matches takes them (ignored for identical lines). Gives
 * align.pair_bound's bound (score.upper_bound, the same operations in the same order) and
 * the candidate matches, packed for align_packed: int32 [count, (s, ln, st1, ml, module) ...]
 * by reference position, each position's one-word matches (exact, stem, synonym, each by
 * hypothesis position; exact only for identical lines) before its paraphrases. */
static PyObject *py_pair_bound(PyObject *self, PyObject *args) {
    PyObject *b1, *b2, *para;
    int same;
    if (!PyArg_ParseTuple(args, "OOOp", &b1, &b2, &para, &same))
        return NULL;
    LineView A, B;
    if (view_line(b1, &A) < 0 || view_line(b2, &B) < 0)
        return NULL;
    int n1 = A.n, n2 = B.n;
    MatchVec v = {NULL, 0, 0};
    int *per_row = PyMem_Calloc((size_t)n2 + 1, sizeof(int));
    double *w1 = PyMem_Calloc((size_t)n1 + 1, sizeof(double));
    double *w2 = PyMem_Calloc((size_t)n2 + 1, sizeof(double));
    int32_t *cands = NULL;
    SynTable syn_table = {NULL, NULL, 0};
    PyObject *result = NULL;
    if (!per_row || !w1 || !w2) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyList_Check(para)) { /* the matches themselves */
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(para); k++) {
            if (mv_push(&v, 0, 0, 0, 0) < 0 || read_match(PyList_GET_ITEM(para, k), &v.m[v.n - 1]) < 0)
                goto done;
        }
    } else if (!same && pair_para(para, &A, &B, &v) < 0) { /* where to find them */
        goto done;
    }
    Match *pm = v.m;
    Py_ssize_t np = v.n;
    for (Py_ssize_t k = 0; k < np; k++) {
        Match *m = &pm[k];
        if (m->s >= n2 || m->s + m->ln > n2 || m->st1 + m->ml > n1) {
            PyErr_SetString(PyExc_ValueError, "a match outside its lines");
            goto done;
        }
        per_row[m->s]++;
    }
    /* at most 3 one-word matches per word pair, then the paraphrases */
    size_t cap = 1 + 5 * ((size_t)3 * n1 * n2 + (size_t)np);
    cands = PyMem_Malloc(sizeof(int32_t) * cap);
    if (!cands) {
        PyErr_NoMemory();
        goto done;
    }
    int count = 0;
    int32_t *w = cands + 1;
    int any_syn1 = A.off[n1] > 0;
    if (!same && any_syn1 && n1 <= 64 && syn_build(&syn_table, &A) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    static const double module_weight[4] = {1.0, 0.6, 0.8, 0.6};
    /* paraphrases grouped by row, in their given order */
    int *order = PyMem_Malloc(sizeof(int) * (size_t)(np ? np : 1));
    int *row_at = PyMem_Calloc((size_t)n2 + 1, sizeof(int));
    if (!order || !row_at) {
        PyMem_Free(order);
        PyMem_Free(row_at);
        PyErr_NoMemory();
        goto done;
    }
    for (int j = 1; j <= n2; j++)
        row_at[j] = row_at[j - 1] + per_row[j - 1];
    for (Py_ssize_t k = 0; k < np; k++)
        order[row_at[pm[k].s]++] = (int)k;
    int next_para = 0;
    for (int j = 0; j < n2; j++) {
        int32_t key = B.keys[j], stem = B.stems[j];
        double best = 0.0;
        for (int i = 0; i < n1; i++)
            if (A.keys[i] == key) {
                *w++ = j, *w++ = 1, *w++ = i, *w++ = 1, *w++ = 0;
                count++;
                best = 1.0;
                if (w1[i] < 1.0)
                    w1[i] = 1.0;
            }
        if (!same) {
            for (int i = 0; i < n1; i++)
                if (A.stems[i] == stem && A.keys[i] != key) {
                    *w++ = j, *w++ = 1, *w++ = i, *w++ = 1, *w++ = 1;
                    count++;
                    if (best < module_weight[1])
                        best = module_weight[1];
                    if (w1[i] < module_weight[1])
                        w1[i] = module_weight[1];
                }
            int ns2 = B.off[j + 1] - B.off[j];
            if (ns2 && any_syn1) {
                /* hypothesis words sharing a synset with this one: by the hypothesis' synset
                 * table when it has one, else by merging sorted synset lists */
                uint64_t shared = 0;
                if (syn_table.slots)
                    for (int q = B.off[j]; q < B.off[j + 1]; q++)
                        shared |= syn_lookup(&syn_table, B.syn[q]);
                for (int i = 0; i < n1; i++)
                    if (A.keys[i] != key &&
                        (syn_table.slots ? (int)(shared >> i & 1)
                                         : intersects(A.syn + A.off[i], A.off[i + 1] - A.off[i], B.syn + B.off[j], ns2))) {
                        *w++ = j, *w++ = 1, *w++ = i, *w++ = 1, *w++ = 2;
                        count++;
                        if (best < module_weight[2])
                            best = module_weight[2];
                        if (w1[i] < module_weight[2])
                            w1[i] = module_weight[2];
                    }
            }
        }
        w2[j] = best;
        for (int r = 0; r < per_row[j]; r++) {
            const Match *m = &pm[order[next_para++]];
            *w++ = m->s, *w++ = m->ln, *w++ = m->st1, *w++ = m->ml, *w++ = m->mod;
            count++;
        }
    }
    PyMem_Free(order);
    PyMem_Free(row_at);
    cands[0] = count;
    /* align.match_weights: paraphrases in their given order */
    for (Py_ssize_t k = 0; k < np; k++) {
        const Match *m = &pm[k];
        double pw = module_weight[3];
        for (int x = m->s; x < m->s + m->ln; x++)
            if (w2[x] < pw)
                w2[x] = pw;
        for (int x = m->st1; x < m->st1 + m->ml; x++)
            if (w1[x] < pw)
                w1[x] = pw;
    }
    /* score.upper_bound */
    const double ALPHA = 0.85, BETA = 0.2, GAMMA = 0.6, DELTA = 0.75;
    double t_wm = 0.0, r_wm = 0.0, wlen1 = 0.0, wlen2 = 0.0, bound = 0.0;
    int tw = 0, rw = 0;
    for (int i = 0; i < n1; i++) {
        double d = A.fun[i] ? (1.0 - DELTA) : DELTA;
        t_wm += w1[i] * d;
        wlen1 += d;
        tw += w1[i] != 0.0;
    }
    for (int j = 0; j < n2; j++) {
        double d = B.fun[j] ? (1.0 - DELTA) : DELTA;
        r_wm += w2[j] * d;
        wlen2 += d;
        rw += w2[j] != 0.0;
    }
    if (t_wm != 0.0 && r_wm != 0.0) {
        double f_mean = 1.0 / (((1.0 - ALPHA) / (t_wm / wlen1)) + (ALPHA / (r_wm / wlen2)));
        double penalty = (tw == n1 && rw == n2) ? 0.0 : GAMMA * pow(2.0 / (tw + rw), BETA);
        bound = f_mean * (1.0 - penalty);
        if (bound < 0.0)
            bound = 0.0;
    }
    PyObject *packed = PyBytes_FromStringAndSize((const char *)cands, (Py_ssize_t)(1 + 5 * (size_t)count) * 4);
    if (!packed)
        goto done;
    result = Py_BuildValue("(dN)", bound, packed);
done:
    PyMem_Free(syn_table.slots);
    PyMem_Free(syn_table.masks);
    PyMem_Free(v.m);
    PyMem_Free(per_row);
    PyMem_Free(w1);
    PyMem_Free(w2);
    PyMem_Free(cands);
    return result;
}

/* align_packed(line1, line2, candidates, weights, beam) -> the 23 statistics of a pair from
 * pair_bound's candidates (align.align_stats). */
static PyObject *py_align_packed(PyObject *self, PyObject *args) {
    PyObject *b1, *b2, *cb, *weights;
    int beam;
    if (!PyArg_ParseTuple(args, "OOO!Oi", &b1, &b2, &PyBytes_Type, &cb, &weights, &beam))
        return NULL;
    LineView A, B;
    if (view_line(b1, &A) < 0 || view_line(b2, &B) < 0)
        return NULL;
    const int32_t *c = (const int32_t *)PyBytes_AS_STRING(cb);
    Py_ssize_t words = PyBytes_GET_SIZE(cb) / 4;
    if (words < 1 || c[0] < 0 || words != 1 + 5 * (Py_ssize_t)c[0]) {
        PyErr_SetString(PyExc_ValueError, "damaged packed candidates");
        return NULL;
    }
    int count = c[0], n1 = A.n, n2 = B.n;
    Search S;
    memset(&S, 0, sizeof S);
    PyObject *result = NULL;
    char *fw1 = PyMem_Malloc((size_t)n1 + 1), *fw2 = PyMem_Malloc((size_t)n2 + 1);
    int *cov1 = PyMem_Calloc((size_t)n1 + 1, sizeof(int)), *cov2 = PyMem_Calloc((size_t)n2 + 1, sizeof(int));
    int *final = PyMem_Malloc(sizeof(int) * ((size_t)n2 + 1));
    if (!fw1 || !fw2 || !cov1 || !cov2 || !final) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_weights(&S, weights) < 0 || alloc_lines(&S, n1, n2, count) < 0)
        goto done;
    S.beam = beam < 1 ? 1 : beam;
    for (int i = 0; i < n1; i++)
        fw1[i] = (char)A.fun[i];
    for (int j = 0; j < n2; j++)
        fw2[j] = (char)B.fun[j];
    int row = 0;
    S.row_start[0] = 0;
    for (int k = 0; k < count; k++) {
        const int32_t *x = c + 1 + 5 * (size_t)k;
        Match *m = &S.all[k];
        m->s = x[0], m->ln = x[1], m->st1 = x[2], m->ml = x[3], m->mod = x[4];
        m->obj = NULL;
        if (m->s < row || m->s >= n2 || m->ln < 0 || m->s + m->ln > n2 || m->st1 < 0 || m->ml < 0 ||
            m->st1 + m->ml > n1 || m->mod < 0 || m->mod > 3) {
            PyErr_SetString(PyExc_ValueError, "damaged packed candidates");
            goto done;
        }
        while (row < m->s)
            S.row_start[++row] = k;
        for (int y = m->st1; y < m->st1 + m->ml; y++)
            cov1[y]++;
        for (int y = m->s; y < m->s + m->ln; y++)
            cov2[y]++;
    }
    while (row < n2)
        S.row_start[++row] = count;
    result = finish(&S, fw1, fw2, cov1, cov2, final);
done:
    PyMem_Free(fw1);
    PyMem_Free(fw2);
    PyMem_Free(cov1);
    PyMem_Free(cov2);
    PyMem_Free(final);
    search_free(&S);
    return result;
}

/* ids as a C array of longs, borrowing the items for building tuples. */
static PyObject *ids_fast(PyObject *ids, long **vals) {
    PyObject *fast = PySequence_Fast(ids, "ids must be a sequence");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    *vals = PyMem_Malloc(sizeof(long) * (size_t)(n ? n : 1));
    if (!*vals) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(*vals);
            Py_DECREF(fast);
            return NULL;
        }
        (*vals)[i] = v;
    }
    return fast;
}

static PyObject *gram(PyObject **items, Py_ssize_t start, Py_ssize_t end) {
    PyObject *t = PyTuple_New(end - start);
    if (!t)
        return NULL;
    for (Py_ssize_t k = start; k < end; k++) {
        Py_INCREF(items[k]);
        PyTuple_SET_ITEM(t, k - start, items[k]);
    }
    return t;
}

/* reference_phrases(ids, keys, bigrams, vocab_size, max_len[, unigrams, codes]):
 * phrases.reference_phrases; unigrams: the words w with (w,) in keys, and codes: bigrams
 * as ascending int64 bytes, if at hand (the same answers without building a tuple or an
 * int per lookup) */
static int has_code(const int64_t *codes, Py_ssize_t n, int64_t code) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (codes[mid] < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && codes[lo] == code;
}

static PyObject *py_reference_phrases(PyObject *self, PyObject *args) {
    PyObject *ids, *keys, *bigrams, *unigrams = NULL, *codes_b = NULL;
    long long vocab;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "OOOLn|OO!", &ids, &keys, &bigrams, &vocab, &max_len, &unigrams, &PyBytes_Type,
                          &codes_b))
        return NULL;
    if (unigrams == Py_None)
        unigrams = NULL;
    const int64_t *codes = codes_b ? (const int64_t *)PyBytes_AS_STRING(codes_b) : NULL;
    Py_ssize_t n_codes = codes_b ? PyBytes_GET_SIZE(codes_b) / 8 : 0;
    long *v;
    PyObject *fast = ids_fast(ids, &v);
    if (!fast)
        return NULL;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject *out = PyList_New(0);
    if (!out)
        goto fail;
    for (Py_ssize_t start = 0; start < n; start++) {
        long long prev = v[start];
        if (prev < 0)
            continue;
        Py_ssize_t stop = n < start + max_len ? n : start + max_len;
        Py_ssize_t end = start + 1;
        for (;;) {
            int has;
            PyObject *g = NULL;
            if (end == start + 1 && unigrams) { /* (word,) in keys, without building the tuple */
                has = PySequence_Contains(unigrams, items[start]);
                if (has < 0)
                    goto fail;
                if (has && !(g = gram(items, start, end)))
                    goto fail;
            } else {
                g = gram(items, start, end);
                if (!g)
                    goto fail;
                has = PySequence_Contains(keys, g);
                if (has < 0) {
                    Py_DECREF(g);
                    goto fail;
                }
            }
            if (has) {
                PyObject *rec = Py_BuildValue("(nnN)", start, end - start, g);
                if (!rec || PyList_Append(out, rec) < 0) {
                    Py_XDECREF(rec);
                    goto fail;
                }
                Py_DECREF(rec);
            } else {
                Py_XDECREF(g);
            }
            if (end >= stop)
                break;
            long long nxt = v[end];
            if (nxt < 0)
                break;
            int in;
            if (codes) {
                in = has_code(codes, n_codes, prev * vocab + nxt);
            } else {
                PyObject *code = PyLong_FromLongLong(prev * vocab + nxt);
                if (!code)
                    goto fail;
                in = PySequence_Contains(bigrams, code);
                Py_DECREF(code);
                if (in < 0)
                    goto fail;
            }
            if (!in)
                break;
            prev = nxt;
            end++;
        }
    }
    PyMem_Free(v);
    Py_DECREF(fast);
    return out;
fail:
    Py_XDECREF(out);
    PyMem_Free(v);
    Py_DECREF(fast);
    return NULL;
}

/* positions(ids, wanted, wanted_prefixes, max_len): phrases.positions */
static PyObject *py_positions(PyObject *self, PyObject *args) {
    PyObject *ids, *wanted, *prefixes;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "OOOn", &ids, &wanted, &prefixes, &max_len))
        return NULL;
    long *v;
    PyObject *fast = ids_fast(ids, &v);
    if (!fast)
        return NULL;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject *out = PyDict_New();
    if (!out)
        goto fail;
    for (Py_ssize_t start = 0; start < n; start++) {
        Py_ssize_t stop = n < start + max_len ? n : start + max_len;
        for (Py_ssize_t end = start + 1; end <= stop; end++) {
            PyObject *g = gram(items, start, end);
            if (!g)
                goto fail;
            int in = PySequence_Contains(prefixes, g);
            if (in <= 0) {
                Py_DECREF(g);
                if (in < 0)
                    goto fail;
                break;
            }
            in = PySequence_Contains(wanted, g);
            if (in < 0) {
                Py_DECREF(g);
                goto fail;
            }
            if (in) {
                PyObject *pos = PyLong_FromSsize_t(start);
                if (!pos) {
                    Py_DECREF(g);
                    goto fail;
                }
                PyObject *got = PyDict_GetItemWithError(out, g);
                int bad;
                if (got) {
                    bad = PyList_Append(got, pos);
                } else if (PyErr_Occurred()) {
                    bad = -1;
                } else {
                    PyObject *lst = PyList_New(1);
                    if (!lst) {
                        bad = -1;
                    } else {
                        Py_INCREF(pos);
                        PyList_SET_ITEM(lst, 0, pos);
                        bad = PyDict_SetItem(out, g, lst);
                        Py_DECREF(lst);
                    }
                }
                Py_DECREF(pos);
                if (bad < 0) {
                    Py_DECREF(g);
                    goto fail;
                }
            }
            Py_DECREF(g);
        }
    }
    PyMem_Free(v);
    Py_DECREF(fast);
    return out;
fail:
    Py_XDECREF(out);
    PyMem_Free(v);
    Py_DECREF(fast);
    return NULL;
}

/* score.pow_beta: Math.pow(x, beta) as the jar's JVM computes it (x86_64 HotSpot's intrinsic is
 * not correctly rounded): the generated table's value where it has x (a fragmentation
 * chunks / (sum / 2) with sum <= JVM_POW_MAX_SUM that the C library rounds differently), else
 * the C library's. The table is for beta 0.2, the only beta here. */
/* The active table: the shipped one until set_pow_table (powtable.py: the local JVM's). */
static const double *pow_x = jvm_pow_x, *pow_y = jvm_pow_y;
static size_t pow_n = JVM_POW_N;

static double pow_beta(double x, double beta) {
    double y = pow(x, beta);
    size_t lo = 0, hi = pow_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pow_x[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < pow_n && pow_x[lo] == x) ? pow_y[lo] : y;
}

/* set_pow_table(xs, ys): score_one's table from now on; xs ascending float64 bytes, ys their
 * values (powtable.PowTable.arrays). The previous table set here is freed. */
static PyObject *py_set_pow_table(PyObject *self, PyObject *args) {
    Py_buffer bx, by;
    if (!PyArg_ParseTuple(args, "y*y*", &bx, &by))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)bx.len / sizeof(double);
    double *x = NULL, *y = NULL;
    if (bx.len != by.len || bx.len % (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "set_pow_table: xs and ys must be float64 arrays of one length");
        goto done;
    }
    x = PyMem_Malloc(n ? n * sizeof(double) : 1);
    y = PyMem_Malloc(n ? n * sizeof(double) : 1);
    if (!x || !y) {
        PyMem_Free(x);
        PyMem_Free(y);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(x, bx.buf, n * sizeof(double));
    memcpy(y, by.buf, n * sizeof(double));
    for (size_t i = 1; i < n; i++)
        if (!(x[i - 1] < x[i])) {
            PyMem_Free(x);
            PyMem_Free(y);
            PyErr_SetString(PyExc_ValueError, "set_pow_table: xs must be strictly ascending");
            goto done;
        }
    if (pow_x != jvm_pow_x) {
        PyMem_Free((void *)pow_x);
        PyMem_Free((void *)pow_y);
    }
    pow_x = x;
    pow_y = y;
    pow_n = n;
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&bx);
    PyBuffer_Release(&by);
    return result;
}

/* score_one(row) -> float: score.score_one of 23 statistics (ints or floats), the same
 * floating-point operations in the same order */
static PyObject *py_score_one(PyObject *self, PyObject *arg) {
    PyObject *fast = PySequence_Fast(arg, "score_one() takes a sequence of 23 statistics");
    if (!fast)
        return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != 23) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "METEOR statistics have 23 fields");
        return NULL;
    }
    double row[23];
    for (int k = 0; k < 23; k++) {
        row[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, k));
        if (row[k] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    const double ALPHA = 0.85, BETA = 0.2, GAMMA = 0.6, DELTA = 0.75;
    static const double weights[4] = {1.0, 0.6, 0.8, 0.6};
    double t_len = row[0], r_len = row[1], t_fun = row[2], r_fun = row[3];
    double chunks = row[20], t_words = row[21], r_words = row[22];
    double t_wlen = DELTA * (t_len - t_fun) + (1.0 - DELTA) * t_fun;
    double r_wlen = DELTA * (r_len - r_fun) + (1.0 - DELTA) * r_fun;
    double t_wm = 0.0, r_wm = 0.0;
    for (int i = 0; i < 4; i++)
        t_wm = t_wm + row[4 + 4 * i] * weights[i] * DELTA;
    for (int i = 0; i < 4; i++)
        r_wm = r_wm + row[5 + 4 * i] * weights[i] * DELTA;
    for (int i = 0; i < 4; i++)
        t_wm = t_wm + row[6 + 4 * i] * weights[i] * (1.0 - DELTA);
    for (int i = 0; i < 4; i++)
        r_wm = r_wm + row[7 + 4 * i] * weights[i] * (1.0 - DELTA);
    if (t_wm == 0.0 || r_wm == 0.0)
        return PyFloat_FromDouble(0.0);
    double f_mean = 1.0 / (((1.0 - ALPHA) / (t_wm / t_wlen)) + (ALPHA / (r_wm / r_wlen)));
    /* the totals: sums of counts, exact in either order for the integer counts this takes */
    double t_a = 0.0, t_b = 0.0, r_a = 0.0, r_b = 0.0;
    for (int i = 0; i < 4; i++) {
        t_a += row[4 + 4 * i];
        t_b += row[6 + 4 * i];
        r_a += row[5 + 4 * i];
        r_b += row[7 + 4 * i];
    }
    double frag;
    if (t_a + t_b == t_len && r_a + r_b == r_len && chunks == 1.0)
        frag = 0.0;
    else
        frag = chunks / ((t_words + r_words) / 2);
    double score = f_mean * (1.0 - GAMMA * pow_beta(frag, BETA));
    return PyFloat_FromDouble(0.0 > score ? 0.0 : score);
}

/* phrases_within(present, words, anchor_offsets, anchor_phrases, phrase_offsets, phrase_tokens):
 * resources._phrases_within: the non-empty phrases whose words are all marked in ``present``
 * (one byte per word id), ascending, as int32 bytes; ``words``: the marked words, ascending
 * int64. A phrase's anchor is one of its words, so such phrases are among those anchored at
 * ``words``: when those are few, only they are checked (then sorted); otherwise every phrase
 * is, in table order (sequential reads beat jumping through most of the table). Every offset
 * and id is checked against its array (a damaged cache raises). */
static int get_buf(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (b->itemsize != itemsize || b->len % itemsize) {
        PyErr_Format(PyExc_TypeError, "phrases_within: %s must hold %zd-byte items", what, itemsize);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* 1: all of phrase p's words are present, 0: not, -1: damaged (exception set) */
static int phrase_within(int64_t p, const uint8_t *present, Py_ssize_t n_present, const int64_t *p_off,
                         Py_ssize_t n_phrase, const int32_t *toks, Py_ssize_t n_toks) {
    if (p < 0 || p >= n_phrase || p_off[p] < 0 || p_off[p] > p_off[p + 1] || p_off[p + 1] > n_toks) {
        PyErr_SetString(PyExc_ValueError, "phrases_within: a phrase or phrase offset out of range");
        return -1;
    }
    if (p_off[p] == p_off[p + 1])
        return 0;
    for (int64_t t = p_off[p]; t < p_off[p + 1]; t++) {
        int32_t tok = toks[t];
        if (tok < 0 || tok >= n_present) {
            PyErr_SetString(PyExc_ValueError, "phrases_within: a word id out of range");
            return -1;
        }
        if (!present[tok])
            return 0;
    }
    return 1;
}

static PyObject *py_phrases_within(PyObject *self, PyObject *args) {
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]))
        return NULL;
    static const Py_ssize_t sizes[6] = {1, 8, 8, 4, 8, 4};
    static const char *names[6] = {"present", "words", "anchor_offsets", "anchor_phrases", "phrase_offsets",
                                   "phrase_tokens"};
    Py_buffer b[6];
    int got = 0;
    PyObject *out = NULL;
    int32_t *buf = NULL;
    for (; got < 6; got++)
        if (get_buf(o[got], &b[got], sizes[got], names[got]) < 0)
            goto done;
    const uint8_t *present = b[0].buf;
    const int64_t *words = b[1].buf, *a_off = b[2].buf, *p_off = b[4].buf;
    const int32_t *a_ph = b[3].buf, *toks = b[5].buf;
    Py_ssize_t n_present = b[0].len, n_words = b[1].len / 8, n_anchor = b[2].len / 8 - 1;
    Py_ssize_t n_aph = b[3].len / 4, n_phrase = b[4].len / 8 - 1, n_toks = b[5].len / 4;
    if (n_phrase < 0) {
        PyErr_SetString(PyExc_ValueError, "phrases_within: no phrase offsets");
        goto done;
    }
    Py_ssize_t cap = 0;
    for (Py_ssize_t i = 0; i < n_words; i++) {
        int64_t w = words[i];
        if (w < 0 || w >= n_anchor || a_off[w] < 0 || a_off[w] > a_off[w + 1] || a_off[w + 1] > n_aph) {
            PyErr_SetString(PyExc_ValueError, "phrases_within: a word or anchor offset out of range");
            goto done;
        }
        cap += (Py_ssize_t)(a_off[w + 1] - a_off[w]);
    }
    int scan_all = cap > n_phrase / 8;
    if (scan_all)
        cap = n_phrase;
    buf = PyMem_Malloc((cap ? cap : 1) * sizeof(int32_t));
    if (!buf) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_out = 0;
    if (scan_all) {
        for (Py_ssize_t p = 0; p < n_phrase; p++) {
            int ok = phrase_within(p, present, n_present, p_off, n_phrase, toks, n_toks);
            if (ok < 0)
                goto done;
            if (ok)
                buf[n_out++] = (int32_t)p;
        }
    } else {
        for (Py_ssize_t i = 0; i < n_words; i++) {
            int64_t w = words[i];
            for (int64_t k = a_off[w]; k < a_off[w + 1]; k++) {
                int ok = phrase_within(a_ph[k], present, n_present, p_off, n_phrase, toks, n_toks);
                if (ok < 0)
                    goto done;
                if (ok)
                    buf[n_out++] = a_ph[k];
            }
        }
        qsort(buf, n_out, sizeof(int32_t), cmp_int32);
    }
    out = PyBytes_FromStringAndSize((const char *)buf, n_out * (Py_ssize_t)sizeof(int32_t));
done:
    PyMem_Free(buf);
    while (got > 0)
        PyBuffer_Release(&b[--got]);
    return out;
}

static PyMethodDef methods[] = {
    {"align_stats", py_align_stats, METH_VARARGS, "align.align_stats of one pair from its candidate matches."},
    {"word", py_word, METH_VARARGS, "One word's facts, packed for line()."},
    {"group", py_group, METH_O, "A reference phrase's paraphrases, packed for pair_bound."},
    {"line", py_line, METH_O, "A line's word facts, packed for pair_bound and align_packed."},
    {"pair_bound", py_pair_bound, METH_VARARGS, "align.pair_bound: a pair's score bound and candidate matches."},
    {"paraphrase_matches", py_paraphrase_matches, METH_VARARGS, "align.paraphrase_matches."},
    {"align_packed", py_align_packed, METH_VARARGS, "align.align_stats from pair_bound's candidates."},
    {"score_one", py_score_one, METH_O, "score.score_one: one row's METEOR score."},
    {"set_pow_table", py_set_pow_table, METH_VARARGS, "score_one's Math.pow table (powtable.PowTable.arrays)."},
    {"resolve", py_resolve, METH_VARARGS, "align._resolve_stepwise: the jar's beam search."},
    {"reference_phrases", py_reference_phrases, METH_VARARGS, "phrases.reference_phrases."},
    {"positions", py_positions, METH_VARARGS, "phrases.positions."},
    {"phrases_within", py_phrases_within, METH_VARARGS, "resources._phrases_within."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_meteor_speedups",
                                    "The optional compiled core of native METEOR.", -1, methods};

PyMODINIT_FUNC PyInit__meteor_speedups(void) { return PyModule_Create(&module); }

/* Optional compiled core of the per-caption metrics (loaded by capeval/_compiled.py).
 *
 * Every function here has a pure-Python/numpy twin that gives the same results; the tests run
 * both and compare with ==. Nothing here does floating-point arithmetic in another order than
 * the reference: sums are built left to right in the reference's order, squares and powers go
 * through libm's pow() as Python's float ** does (called through a volatile pointer so that
 * the compiler cannot rewrite pow(v, 2) as v * v, which differs in the last bit), and the
 * module is compiled with -ffp-contract=off (no fused multiply-add).
 *
 * Data crosses the boundary as bytearrays of int64/int32/int8/float64 (numpy views them with
 * np.frombuffer), so the build needs no numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double (*volatile pow_fn)(double, double) = pow;

/* ------------------------------------------------------------------------------------------ */
/* buffers                                                                                     */

static int get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: buffer length %zd is not a multiple of %zd", what, view->len, itemsize);
        return -1;
    }
    return 0;
}

static PyObject *new_bytes(Py_ssize_t n, void **data) {
    PyObject *b = PyByteArray_FromStringAndSize(NULL, n > 0 ? n : 0);
    if (b) *data = PyByteArray_AS_STRING(b);
    return b;
}

/* ------------------------------------------------------------------------------------------ */
/* hash tables                                                                                 */

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* uint64 key -> int64 value, key and value side by side (one cache line per probe); key 0 marks
 * an empty slot, so callers store key + 1. */
typedef struct { uint64_t key; int64_t val; } Slot;
typedef struct { Slot *s; size_t mask, n; } U64Map;

/* Room for `hint` keys at a load of at most 2/3. */
static int map_init(U64Map *m, size_t hint) {
    size_t cap = 1024;
    while (cap < hint + hint / 2) cap <<= 1;
    m->s = calloc(cap, sizeof(Slot));
    m->mask = cap - 1; m->n = 0;
    return m->s ? 0 : -1;
}

static void map_free(U64Map *m) { free(m->s); m->s = NULL; }

static int map_grow(U64Map *m) {
    size_t cap = (m->mask + 1) * 2;
    Slot *t = calloc(cap, sizeof(Slot));
    if (!t) return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->s[i].key) continue;
        size_t h = mix64(m->s[i].key) & (cap - 1);
        while (t[h].key) h = (h + 1) & (cap - 1);
        t[h] = m->s[i];
    }
    free(m->s);
    m->s = t; m->mask = cap - 1;
    return 0;
}

/* Value of key (>= 1, hash mix64(key)), inserting `next` when absent; *added tells which.
   -1 on memory error. The table grows past a load of 3/4. */
static inline int64_t map_get_or_add_h(U64Map *m, uint64_t key, uint64_t hash, int64_t next, int *added) {
    size_t h = hash & m->mask;
    while (m->s[h].key) {
        if (m->s[h].key == key) { *added = 0; return m->s[h].val; }
        h = (h + 1) & m->mask;
    }
    m->s[h].key = key; m->s[h].val = next; m->n++; *added = 1;
    if (m->n * 4 > (m->mask + 1) * 3 && map_grow(m) < 0) return -1;
    return next;
}

/* ------------------------------------------------------------------------------------------ */
/* n-gram index                                                                                */

typedef struct { const void *data; int kind; Py_ssize_t start, len; } WordRef;

static inline int words_equal(const WordRef *a, const void *data, int kind, Py_ssize_t start, Py_ssize_t len) {
    if (a->len != len) return 0;
    if (a->kind == kind)
        return memcmp((const char *)a->data + a->start * kind, (const char *)data + start * kind, (size_t)len * kind) == 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if (PyUnicode_READ(a->kind, a->data, a->start + i) != PyUnicode_READ(kind, data, start + i)) return 0;
    return 1;
}

#define MAX_ORDER 4

PyDoc_STRVAR(build_index_doc,
"build_index(sentences) -> (vocab, words, lens, sizes, parents, lasts, e_start, e_gram, e_order, e_count,\n"
"                            space_clean, w_start)\n\n"
"Words (str.split() of each sentence), word ids in first-appearance order, n-gram ids of orders\n"
"2-4 as (parent id, last word) in first-appearance order, and each sentence's distinct n-grams\n"
"in insertion order (unigrams left to right, then bigrams, ...) with counts; space_clean: every\n"
"sentence is non-empty words joined by single spaces. OverflowError when\n"
"the corpus exceeds the 32-bit counters used here.");

/* The output arrays are bytearrays allocated at an upper bound of their size and shrunk at the
 * end: pages never written are never touched, and nothing is copied. In a fresh process, fresh
 * memory (page faults) is a large part of the cost, so the temporaries are few and reused. */
enum { B_WORDS, B_LENS, B_WSTART, B_ESTART, B_EGRAM, B_EORDER, B_ECOUNT, B_PAR, B_LAST = B_PAR + MAX_ORDER,
       B_N = B_LAST + MAX_ORDER };

static PyObject *build_index(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "build_index needs a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *vocab = NULL, *result = NULL, *B[B_N] = {0};
    void *P[B_N] = {0};
    WordRef *wrefs = NULL; size_t wref_cap = 0;
    U64Map wmap = {0}, gmap = {0};
    int32_t *ids[MAX_ORDER] = {0}, *loc = NULL;
    uint64_t *keys = NULL;
    int64_t sizes[MAX_ORDER] = {0};
    size_t W = 0, cap_w = 0, maxL = 0, npos[MAX_ORDER] = {0}, E = 0;
    int added, clean = 1; /* clean: every sentence is non-empty words joined by single spaces */

    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "sentence %zd is not a str", i);
            goto done;
        }
        cap_w += (size_t)(PyUnicode_GET_LENGTH(items[i]) + 1) / 2; /* a word and a separator: >= 2 chars */
    }
    if (cap_w >= ((size_t)1 << 31) || n >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_OverflowError, "build_index: corpus too large for the compiled index");
        goto done;
    }
    vocab = PyList_New(0);
    if (!vocab) goto done;
#define ALLOC(i, nbytes) if (!(B[i] = new_bytes((Py_ssize_t)(nbytes), &P[i]))) goto done;
    ALLOC(B_WORDS, cap_w * 4) ALLOC(B_LENS, n * 8) ALLOC(B_WSTART, (n + 1) * 8) ALLOC(B_ESTART, (n + 1) * 8)
    int32_t *words = P[B_WORDS];
    int64_t *lens = P[B_LENS], *w_start = P[B_WSTART], *e_start = P[B_ESTART];
    if (map_init(&wmap, 4096) < 0) goto nomem;

    /* 1. words, as str.split() splits them, interned in order of first appearance */
    w_start[0] = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *str = items[s];
        int kind = PyUnicode_KIND(str);
        const void *data = PyUnicode_DATA(str);
        Py_ssize_t len = PyUnicode_GET_LENGTH(str), i = 0;
        size_t w0 = W;
        if (len == 0) clean = 0;
        while (i < len) {
            Py_ssize_t ws = i;
            Py_UCS4 c0;
            while (i < len && Py_UNICODE_ISSPACE(c0 = PyUnicode_READ(kind, data, i))) {
                if (c0 != ' ') clean = 0;
                i++;
            }
            if (i - ws > 1 || (i > ws && (ws == 0 || i >= len))) clean = 0;
            if (i >= len) break;
            Py_ssize_t b = i;
            uint64_t h = 1469598103934665603ULL;
            while (i < len) {
                Py_UCS4 c = PyUnicode_READ(kind, data, i);
                if (Py_UNICODE_ISSPACE(c)) break;
                h = (h ^ c) * 1099511628211ULL;
                i++;
            }
            h |= 1; /* 0 marks an empty slot */
            size_t slot = mix64(h) & wmap.mask;
            int64_t wid = -1;
            while (wmap.s[slot].key) {
                if (wmap.s[slot].key == h && words_equal(&wrefs[wmap.s[slot].val], data, kind, b, i - b)) {
                    wid = wmap.s[slot].val;
                    break;
                }
                slot = (slot + 1) & wmap.mask;
            }
            if (wid < 0) {
                wid = (int64_t)wmap.n;
                if ((size_t)wid == wref_cap) {
                    wref_cap = wref_cap ? wref_cap * 2 : 4096;
                    WordRef *nw = realloc(wrefs, wref_cap * sizeof(WordRef));
                    if (!nw) goto nomem;
                    wrefs = nw;
                }
                wrefs[wid].data = data; wrefs[wid].kind = kind; wrefs[wid].start = b; wrefs[wid].len = i - b;
                PyObject *w = PyUnicode_Substring(str, b, i);
                if (!w) goto done;
                int rc = PyList_Append(vocab, w);
                Py_DECREF(w);
                if (rc < 0) goto done;
                wmap.s[slot].key = h; wmap.s[slot].val = wid; wmap.n++;
                if (wmap.n * 4 > (wmap.mask + 1) * 3 && map_grow(&wmap) < 0) goto nomem;
            }
            words[W++] = (int32_t)wid;
        }
        size_t L = W - w0;
        lens[s] = (int64_t)L;
        w_start[s + 1] = (int64_t)W;
        if (L > maxL) maxL = L;
        for (int k = 0; k < MAX_ORDER && (size_t)k < L; k++) npos[k] += L - (size_t)k;
    }
    sizes[0] = (int64_t)wmap.n;

    /* 2. n-gram ids, one order at a time (one hash table in use at a time, its memory reused):
       the id of the order-k n-gram at position p is that of (order k-1 id at p, word at p + k). */
    for (int k = 1; k < MAX_ORDER; k++) {
        ids[k] = malloc((W ? W : 1) * sizeof(int32_t));
        if (!ids[k]) goto nomem;
    }
    /* Prefetching pays only when the table outgrows the caches; below that, the keys array it
       needs would only be more fresh memory to fault in. */
    int prefetch = npos[1] > ((size_t)1 << 20);
    if (prefetch && !(keys = malloc(W * sizeof(uint64_t)))) goto nomem;
    if (map_init(&gmap, npos[1] / 2) < 0) goto nomem;
    for (int k = 1; k < MAX_ORDER; k++) {
        ALLOC(B_PAR + k, npos[k] * 4) ALLOC(B_LAST + k, npos[k] * 4)
        int32_t *par = P[B_PAR + k], *last_w = P[B_LAST + k];
        if (k > 1) { /* reuse the table: keep its size, empty it */
            memset(gmap.s, 0, (gmap.mask + 1) * sizeof(Slot));
            gmap.n = 0;
        }
        /* Keys of all positions in order, then lookups with the slot of the key PF ahead
           prefetched: on big corpora the table is far larger than the caches. */
        size_t q = 0, nq = npos[k];
#define PARENT(p) (k == 1 ? (uint64_t)words[p] : (uint64_t)ids[k - 1][p])
        enum { PF = 16 };
        uint64_t ring[PF];
        if (prefetch) {
            for (Py_ssize_t s = 0; s < n; s++) {
                int64_t w0 = w_start[s], L = lens[s];
                for (int64_t p = w0; p + k < w0 + L; p++) keys[q++] = ((PARENT(p) << 31) | (uint64_t)words[p + k]) + 1;
            }
            for (size_t i = 0; i < PF && i < nq; i++) {
                ring[i] = mix64(keys[i]);
                __builtin_prefetch(&gmap.s[ring[i] & gmap.mask]);
            }
        }
        q = 0;
        for (Py_ssize_t s = 0; s < n; s++) {
            int64_t w0 = w_start[s], L = lens[s];
            for (int64_t p = w0; p + k < w0 + L; p++, q++) {
                uint64_t key, hash;
                if (prefetch) {
                    key = keys[q]; hash = ring[q % PF];
                    if (q + PF < nq) {
                        ring[q % PF] = mix64(keys[q + PF]);
                        __builtin_prefetch(&gmap.s[ring[q % PF] & gmap.mask]);
                    }
                } else {
                    key = ((PARENT(p) << 31) | (uint64_t)words[p + k]) + 1;
                    hash = mix64(key);
                }
                int64_t id = map_get_or_add_h(&gmap, key, hash, sizes[k], &added);
                if (id < 0) goto nomem;
                if (added) {
                    if (sizes[k] >= INT32_MAX) {
                        PyErr_SetString(PyExc_OverflowError, "build_index: too many distinct n-grams");
                        goto done;
                    }
                    par[sizes[k]] = (int32_t)((key - 1) >> 31);
                    last_w[sizes[k]] = (int32_t)((key - 1) & (((uint64_t)1 << 31) - 1));
                    sizes[k]++;
                }
                ids[k][p] = (int32_t)id;
            }
        }
    }
#undef PARENT
    map_free(&gmap);
    free(keys); keys = NULL;

    /* 3. each sentence's distinct n-grams in insertion order, with counts; repeats are found
       with a small table per sentence (slot -> entry), emptied after each order */
    size_t cap_e = npos[0] + npos[1] + npos[2] + npos[3], lcap = 16;
    while (lcap < 2 * maxL) lcap <<= 1;
    ALLOC(B_EGRAM, cap_e * 4) ALLOC(B_EORDER, cap_e) ALLOC(B_ECOUNT, cap_e * 4)
#undef ALLOC
    int32_t *e_gram = P[B_EGRAM];
    int8_t *e_order = P[B_EORDER];
    int32_t *e_count = P[B_ECOUNT];
    loc = malloc(lcap * sizeof(int32_t));
    if (!loc) goto nomem;
    for (size_t i = 0; i < lcap; i++) loc[i] = -1;
    int64_t off[MAX_ORDER] = {0};
    for (int k = 1; k < MAX_ORDER; k++) off[k] = off[k - 1] + sizes[k - 1];
    if (off[3] + sizes[3] >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "build_index: too many distinct n-grams");
        goto done;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        e_start[s] = (int64_t)E;
        int64_t w0 = w_start[s], L = lens[s];
        size_t mask = 16;
        while (mask < 2 * (size_t)L) mask <<= 1;
        mask -= 1;
        for (int k = 0; k < MAX_ORDER && k < L; k++) {
            for (int64_t p = w0; p + k < w0 + L; p++) {
                int32_t id = k ? ids[k][p] : (int32_t)words[p];
                size_t h = (size_t)mix64((uint64_t)id + 1) & mask;
                while (loc[h] >= 0 && e_gram[loc[h]] != off[k] + id) h = (h + 1) & mask;
                if (loc[h] >= 0) {
                    e_count[loc[h]]++;
                } else {
                    loc[h] = (int32_t)E;
                    e_gram[E] = (int32_t)(off[k] + id); e_order[E] = (int8_t)k; e_count[E] = 1;
                    E++;
                }
            }
            for (size_t i = 0; i <= mask; i++) loc[i] = -1;
        }
    }
    e_start[n] = (int64_t)E;
    if (E >= ((size_t)1 << 31)) {
        PyErr_SetString(PyExc_OverflowError, "build_index: corpus too large for the compiled index");
        goto done;
    }
    if (PyByteArray_Resize(B[B_WORDS], (Py_ssize_t)(W * 4)) < 0 || PyByteArray_Resize(B[B_EGRAM], (Py_ssize_t)(E * 4)) < 0
        || PyByteArray_Resize(B[B_EORDER], (Py_ssize_t)E) < 0 || PyByteArray_Resize(B[B_ECOUNT], (Py_ssize_t)(E * 4)) < 0)
        goto done;
    for (int k = 1; k < MAX_ORDER; k++)
        if (PyByteArray_Resize(B[B_PAR + k], (Py_ssize_t)(sizes[k] * 4)) < 0
            || PyByteArray_Resize(B[B_LAST + k], (Py_ssize_t)(sizes[k] * 4)) < 0)
            goto done;
    {
        PyObject *plist = PyList_New(MAX_ORDER), *llist = PyList_New(MAX_ORDER);
        PyObject *szt = Py_BuildValue("(LLLL)", (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
                                      (long long)sizes[3]);
        if (!plist || !llist || !szt) { Py_XDECREF(plist); Py_XDECREF(llist); Py_XDECREF(szt); goto done; }
        for (int k = 0; k < MAX_ORDER; k++) {
            void *d;
            PyObject *pb = k ? B[B_PAR + k] : new_bytes(0, &d), *lb = k ? B[B_LAST + k] : new_bytes(0, &d);
            if (k) { B[B_PAR + k] = NULL; B[B_LAST + k] = NULL; }
            PyList_SET_ITEM(plist, k, pb);
            PyList_SET_ITEM(llist, k, lb);
        }
        result = Py_BuildValue("(ONNNNNNNNNOO)", vocab, B[B_WORDS], B[B_LENS], szt, plist, llist, B[B_ESTART],
                               B[B_EGRAM], B[B_EORDER], B[B_ECOUNT], clean ? Py_True : Py_False, B[B_WSTART]);
        /* "N" stole the references of the arrays it took (even on failure) */
        B[B_WORDS] = B[B_LENS] = B[B_ESTART] = B[B_EGRAM] = B[B_EORDER] = B[B_ECOUNT] = NULL;
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    Py_XDECREF(vocab);
    for (int i = 0; i < B_N; i++) Py_XDECREF(B[i]);
    Py_DECREF(seq);
    free(wrefs);
    map_free(&wmap); map_free(&gmap);
    for (int k = 0; k < MAX_ORDER; k++) free(ids[k]);
    free(loc); free(keys);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* shared view of an index                                                                     */

typedef struct {
    Py_buffer b_es, b_eg, b_eo, b_ec, b_nw;
    const int64_t *e_start, *n_words;
    const int32_t *e_gram;
    const int8_t *e_order;
    const int32_t *e_count;
    Py_ssize_t n_sent, n_entries;
} IndexView;

static void index_release(IndexView *v) {
    if (v->e_start) PyBuffer_Release(&v->b_es);
    if (v->e_gram) PyBuffer_Release(&v->b_eg);
    if (v->e_order) PyBuffer_Release(&v->b_eo);
    if (v->e_count) PyBuffer_Release(&v->b_ec);
    if (v->n_words) PyBuffer_Release(&v->b_nw);
}

static int index_view(IndexView *v, PyObject *es, PyObject *eg, PyObject *eo, PyObject *ec, PyObject *nw) {
    memset(v, 0, sizeof(*v));
    if (get_buf(es, &v->b_es, 8, "e_start") < 0) return -1;
    v->e_start = v->b_es.buf;
    if (get_buf(eg, &v->b_eg, 4, "e_gram") < 0) return -1;
    v->e_gram = v->b_eg.buf;
    if (get_buf(eo, &v->b_eo, 1, "e_order") < 0) return -1;
    v->e_order = v->b_eo.buf;
    if (get_buf(ec, &v->b_ec, 4, "e_count") < 0) return -1;
    v->e_count = v->b_ec.buf;
    if (get_buf(nw, &v->b_nw, 8, "n_words") < 0) return -1;
    v->n_words = v->b_nw.buf;
    v->n_sent = v->b_nw.len / 8;
    v->n_entries = v->b_eg.len / 4;
    if (v->b_es.len / 8 != v->n_sent + 1 || v->b_eo.len != v->n_entries || v->b_ec.len / 4 != v->n_entries) {
        PyErr_SetString(PyExc_ValueError, "index arrays of inconsistent lengths");
        return -1;
    }
    return 0;
}

static int check_ids32(const int32_t *a, Py_ssize_t n, int64_t lo, int64_t hi, const char *what) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi) {
            PyErr_Format(PyExc_IndexError, "%s[%zd] = %lld out of range", what, i, (long long)a[i]);
            return -1;
        }
    return 0;
}

static int check_ids(const int64_t *a, Py_ssize_t n, int64_t lo, int64_t hi, const char *what) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] < lo || a[i] >= hi) {
            PyErr_Format(PyExc_IndexError, "%s[%zd] = %lld out of range", what, i, (long long)a[i]);
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* CIDEr document frequency over reference sets                                                */

PyDoc_STRVAR(refset_df_doc,
"refset_df(e_start, e_gram, e_order, e_count, n_words, n_grams, ref_sid, max_k, weights) -> bytearray int64\n\n"
"df of every n-gram id: the summed weights of the reference sets (rows of ref_sid, padded\n"
"with -1) whose union holds it.");

static PyObject *refset_df(PyObject *self, PyObject *args) {
    PyObject *es, *eg, *eo, *ec, *nw, *rs_obj, *w_obj;
    Py_ssize_t n_grams, max_k;
    if (!PyArg_ParseTuple(args, "OOOOOnOnO", &es, &eg, &eo, &ec, &nw, &n_grams, &rs_obj, &max_k, &w_obj)) return NULL;
    IndexView v;
    Py_buffer b_rs = {0}, b_w = {0};
    PyObject *out = NULL;
    int32_t *stamp = NULL;
    if (index_view(&v, es, eg, eo, ec, nw) < 0) goto done;
    if (get_buf(rs_obj, &b_rs, 8, "ref_sid") < 0) { b_rs.buf = NULL; goto done; }
    if (get_buf(w_obj, &b_w, 8, "weights") < 0) { b_w.buf = NULL; goto done; }
    Py_ssize_t n_rs = b_w.len / 8;
    if (max_k < 1 || b_rs.len / 8 != n_rs * max_k) { PyErr_SetString(PyExc_ValueError, "ref_sid shape"); goto done; }
    const int64_t *ref_sid = b_rs.buf, *w = b_w.buf;
    if (check_ids(ref_sid, n_rs * max_k, -1, v.n_sent, "ref_sid") < 0) goto done;
    if (check_ids32(v.e_gram, v.n_entries, 0, n_grams, "e_gram") < 0) goto done;
    void *d;
    out = new_bytes(n_grams * 8, &d);
    if (!out) goto done;
    int64_t *df = d;
    memset(df, 0, n_grams * 8);
    if (n_rs >= INT32_MAX) { Py_CLEAR(out); PyErr_SetString(PyExc_OverflowError, "refset_df: too many sets"); goto done; }
    stamp = malloc((n_grams ? n_grams : 1) * sizeof(int32_t));
    if (!stamp) { Py_CLEAR(out); PyErr_NoMemory(); goto done; }
    for (Py_ssize_t g = 0; g < n_grams; g++) stamp[g] = -1;
    for (Py_ssize_t r = 0; r < n_rs; r++)
        for (Py_ssize_t j = 0; j < max_k; j++) {
            int64_t s = ref_sid[r * max_k + j];
            if (s < 0) continue;
            for (int64_t e = v.e_start[s]; e < v.e_start[s + 1]; e++) {
                int32_t g = v.e_gram[e];
                if (stamp[g] != (int32_t)r) { stamp[g] = (int32_t)r; df[g] += w[r]; }
            }
        }
done:
    free(stamp);
    if (b_rs.buf) PyBuffer_Release(&b_rs);
    if (b_w.buf) PyBuffer_Release(&b_w);
    index_release(&v);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* CIDEr(-D) per unit                                                                          */

PyDoc_STRVAR(cider_units_doc,
"cider_units(e_start, e_gram, e_order, e_count, n_words, n_grams, u_sid, u_rs, ref_sid, max_k,\n"
"            dfi (int32), lw, pens, pen_off, clipped) -> bytearray float64\n\n"
"CIDEr-D (clipped=1) or CIDEr (clipped=0) of every unit, in the reference's operation order.\n"
"dfi: per n-gram id, index into lw; lw[i] = rho - ln(max(1, df)) of that df value;\n"
"pens[pen_off + delta]: the length penalty of a bigram-length difference delta.");

static PyObject *cider_units(PyObject *self, PyObject *args) {
    PyObject *es, *eg, *eo, *ec, *nw, *us_obj, *urs_obj, *rs_obj, *dfi_obj, *lw_obj, *pen_obj;
    Py_ssize_t n_grams, max_k, pen_off;
    int clipped;
    if (!PyArg_ParseTuple(args, "OOOOOnOOOnOOOnp", &es, &eg, &eo, &ec, &nw, &n_grams, &us_obj, &urs_obj, &rs_obj,
                          &max_k, &dfi_obj, &lw_obj, &pen_obj, &pen_off, &clipped))
        return NULL;
    IndexView v;
    Py_buffer bu = {0}, burs = {0}, brs = {0}, bdfi = {0}, blw = {0}, bpen = {0};
    PyObject *out = NULL;
    double *norms = NULL, *hv = NULL, *rv = NULL, *sqtab = NULL;
    int32_t *pos = NULL;
    int64_t *mark = NULL;
    if (index_view(&v, es, eg, eo, ec, nw) < 0) goto done;
#define GET(obj, b, sz, name) if (get_buf(obj, &b, sz, name) < 0) { b.buf = NULL; goto done; }
    GET(us_obj, bu, 8, "u_sid") GET(urs_obj, burs, 8, "u_rs") GET(rs_obj, brs, 8, "ref_sid")
    GET(dfi_obj, bdfi, 4, "dfi") GET(lw_obj, blw, 8, "lw") GET(pen_obj, bpen, 8, "pens")
#undef GET
    Py_ssize_t n_units = bu.len / 8, n_rs = max_k > 0 ? brs.len / 8 / max_k : 0, n_lw = blw.len / 8;
    Py_ssize_t n_pen = bpen.len / 8;
    const int64_t *u_sid = bu.buf, *u_rs = burs.buf, *ref_sid = brs.buf;
    const int32_t *dfi = bdfi.buf;
    const double *lw = blw.buf, *pens = bpen.buf;
    if (max_k < 1 || brs.len / 8 != n_rs * max_k || burs.len / 8 != n_units || bdfi.len / 4 != n_grams) {
        PyErr_SetString(PyExc_ValueError, "cider_units: array shapes");
        goto done;
    }
    if (check_ids(u_sid, n_units, 0, v.n_sent, "u_sid") < 0 || check_ids(u_rs, n_units, 0, n_rs, "u_rs") < 0
        || check_ids(ref_sid, n_rs * max_k, -1, v.n_sent, "ref_sid") < 0
        || check_ids32(v.e_gram, v.n_entries, 0, n_grams, "e_gram") < 0
        || check_ids32(dfi, n_grams, 0, n_lw, "dfi") < 0)
        goto done;
    Py_ssize_t S = v.n_sent;
    /* tf-idf of an entry: float(count) * (rho - ln(max(1, df))), recomputed where needed (the
       same operation gives the same double) instead of stored: in a first call, fresh memory
       costs more than the arithmetic. */
#define VAL(e) ((double)v.e_count[e] * lw[dfi[v.e_gram[e]]])
    norms = malloc((S ? S : 1) * MAX_ORDER * sizeof(double));
    pos = malloc((n_grams ? n_grams : 1) * sizeof(int32_t));
    if (!norms || !pos) { PyErr_NoMemory(); goto done; }
    /* norms per sentence and order: sums from 0.0 in insertion order of libm pow(v, 2), as the
       reference's norm[n] += pow(vec[n][ngram], 2), then sqrt */
    /* a square depends only on (count, df): small counts' squares are cached per df value */
    enum { SQ_CAP = 8 };
    sqtab = malloc((n_lw ? n_lw : 1) * SQ_CAP * sizeof(double));
    if (!sqtab) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n_lw * SQ_CAP; i++) sqtab[i] = -1.0;
    for (Py_ssize_t s = 0; s < S; s++) {
        double acc[MAX_ORDER] = {0.0, 0.0, 0.0, 0.0};
        for (int64_t e = v.e_start[s]; e < v.e_start[s + 1]; e++) {
            int32_t c = v.e_count[e], df_i = dfi[v.e_gram[e]];
            double sq;
            if (c < SQ_CAP) {
                double *t = &sqtab[(Py_ssize_t)df_i * SQ_CAP + c];
                if (*t < 0) *t = pow_fn((double)c * lw[df_i], 2.0);
                sq = *t;
            } else {
                sq = pow_fn((double)c * lw[df_i], 2.0);
            }
            acc[v.e_order[e]] += sq;
        }
        for (int k = 0; k < MAX_ORDER; k++) norms[s * MAX_ORDER + k] = sqrt(acc[k]);
    }
    void *d;
    out = new_bytes(n_units * 8, &d);
    if (!out) goto done;
    double *score_out = d;
    for (Py_ssize_t g = 0; g < n_grams; g++) pos[g] = -1;
    int64_t max_h = 0;
    for (Py_ssize_t s = 0; s < S; s++)
        if (v.e_start[s + 1] - v.e_start[s] > max_h) max_h = v.e_start[s + 1] - v.e_start[s];
    hv = malloc((max_h ? max_h : 1) * sizeof(double));
    rv = malloc((max_h ? max_h : 1) * sizeof(double));
    mark = malloc((max_h ? max_h : 1) * sizeof(int64_t));
    if (!hv || !rv || !mark) { Py_CLEAR(out); PyErr_NoMemory(); goto done; }
    for (int64_t i = 0; i < max_h; i++) mark[i] = -1;
    int64_t stamp = 0;
    for (Py_ssize_t u = 0; u < n_units; u++) {
        int64_t h = u_sid[u], h0 = v.e_start[h], h1 = v.e_start[h + 1];
        const double *hn = &norms[h * MAX_ORDER];
        int64_t h_len = v.n_words[h] > 0 ? v.n_words[h] - 1 : 0;
        for (int64_t e = h0; e < h1; e++) { pos[v.e_gram[e]] = (int32_t)(e - h0); hv[e - h0] = VAL(e); }
        double score[MAX_ORDER] = {0.0, 0.0, 0.0, 0.0};
        int64_t nref = 0;
        for (Py_ssize_t j = 0; j < max_k; j++) {
            int64_t r = ref_sid[u_rs[u] * max_k + j];
            if (r < 0) continue;
            nref++;
            stamp++;
            for (int64_t e = v.e_start[r]; e < v.e_start[r + 1]; e++) {
                int32_t p = pos[v.e_gram[e]];
                if (p >= 0) { rv[p] = VAL(e); mark[p] = stamp; }
            }
            /* the reference's sum over the hypothesis' n-grams in insertion order; an n-gram
               absent from the reference adds an exact 0 and is skipped */
            double val[MAX_ORDER] = {0.0, 0.0, 0.0, 0.0};
            for (int64_t e = h0; e < h1; e++) {
                if (mark[e - h0] != stamp) continue;
                double x = hv[e - h0], r_v = rv[e - h0];
                double m = clipped ? (r_v < x ? r_v : x) : x;
                val[v.e_order[e]] += m * r_v;
            }
            const double *rn = &norms[r * MAX_ORDER];
            int64_t r_len = v.n_words[r] > 0 ? v.n_words[r] - 1 : 0;
            double pen = 1.0;
            if (clipped) {
                Py_ssize_t pi = pen_off + (Py_ssize_t)(h_len - r_len);
                if (pi < 0 || pi >= n_pen) {
                    PyErr_SetString(PyExc_IndexError, "cider_units: length penalty table too short");
                    Py_CLEAR(out);
                    goto done;
                }
                pen = pens[pi];
            }
            for (int k = 0; k < MAX_ORDER; k++) {
                if (hn[k] != 0 && rn[k] != 0) val[k] /= (hn[k] * rn[k]);
                if (clipped) val[k] *= pen;
                score[k] += val[k];
            }
        }
        for (int64_t e = h0; e < h1; e++) pos[v.e_gram[e]] = -1;
        double avg = (((score[0] + score[1]) + score[2]) + score[3]) / MAX_ORDER;
        avg = avg / (double)nref;
        score_out[u] = avg * 10.0;
    }
#undef VAL
done:
    free(norms); free(pos); free(hv); free(rv); free(mark); free(sqtab);
    if (bu.buf) PyBuffer_Release(&bu);
    if (burs.buf) PyBuffer_Release(&burs);
    if (brs.buf) PyBuffer_Release(&brs);
    if (bdfi.buf) PyBuffer_Release(&bdfi);
    if (blw.buf) PyBuffer_Release(&blw);
    if (bpen.buf) PyBuffer_Release(&bpen);
    index_release(&v);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* BLEU statistics per unit                                                                    */

PyDoc_STRVAR(bleu_units_doc,
"bleu_units(e_start, e_gram, e_order, e_count, n_words, n_grams, u_sid, u_rs, ref_sid, max_k)\n"
"    -> (reflen, correct) bytearrays: int64 (units,) and int64 (units, 4)\n\n"
"Closest reference length (ties to the shorter) and clipped n-gram matches per order.");

static PyObject *bleu_units(PyObject *self, PyObject *args) {
    PyObject *es, *eg, *eo, *ec, *nw, *us_obj, *urs_obj, *rs_obj;
    Py_ssize_t n_grams, max_k;
    if (!PyArg_ParseTuple(args, "OOOOOnOOOn", &es, &eg, &eo, &ec, &nw, &n_grams, &us_obj, &urs_obj, &rs_obj, &max_k))
        return NULL;
    IndexView v;
    Py_buffer bu = {0}, burs = {0}, brs = {0};
    PyObject *b_reflen = NULL, *b_correct = NULL, *out = NULL;
    int64_t *stamp = NULL, *maxc = NULL;
    if (index_view(&v, es, eg, eo, ec, nw) < 0) goto done;
#define GET(obj, b, sz, name) if (get_buf(obj, &b, sz, name) < 0) { b.buf = NULL; goto done; }
    GET(us_obj, bu, 8, "u_sid") GET(urs_obj, burs, 8, "u_rs") GET(rs_obj, brs, 8, "ref_sid")
#undef GET
    Py_ssize_t n_units = bu.len / 8, n_rs = max_k > 0 ? brs.len / 8 / max_k : 0;
    const int64_t *u_sid = bu.buf, *u_rs = burs.buf, *ref_sid = brs.buf;
    if (max_k < 1 || brs.len / 8 != n_rs * max_k || burs.len / 8 != n_units) {
        PyErr_SetString(PyExc_ValueError, "bleu_units: array shapes");
        goto done;
    }
    if (check_ids(u_sid, n_units, 0, v.n_sent, "u_sid") < 0 || check_ids(u_rs, n_units, 0, n_rs, "u_rs") < 0
        || check_ids(ref_sid, n_rs * max_k, -1, v.n_sent, "ref_sid") < 0
        || check_ids32(v.e_gram, v.n_entries, 0, n_grams, "e_gram") < 0)
        goto done;
    void *d1 = NULL, *d2 = NULL;
    b_reflen = new_bytes(n_units * 8, &d1);
    b_correct = new_bytes(n_units * 8 * MAX_ORDER, &d2);
    stamp = malloc((n_grams ? n_grams : 1) * sizeof(int64_t));
    maxc = malloc((n_grams ? n_grams : 1) * sizeof(int64_t));
    if (!b_reflen || !b_correct || !stamp || !maxc) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    int64_t *reflen = d1, *correct = d2;
    for (Py_ssize_t g = 0; g < n_grams; g++) stamp[g] = -1;
    for (Py_ssize_t u = 0; u < n_units; u++) {
        int64_t h = u_sid[u], testlen = v.n_words[h];
        int64_t best = -1, best_cost_d = 0;
        for (Py_ssize_t j = 0; j < max_k; j++) {
            int64_t r = ref_sid[u_rs[u] * max_k + j];
            if (r < 0) continue;
            int64_t l = v.n_words[r], dd = l > testlen ? l - testlen : testlen - l;
            /* min over (|l - L|, l): ties go to the shorter reference */
            if (best < 0 || dd < best_cost_d || (dd == best_cost_d && l < best)) { best = l; best_cost_d = dd; }
            for (int64_t e = v.e_start[r]; e < v.e_start[r + 1]; e++) {
                int64_t g = v.e_gram[e];
                if (stamp[g] != u) { stamp[g] = u; maxc[g] = v.e_count[e]; }
                else if (v.e_count[e] > maxc[g]) maxc[g] = v.e_count[e];
            }
        }
        reflen[u] = best;
        int64_t c[MAX_ORDER] = {0, 0, 0, 0};
        for (int64_t e = v.e_start[h]; e < v.e_start[h + 1]; e++) {
            int64_t g = v.e_gram[e];
            if (stamp[g] == u) c[v.e_order[e]] += v.e_count[e] < maxc[g] ? v.e_count[e] : maxc[g];
        }
        for (int k = 0; k < MAX_ORDER; k++) correct[u * MAX_ORDER + k] = c[k];
    }
    out = PyTuple_Pack(2, b_reflen, b_correct);
done:
    Py_XDECREF(b_reflen); Py_XDECREF(b_correct);
    free(stamp); free(maxc);
    if (bu.buf) PyBuffer_Release(&bu);
    if (burs.buf) PyBuffer_Release(&burs);
    if (brs.buf) PyBuffer_Release(&brs);
    index_release(&v);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* ROUGE-L: LCS lengths of sentence pairs                                                      */

PyDoc_STRVAR(lcs_pairs_doc,
"lcs_pairs(words (int32), w_start, n_vocab, c_sid, r_sid) -> bytearray int64\n\n"
"Length of the longest common subsequence of the word-id sequences of each (c_sid[i], r_sid[i])\n"
"pair: bit-parallel (Allison-Dix / Hyyro) over the reference, in one 64-bit word when it has at\n"
"most 64 words and in ceil(n/64) words with the carry of the addition running upwards otherwise.\n"
"Integers, so any algorithm gives the same values.");

static PyObject *lcs_pairs(PyObject *self, PyObject *args) {
    PyObject *w_obj, *ws_obj, *c_obj, *r_obj;
    Py_ssize_t n_vocab;
    if (!PyArg_ParseTuple(args, "OOnOO", &w_obj, &ws_obj, &n_vocab, &c_obj, &r_obj)) return NULL;
    Py_buffer bw = {0}, bws = {0}, bc = {0}, br = {0};
    PyObject *out = NULL;
    uint64_t *mask = NULL, *blk = NULL;
    int32_t *slot = NULL;
#define GET(obj, b, sz, name) if (get_buf(obj, &b, sz, name) < 0) { b.buf = NULL; goto done; }
    GET(w_obj, bw, 4, "words") GET(ws_obj, bws, 8, "w_start") GET(c_obj, bc, 8, "c_sid") GET(r_obj, br, 8, "r_sid")
#undef GET
    const int32_t *words = bw.buf;
    const int64_t *w_start = bws.buf, *c_sid = bc.buf, *r_sid = br.buf;
    Py_ssize_t n_sent = bws.len / 8 - 1, n_pairs = bc.len / 8, W = bw.len / 4;
    if (n_sent < 0 || br.len != bc.len) { PyErr_SetString(PyExc_ValueError, "lcs_pairs: array shapes"); goto done; }
    if (check_ids(c_sid, n_pairs, 0, n_sent, "c_sid") < 0 || check_ids(r_sid, n_pairs, 0, n_sent, "r_sid") < 0
        || check_ids32(words, W, 0, n_vocab, "words") < 0)
        goto done;
    for (Py_ssize_t s = 0; s < n_sent; s++)
        if (w_start[s] < 0 || w_start[s] > w_start[s + 1] || w_start[s + 1] > W) {
            PyErr_SetString(PyExc_ValueError, "lcs_pairs: w_start is not a partition of words");
            goto done;
        }
    void *d;
    out = new_bytes(n_pairs * 8, &d);
    mask = calloc(n_vocab ? n_vocab : 1, sizeof(uint64_t));
    if (!out || !mask) { Py_CLEAR(out); if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    int64_t *lcs = d;
    size_t blk_cap = 0;
    for (Py_ssize_t i = 0; i < n_pairs; i++) {
        const int32_t *c = words + w_start[c_sid[i]], *r = words + w_start[r_sid[i]];
        int64_t nc = w_start[c_sid[i] + 1] - w_start[c_sid[i]], nr = w_start[r_sid[i] + 1] - w_start[r_sid[i]];
        if (nr <= 64) {
            for (int64_t j = 0; j < nr; j++) mask[r[j]] |= (uint64_t)1 << j;
            uint64_t full = nr == 64 ? ~(uint64_t)0 : (((uint64_t)1 << nr) - 1), v = full;
            for (int64_t t = 0; t < nc; t++) {
                uint64_t m = mask[c[t]];
                if (!m) continue;
                uint64_t u = v & m;
                v = ((v + u) | (v - u)) & full;
            }
            lcs[i] = nr - __builtin_popcountll(v);
            for (int64_t j = 0; j < nr; j++) mask[r[j]] = 0;
            continue;
        }
        /* The same recurrence on an nr-bit vector of nb words (a table would cost nc * nr steps,
           quadratic in the caption length). The reference's distinct words get slots, each with
           its nb-word match mask; u is a subset of v, so v - u borrows nothing across words. */
        size_t nb = (size_t)(nr + 63) / 64;
        if (!slot) {
            slot = malloc((n_vocab ? n_vocab : 1) * sizeof(int32_t));
            if (!slot) { Py_CLEAR(out); PyErr_NoMemory(); goto done; }
            for (Py_ssize_t k = 0; k < n_vocab; k++) slot[k] = -1;
        }
        if ((size_t)(nr + 1) * nb > blk_cap) {
            blk_cap = (size_t)(nr + 1) * nb;
            uint64_t *nblk = realloc(blk, blk_cap * sizeof(uint64_t));
            if (!nblk) { Py_CLEAR(out); PyErr_NoMemory(); goto done; }
            blk = nblk;
        }
        uint64_t *vb = blk, *bm = blk + nb;
        int32_t n_dist = 0;
        for (int64_t j = 0; j < nr; j++) {
            if (slot[r[j]] < 0) {
                slot[r[j]] = n_dist;
                memset(bm + (size_t)n_dist * nb, 0, nb * sizeof(uint64_t));
                n_dist++;
            }
            bm[(size_t)slot[r[j]] * nb + (size_t)j / 64] |= (uint64_t)1 << (j % 64);
        }
        uint64_t top = nr % 64 ? (((uint64_t)1 << (nr % 64)) - 1) : ~(uint64_t)0;
        for (size_t b = 0; b < nb; b++) vb[b] = ~(uint64_t)0;
        vb[nb - 1] = top;
        for (int64_t t = 0; t < nc; t++) {
            int32_t s = slot[c[t]];
            if (s < 0) continue;
            const uint64_t *m = bm + (size_t)s * nb;
            uint64_t carry = 0;
            for (size_t b = 0; b < nb; b++) {
                uint64_t v = vb[b], u = v & m[b], sum = v + u, sum2 = sum + carry;
                carry = (uint64_t)(sum < v) | (uint64_t)(sum2 < sum);
                vb[b] = sum2 | (v - u);
            }
            vb[nb - 1] &= top;
        }
        int64_t ones = 0;
        for (size_t b = 0; b < nb; b++) ones += __builtin_popcountll(vb[b]);
        lcs[i] = nr - ones;
        for (int64_t j = 0; j < nr; j++) slot[r[j]] = -1;
    }
done:
    free(mask); free(blk); free(slot);
    if (bw.buf) PyBuffer_Release(&bw);
    if (bws.buf) PyBuffer_Release(&bws);
    if (bc.buf) PyBuffer_Release(&bc);
    if (br.buf) PyBuffer_Release(&br);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* PTB tokenizer fast path                                                                     */

static inline int is_alnum_a(Py_UCS1 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Does token t[0:n) (no spaces) match one chunk of capeval.text.ptb's fast shape? */
static int chunk_ok(const Py_UCS1 *t, Py_ssize_t n) {
    if (n == 1 && strchr(".,;:!?\"", t[0]) && t[0]) return 1;
    Py_ssize_t p = 0;
    if (p < n && t[p] == '"') p++;
    if (p + 1 < n && t[p] == '\'' && t[p + 1] == 's') {
        p += 2;
    } else if (p < n && is_alnum_a(t[p])) {
        while (p < n && is_alnum_a(t[p])) p++;
        while (p + 1 < n && t[p] == '-' && is_alnum_a(t[p + 1])) {
            p++;
            while (p < n && is_alnum_a(t[p])) p++;
        }
        if (p + 1 < n && t[p] == '\'' && t[p + 1] == 's') p += 2;
    } else {
        return 0;
    }
    if (p < n && t[p] && strchr(",;:!?", t[p])) p++;
    else if (p < n && t[p] == '.' && (p + 1 == n || t[p + 1] == '"')) p++;
    if (p < n && t[p] == '"') p++;
    return p == n;
}

static const char *SPLIT_WORDS[] = {"cannot", "gonna", "gotta", "lemme", "gimme", "wanna", NULL};

/* The abbreviations, as ASCII byte strings (views into the set's str objects). */
typedef struct { const char *s; Py_ssize_t n; } Abbrev;
typedef struct { Abbrev *a; Py_ssize_t n; } AbbrevSet;

static int abbrev_has(const AbbrevSet *set, const char *w, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < set->n; i++)
        if (set->a[i].n == n && set->a[i].s[0] == w[0] && memcmp(set->a[i].s, w, (size_t)n) == 0) return 1;
    return 0;
}

/* One caption: its tokens (str), or None when it needs the general lexer. low: scratch. */
static PyObject *fast_one(PyObject *cap, const AbbrevSet *abbrev, char *low, char *out) {
    if (!PyUnicode_IS_ASCII(cap)) Py_RETURN_NONE;
    Py_ssize_t n = PyUnicode_GET_LENGTH(cap);
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(cap);
    /* One pass: each space-separated chunk must have the fast shape (checked on the original
       text: the shape's "'s" is case-sensitive); the lower-cased text is built for the vetoes
       and the output at the same time. */
    Py_ssize_t o = 0, tok = -1;
    int pending = 0, digits = 0, doubled = 0, dot = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        char c = i < n ? (char)s[i] : ' ';
        if (c == ' ') {
            if (tok >= 0) {
                if (!chunk_ok(s + tok, i - tok)) Py_RETURN_NONE;
                if (dot && i - tok > 1) {
                    /* the letters/digits before the period: one letter or an abbreviation keeps
                       it (general path), unless they are the "s" of "'s" */
                    Py_ssize_t b = tok, e = i;
                    while (e > b && strchr(".,;:!?\"", low[e - 1])) e--;
                    while (b < e && low[b] == '"') b++;
                    for (Py_ssize_t k = e; k > b; k--)
                        if (low[k - 1] == '-') { b = k; break; }
                    if (!(e - b >= 2 && low[e - 2] == '\'' && low[e - 1] == 's')) {
                        if (e - b == 1 && low[b] >= 'a' && low[b] <= 'z') Py_RETURN_NONE;
                        if (e > b && abbrev_has(abbrev, low + b, e - b)) Py_RETURN_NONE;
                    }
                }
                tok = -1;
                dot = 0;
            }
            if (i < n) {
                low[i] = ' ';
                if (digits) digits = 2; /* a digit, then spaces */
                pending = 1;
            }
            continue;
        }
        if (tok < 0) tok = i;
        char lc = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        low[i] = lc;
        if (i && lc == low[i - 1] && (lc == 'n' || lc == 't' || lc == 'm')) doubled = 1;
        if (lc >= '0' && lc <= '9') {
            if (digits == 2) Py_RETURN_NONE; /* digits across spaces */
            digits = 1;
        } else {
            digits = 0;
        }
        if (lc == '.') dot = 1;
        /* output: drop . , ; : ! ? ", split "'" off, single spaces */
        if (lc == '.' || lc == ',' || lc == ';' || lc == ':' || lc == '!' || lc == '?' || lc == '"') continue;
        if (lc == '\'') pending = 1;
        if (pending && o) out[o++] = ' ';
        pending = 0;
        out[o++] = lc;
    }
    /* words CoreNLP splits, anywhere in the text; each has a doubled n, t or m */
    if (doubled)
        for (const char **w = SPLIT_WORDS; *w; w++) {
            Py_ssize_t lw = (Py_ssize_t)strlen(*w);
            for (Py_ssize_t i = 0; i + lw <= n; i++)
                if (low[i] == (*w)[0] && memcmp(low + i, *w, (size_t)lw) == 0) Py_RETURN_NONE;
        }
    return PyUnicode_FromStringAndSize(out, o);
}

PyDoc_STRVAR(ptb_fast_doc,
"ptb_fast(captions, abbreviations) -> list of str or None\n\n"
"capeval.text.ptb._fast of each caption: its PTB tokens when it has the fast shape and no veto,\n"
"else None.");

static PyObject *ptb_fast(PyObject *self, PyObject *args) {
    PyObject *caps, *abbrev;
    if (!PyArg_ParseTuple(args, "OO", &caps, &abbrev)) return NULL;
    if (!PyAnySet_Check(abbrev)) { PyErr_SetString(PyExc_TypeError, "abbreviations must be a set"); return NULL; }
    PyObject *seq = PySequence_Fast(caps, "ptb_fast needs a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), maxlen = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_Check(items[i])) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "caption %zd is not a str", i);
            return NULL;
        }
        if (PyUnicode_GET_LENGTH(items[i]) > maxlen) maxlen = PyUnicode_GET_LENGTH(items[i]);
    }
    char *low = malloc(maxlen + 8), *buf = malloc(2 * maxlen + 8);
    AbbrevSet aset = {malloc((PySet_GET_SIZE(abbrev) + 1) * sizeof(Abbrev)), 0};
    PyObject *out = PyList_New(n);
    if (!low || !buf || !out || !aset.a) {
        free(low); free(buf); free(aset.a); Py_XDECREF(out); Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    /* Only lower-case ASCII words can equal a word of a fast-shaped caption; others never match. */
    PyObject *it = PyObject_GetIter(abbrev), *key;
    if (!it) { free(low); free(buf); free(aset.a); Py_DECREF(out); Py_DECREF(seq); return NULL; }
    /* the set holds its strings for the whole call, so views into them stay valid */
    while ((key = PyIter_Next(it)) != NULL) {
        if (PyUnicode_Check(key) && PyUnicode_IS_ASCII(key) && PyUnicode_GET_LENGTH(key) > 0
            && aset.n < PySet_GET_SIZE(abbrev)) {
            aset.a[aset.n].s = (const char *)PyUnicode_1BYTE_DATA(key);
            aset.a[aset.n].n = PyUnicode_GET_LENGTH(key);
            aset.n++;
        }
        Py_DECREF(key);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) { free(low); free(buf); free(aset.a); Py_DECREF(out); Py_DECREF(seq); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = fast_one(items[i], &aset, low, buf);
        if (!t) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, i, t);
    }
    free(low); free(buf); free(aset.a);
    Py_DECREF(seq);
    return out;
}

/* ------------------------------------------------------------------------------------------ */
/* 128-bit n-gram keys (the streamed CIDEr df)                                                 */
/*
 * key128(b) of a byte string b of length n: two 64-bit lanes, h1 = SEED1 ^ n, h2 = SEED2 ^ n;
 * for each 8-byte little-endian word w of b (the last one zero-padded), in order:
 *   h1 ^= rotl(w * K1, 31) * K2;  h1 = rotl(h1, 27) + h2;  h1 = h1 * 5 + 0x52dce729
 *   h2 ^= rotl(w * K2, 33) * K1;  h2 = rotl(h2, 31) + h1;  h2 = h2 * 5 + 0x38495ab5
 * then h1 += h2; h2 += h1; h1 = fmix(h1); h2 = fmix(h2); h1 += h2; h2 += h1 (MurmurHash3's
 * round and finaliser, one word per lane). All arithmetic is modulo 2^64. The numpy twin is
 * capeval.stream.dfstore._key128_numpy; tests compare the two.
 */
#define K128_SEED1 0x9e3779b97f4a7c15ULL
#define K128_SEED2 0xc2b2ae3d27d4eb4fULL
#define K128_K1 0x87c37b91114253d5ULL
#define K128_K2 0x4cf5ad432745937fULL

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fmix64(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static void key128(const unsigned char *b, size_t n, uint64_t out[2]) {
    uint64_t h1 = K128_SEED1 ^ (uint64_t)n, h2 = K128_SEED2 ^ (uint64_t)n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        size_t m = n - i < 8 ? n - i : 8;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (m == 8) memcpy(&w, b + i, 8); else
#endif
        for (size_t j = 0; j < m; j++) w |= (uint64_t)b[i + j] << (8 * j);
        h1 ^= rotl64(w * K128_K1, 31) * K128_K2;
        h1 = rotl64(h1, 27) + h2;
        h1 = h1 * 5 + 0x52dce729ULL;
        h2 ^= rotl64(w * K128_K2, 33) * K128_K1;
        h2 = rotl64(h2, 31) + h1;
        h2 = h2 * 5 + 0x38495ab5ULL;
    }
    h1 += h2; h2 += h1;
    h1 = fmix64(h1); h2 = fmix64(h2);
    h1 += h2; h2 += h1;
    out[0] = h1; out[1] = h2;
}

/* UTF-8 of a str (lone surrogates encoded as by "surrogatepass", as Python's twin does), or
 * the bytes of a bytes object. *owner receives a new reference to release, or NULL. */
static const char *utf8_of(PyObject *o, Py_ssize_t *len, PyObject **owner) {
    *owner = NULL;
    if (PyBytes_Check(o)) { *len = PyBytes_GET_SIZE(o); return PyBytes_AS_STRING(o); }
    if (!PyUnicode_Check(o)) { PyErr_SetString(PyExc_TypeError, "keys128: items must be str or bytes"); return NULL; }
    const char *s = PyUnicode_AsUTF8AndSize(o, len);
    if (s) return s;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
    PyErr_Clear();
    *owner = PyUnicode_AsEncodedString(o, "utf-8", "surrogatepass");
    if (!*owner) return NULL;
    *len = PyBytes_GET_SIZE(*owner);
    return PyBytes_AS_STRING(*owner);
}

PyDoc_STRVAR(keys128_doc, "keys128(items) -> bytearray of 16 bytes per item: key128 of each str's UTF-8 (or bytes).");

static PyObject *keys128(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "keys128: expected a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    void *data;
    PyObject *out = new_bytes(16 * n, &data);
    if (!out) { Py_DECREF(seq); return NULL; }
    uint64_t *k = (uint64_t *)data;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len; PyObject *owner;
        const char *s = utf8_of(items[i], &len, &owner);
        if (!s) { Py_DECREF(out); Py_DECREF(seq); return NULL; }
        key128((const unsigned char *)s, (size_t)len, k + 2 * i);
        Py_XDECREF(owner);
    }
    Py_DECREF(seq);
    return out;
}

static int cmp_entry(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1]) return x[1] < y[1] ? -1 : 1;
    return 0;
}

/* (k0, k1, count) records, sorted by (k0, k1). */
typedef struct { uint64_t k0, k1, count; } K128Entry;

/* Sort by a counting pass on the top bits of k0 (the keys are well mixed, so buckets hold one
 * record or so), then order each bucket by comparison: insertion sort, or qsort for a large
 * bucket (inputs crafted to share top bits stay O(n log n)). Some 10x faster than qsort alone. */
static int sort_entries(K128Entry *e, size_t n) {
    if (n < 2) return 0;
    int bits = 1;
    while (((size_t)2 << bits) < n && bits < 22) bits++;
    size_t nb = (size_t)1 << bits;
    int shift = 64 - bits;
    size_t *end = calloc(nb, sizeof(size_t));
    K128Entry *tmp = malloc(n * sizeof(K128Entry));
    if (!end || !tmp) { free(end); free(tmp); return -1; }
    for (size_t i = 0; i < n; i++) end[e[i].k0 >> shift]++;
    for (size_t b = 1; b < nb; b++) end[b] += end[b - 1];
    for (size_t i = n; i-- > 0;) tmp[--end[e[i].k0 >> shift]] = e[i];  /* end[b] -> start of b */
    for (size_t b = 0; b < nb; b++) {
        size_t lo = end[b], hi = b + 1 < nb ? end[b + 1] : n;
        if (hi - lo > 32) { qsort(tmp + lo, hi - lo, sizeof(K128Entry), cmp_entry); continue; }
        for (size_t i = lo + 1; i < hi; i++) {
            K128Entry x = tmp[i];
            size_t j = i;
            while (j > lo && cmp_entry(&tmp[j - 1], &x) > 0) { tmp[j] = tmp[j - 1]; j--; }
            tmp[j] = x;
        }
    }
    memcpy(e, tmp, n * sizeof(K128Entry));
    free(end); free(tmp);
    return 0;
}

/* 128-bit key -> (rows holding it, last row that added it); used = 0 marks an empty slot. */
typedef struct { uint64_t k0, k1; uint32_t count, row1; } K128Slot;  /* row1 = row + 1 */
typedef struct { K128Slot *s; size_t mask, n; } K128Map;

static int k128_init(K128Map *m, size_t hint) {
    size_t cap = 1024;
    while (cap < hint + hint / 2) cap <<= 1;
    m->s = calloc(cap, sizeof(K128Slot));
    m->mask = cap - 1; m->n = 0;
    return m->s ? 0 : -1;
}

static int k128_grow(K128Map *m) {
    size_t cap = (m->mask + 1) * 2;
    K128Slot *s = calloc(cap, sizeof(K128Slot));
    if (!s) return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        K128Slot *o = &m->s[i];
        if (!o->row1) continue;
        size_t j = o->k0 & (cap - 1);
        while (s[j].row1) j = (j + 1) & (cap - 1);
        s[j] = *o;
    }
    free(m->s);
    m->s = s; m->mask = cap - 1;
    return 0;
}

/* Count key k once per row. */
static int k128_add(K128Map *m, const uint64_t k[2], uint32_t row1) {
    if ((m->n + 1) * 3 > (m->mask + 1) * 2 && k128_grow(m) < 0) return -1;
    size_t j = k[0] & m->mask;  /* key128 is well mixed: its low bits index the table */
    for (;;) {
        K128Slot *sl = &m->s[j];
        if (!sl->row1) {
            sl->k0 = k[0]; sl->k1 = k[1]; sl->count = 1; sl->row1 = row1; m->n++;
            return 0;
        }
        if (sl->k0 == k[0] && sl->k1 == k[1]) {
            if (sl->row1 != row1) { sl->count++; sl->row1 = row1; }
            return 0;
        }
        j = (j + 1) & m->mask;
    }
}

/* The UTF-8 of " ".join(o.split()) for a str o (lone surrogates as "surrogatepass" encodes
 * them), or the bytes of a bytes object as they are. An ASCII str that is already so (no
 * whitespace but single inner spaces) is read in place; *owner gets a new reference to
 * release, or NULL. */
static const unsigned char *joined_words(PyObject *o, size_t *len, PyObject **owner) {
    *owner = NULL;
    if (PyBytes_Check(o)) { *len = (size_t)PyBytes_GET_SIZE(o); return (const unsigned char *)PyBytes_AS_STRING(o); }
    if (!PyUnicode_Check(o)) { PyErr_SetString(PyExc_TypeError, "refset_keys128: sentences must be str or bytes"); return NULL; }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(o) < 0) return NULL;
#endif
    if (PyUnicode_IS_ASCII(o)) {
        const unsigned char *t = (const unsigned char *)PyUnicode_DATA(o);
        Py_ssize_t n = PyUnicode_GET_LENGTH(o);
        int plain = n == 0 || (t[0] != ' ' && t[n - 1] != ' ');
        for (Py_ssize_t i = 0; plain && i < n; i++) {
            unsigned char c = t[i];
            /* str.split()'s ASCII whitespace: \t \n \v \f \r, \x1c-\x1f and space */
            if ((c == ' ' && t[i + 1] == ' ') || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) plain = 0;
        }
        if (plain) { *len = (size_t)n; return t; }
    }
    PyObject *words = PyUnicode_Split(o, NULL, -1), *sep = NULL, *joined = NULL, *b = NULL;
    if (words) sep = PyUnicode_FromString(" ");
    if (sep) joined = PyUnicode_Join(sep, words);
    if (joined) b = PyUnicode_AsEncodedString(joined, "utf-8", "surrogatepass");
    Py_XDECREF(words); Py_XDECREF(sep); Py_XDECREF(joined);
    if (!b) return NULL;
    *owner = b;
    *len = (size_t)PyBytes_GET_SIZE(b);
    return (const unsigned char *)PyBytes_AS_STRING(b);
}

PyDoc_STRVAR(refset_keys128_doc,
"refset_keys128(sentences, bounds, max_n) -> (keys, counts): for each row r, the distinct key128\n"
"of every 1..max_n-gram of sentences[bounds[r]:bounds[r+1]] (str: its words, str.split(), joined\n"
"by single spaces and UTF-8 encoded; bytes: taken as so joined), so an n-gram is a contiguous run\n"
"of bytes; over all rows, the sorted distinct keys (16 bytes each) and how many rows hold each\n"
"(uint32).");

static PyObject *refset_keys128(PyObject *self, PyObject *args) {
    PyObject *sents_in, *bounds_in;
    int max_n;
    if (!PyArg_ParseTuple(args, "OOi", &sents_in, &bounds_in, &max_n)) return NULL;
    if (max_n < 1 || max_n > 64) { PyErr_SetString(PyExc_ValueError, "refset_keys128: max_n in 1..64"); return NULL; }
    PyObject *sents = PySequence_Fast(sents_in, "refset_keys128: sentences must be a sequence");
    if (!sents) return NULL;
    PyObject *bounds = PySequence_Fast(bounds_in, "refset_keys128: bounds must be a sequence");
    if (!bounds) { Py_DECREF(sents); return NULL; }
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(sents), nb = PySequence_Fast_GET_SIZE(bounds);
    if (nb - 1 >= (Py_ssize_t)UINT32_MAX) { PyErr_SetString(PyExc_OverflowError, "refset_keys128: too many rows"); Py_DECREF(sents); Py_DECREF(bounds); return NULL; }
    size_t wcap = 64;
    size_t *ws = malloc(wcap * sizeof(size_t)), *we = malloc(wcap * sizeof(size_t));
    uint64_t *ent = NULL;
    K128Map map = {NULL, 0, 0};
    PyObject *out = NULL, *owner = NULL;
    if (!ws || !we || k128_init(&map, 16 * (size_t)ns) < 0) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t r = 0; r + 1 < nb; r++) {
        Py_ssize_t lo = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(bounds, r));
        Py_ssize_t hi = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(bounds, r + 1));
        if (PyErr_Occurred()) goto done;
        if (lo < 0 || hi < lo || hi > ns) { PyErr_SetString(PyExc_ValueError, "refset_keys128: bad bounds"); goto done; }
        for (Py_ssize_t si = lo; si < hi; si++) {
            size_t len, nw = 0;
            Py_CLEAR(owner);
            const unsigned char *t = joined_words(PySequence_Fast_GET_ITEM(sents, si), &len, &owner);
            if (!t) goto done;
            for (size_t i = 0; i < len;) {
                while (i < len && t[i] == ' ') i++;
                if (i >= len) break;
                size_t st = i;
                while (i < len && t[i] != ' ') i++;
                if (nw == wcap) {
                    wcap *= 2;
                    size_t *a = realloc(ws, wcap * sizeof(size_t));
                    if (a) ws = a;
                    size_t *c = a ? realloc(we, wcap * sizeof(size_t)) : NULL;
                    if (c) we = c;
                    if (!a || !c) { PyErr_NoMemory(); goto done; }
                }
                ws[nw] = st; we[nw] = i; nw++;
            }
            /* Keys in batches, each slot prefetched before the batch is added: the table is
             * larger than the caches, and the adds then wait on memory far less. */
            uint64_t batch[64][2];
            size_t nbatch = 0;
            for (size_t k = 1; k <= (size_t)max_n; k++) {
                for (size_t i = 0; i + k <= nw; i++) {
                    key128(t + ws[i], we[i + k - 1] - ws[i], batch[nbatch]);
#if defined(__GNUC__)
                    __builtin_prefetch(&map.s[batch[nbatch][0] & map.mask], 1);
#endif
                    if (++nbatch == 64) {
                        for (size_t b = 0; b < nbatch; b++)
                            if (k128_add(&map, batch[b], (uint32_t)(r + 1)) < 0) { PyErr_NoMemory(); goto done; }
                        nbatch = 0;
                    }
                }
            }
            for (size_t b = 0; b < nbatch; b++)
                if (k128_add(&map, batch[b], (uint32_t)(r + 1)) < 0) { PyErr_NoMemory(); goto done; }
        }
    }
    {
        /* The distinct keys sorted, each with its row count: (k0, k1, count) records. */
        size_t nd = map.n, d = 0;
        ent = malloc((nd ? nd : 1) * 3 * sizeof(uint64_t));
        if (!ent) { PyErr_NoMemory(); goto done; }
        for (size_t i = 0; i <= map.mask; i++) {
            K128Slot *sl = &map.s[i];
            if (!sl->row1) continue;
            ent[3 * d] = sl->k0; ent[3 * d + 1] = sl->k1; ent[3 * d + 2] = sl->count; d++;
        }
        if (sort_entries((K128Entry *)ent, nd) < 0) { PyErr_NoMemory(); goto done; }
        void *kd, *cd;
        PyObject *keys = new_bytes((Py_ssize_t)(16 * nd), &kd);
        PyObject *counts = keys ? new_bytes((Py_ssize_t)(4 * nd), &cd) : NULL;
        if (keys && counts) {
            uint64_t *ko = kd;
            uint32_t *co = cd;
            for (size_t i = 0; i < nd; i++) { ko[2 * i] = ent[3 * i]; ko[2 * i + 1] = ent[3 * i + 1]; co[i] = (uint32_t)ent[3 * i + 2]; }
            out = PyTuple_Pack(2, keys, counts);
        }
        Py_XDECREF(keys); Py_XDECREF(counts);
    }
done:
    Py_XDECREF(owner);
    free(ws); free(we); free(ent); free(map.s);
    Py_DECREF(sents); Py_DECREF(bounds);
    return out;
}

PyDoc_STRVAR(joined_keys128_doc,
"joined_keys128(vocab, ids, m) -> bytearray: key128 of each n-gram given as m word ids per row\n"
"(int64, row-major), its words (vocab: bytes; id len(vocab) is the empty word) joined by spaces.");

static PyObject *joined_keys128(PyObject *self, PyObject *args) {
    PyObject *vocab_in, *ids_in;
    int m;
    if (!PyArg_ParseTuple(args, "OOi", &vocab_in, &ids_in, &m)) return NULL;
    if (m < 1) { PyErr_SetString(PyExc_ValueError, "joined_keys128: m >= 1"); return NULL; }
    PyObject *vocab = PySequence_Fast(vocab_in, "joined_keys128: vocab must be a sequence");
    if (!vocab) return NULL;
    Py_ssize_t nv = PySequence_Fast_GET_SIZE(vocab);
    for (Py_ssize_t i = 0; i < nv; i++)
        if (!PyBytes_Check(PySequence_Fast_GET_ITEM(vocab, i))) {
            Py_DECREF(vocab); PyErr_SetString(PyExc_TypeError, "joined_keys128: vocab items must be bytes"); return NULL;
        }
    Py_buffer v;
    if (get_buf(ids_in, &v, 8 * (Py_ssize_t)m, "joined_keys128 ids") < 0) { Py_DECREF(vocab); return NULL; }
    Py_ssize_t n = v.len / (8 * m);
    const int64_t *ids = v.buf;
    void *data;
    PyObject *out = new_bytes(16 * n, &data);
    size_t cap = 256;
    unsigned char *buf = malloc(cap);
    if (!out || !buf) { if (out) { Py_CLEAR(out); } if (!buf) PyErr_NoMemory(); goto done; }
    for (Py_ssize_t r = 0; r < n; r++) {
        size_t len = 0;
        for (int j = 0; j < m; j++) {
            int64_t id = ids[r * m + j];
            if (id < 0 || id > nv) { PyErr_SetString(PyExc_ValueError, "joined_keys128: word id out of range"); Py_CLEAR(out); goto done; }
            const char *w = ""; Py_ssize_t wl = 0;
            if (id < nv) { PyObject *b = PySequence_Fast_GET_ITEM(vocab, id); w = PyBytes_AS_STRING(b); wl = PyBytes_GET_SIZE(b); }
            size_t need = len + (size_t)wl + 1;
            if (need > cap) {
                while (need > cap) cap *= 2;
                unsigned char *a = realloc(buf, cap);
                if (!a) { PyErr_NoMemory(); Py_CLEAR(out); goto done; }
                buf = a;
            }
            if (j > 0) buf[len++] = ' ';
            memcpy(buf + len, w, (size_t)wl);
            len += (size_t)wl;
        }
        key128(buf, len, (uint64_t *)data + 2 * r);
    }
done:
    free(buf);
    PyBuffer_Release(&v);
    Py_DECREF(vocab);
    return out;
}

typedef struct { uint64_t k0; size_t i; } QEntry;

static int cmp_qentry(const void *a, const void *b) {
    uint64_t x = ((const QEntry *)a)->k0, y = ((const QEntry *)b)->k0;
    return x < y ? -1 : x > y;
}

PyDoc_STRVAR(lookup_keys128_doc,
"lookup_keys128(first, second, counts, queries) -> bytearray float64: for each query key (16 bytes:\n"
"first, second), counts[j] of the table row j holding it, else 0. The table (first, second: uint64,\n"
"counts: uint32) is sorted by (first, second). The queries are visited in order of their first\n"
"half, each found by a galloping search from the previous one's place (a memory-mapped table is\n"
"read in order).");

static PyObject *lookup_keys128(PyObject *self, PyObject *args) {
    PyObject *f_in, *s_in, *c_in, *q_in;
    if (!PyArg_ParseTuple(args, "OOOO", &f_in, &s_in, &c_in, &q_in)) return NULL;
    Py_buffer bf, bs, bc, bq;
    if (get_buf(f_in, &bf, 8, "lookup_keys128 first") < 0) return NULL;
    if (get_buf(s_in, &bs, 8, "lookup_keys128 second") < 0) { PyBuffer_Release(&bf); return NULL; }
    if (get_buf(c_in, &bc, 4, "lookup_keys128 counts") < 0) { PyBuffer_Release(&bf); PyBuffer_Release(&bs); return NULL; }
    if (get_buf(q_in, &bq, 16, "lookup_keys128 queries") < 0) {
        PyBuffer_Release(&bf); PyBuffer_Release(&bs); PyBuffer_Release(&bc); return NULL;
    }
    PyObject *out = NULL;
    QEntry *tmp = NULL;
    size_t *end = NULL;
    size_t n = (size_t)(bf.len / 8), nq = (size_t)(bq.len / 16);
    const uint64_t *first = bf.buf, *second = bs.buf, *q = bq.buf;
    const uint32_t *counts = bc.buf;
    if ((size_t)(bs.len / 8) != n || (size_t)(bc.len / 4) != n) {
        PyErr_SetString(PyExc_ValueError, "lookup_keys128: table columns differ in length");
        goto done;
    }
    void *od;
    out = new_bytes((Py_ssize_t)(8 * nq), &od);
    if (!out) goto done;
    double *df = od;
    if (nq == 0) goto done;
    /* Queries in order of first half: a counting pass on the top bits, then insertion sort
     * within each bucket (qsort for a large one: crafted keys sharing top bits stay O(n log n)). */
    int bits = 1;
    while (((size_t)2 << bits) < nq && bits < 22) bits++;
    size_t nb = (size_t)1 << bits;
    int shift = 64 - bits;
    tmp = malloc(nq * sizeof(QEntry));
    end = calloc(nb, sizeof(size_t));
    if (!tmp || !end) { PyErr_NoMemory(); Py_CLEAR(out); goto done; }
    for (size_t i = 0; i < nq; i++) end[q[2 * i] >> shift]++;
    for (size_t b = 1; b < nb; b++) end[b] += end[b - 1];
    for (size_t i = nq; i-- > 0;) { QEntry x = {q[2 * i], i}; tmp[--end[x.k0 >> shift]] = x; }
    for (size_t b = 0; b < nb; b++) {
        size_t lo = end[b], hi = b + 1 < nb ? end[b + 1] : nq;
        if (hi - lo > 32) { qsort(tmp + lo, hi - lo, sizeof(QEntry), cmp_qentry); continue; }
        for (size_t i = lo + 1; i < hi; i++) {
            QEntry x = tmp[i];
            size_t j = i;
            while (j > lo && tmp[j - 1].k0 > x.k0) { tmp[j] = tmp[j - 1]; j--; }
            tmp[j] = x;
        }
    }
    size_t pos = 0;  /* first[pos - 1] < every key still to come */
    for (size_t t = 0; t < nq; t++) {
        uint64_t k0 = tmp[t].k0, k1 = q[2 * tmp[t].i + 1];
        /* lower bound of k0 in first[pos:]: gallop to a bracket, then bisect it */
        size_t lo = pos, step = 1, hi = pos;
        while (hi < n && first[hi] < k0) { lo = hi + 1; hi += step; step <<= 1; }
        if (hi > n) hi = n;
        while (lo < hi) { size_t mid = lo + (hi - lo) / 2; if (first[mid] < k0) lo = mid + 1; else hi = mid; }
        pos = lo;
        double v = 0.0;
        for (size_t j = lo; j < n && first[j] == k0; j++)  /* equal first halves: a clash, rare */
            if (second[j] == k1) { v = (double)counts[j]; break; }
        df[tmp[t].i] = v;
    }
done:
    free(tmp); free(end);
    PyBuffer_Release(&bf); PyBuffer_Release(&bs); PyBuffer_Release(&bc); PyBuffer_Release(&bq);
    return out;
}

/* ------------------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"build_index", build_index, METH_O, build_index_doc},
    {"refset_df", refset_df, METH_VARARGS, refset_df_doc},
    {"cider_units", cider_units, METH_VARARGS, cider_units_doc},
    {"bleu_units", bleu_units, METH_VARARGS, bleu_units_doc},
    {"lcs_pairs", lcs_pairs, METH_VARARGS, lcs_pairs_doc},
    {"ptb_fast", ptb_fast, METH_VARARGS, ptb_fast_doc},
    {"keys128", keys128, METH_O, keys128_doc},
    {"refset_keys128", refset_keys128, METH_VARARGS, refset_keys128_doc},
    {"joined_keys128", joined_keys128, METH_VARARGS, joined_keys128_doc},
    {"lookup_keys128", lookup_keys128, METH_VARARGS, lookup_keys128_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_speedups", "Optional compiled core of capeval's per-caption metrics.", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&moddef); }

/* The paraphrase table's one-pass conversion (optional; convert.py's Python paths write the
 * same files and are used when this is not built, or with CAPEVAL_PURE_PYTHON set).
 *
 * A Builder is fed the decompressed table in blocks of whole lines. Every third line (from the
 * first) is a probability and is skipped; the other two are the entry's reference phrase and
 * paraphrase. A phrase gets an id at its first appearance, and its words, split on single
 * spaces, get ids at theirs, in phrase order: the numbering of convert.py. Only "plain" tables
 * are accepted, as there: valid UTF-8, no '\r', and phrases whose words are separated by single
 * spaces alone (no tab, form feed, doubled or outer space). feed() returns False on anything
 * else and the caller falls back to the general conversion.
 *
 * The work on a block runs without the GIL, so a thread can decompress the next one meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define HAVE_MMAP 1
#endif
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* ---- growable arrays ------------------------------------------------------------------- */
typedef struct { char *p; size_t n, cap; } Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, size_t len) {
    if (buf_reserve(b, len) < 0) return -1;
    memcpy(b->p + b->n, src, len);
    b->n += len;
    return 0;
}

/* ---- string interning: id by first appearance --------------------------------------------- */
/* A slot holds what a lookup compares, so that a hit costs the slot and the text alone. */
typedef struct { uint32_t hash, id1, len, start; } Slot; /* id1 = id + 1, 0: free */

typedef struct {
    Buf text;    /* the strings, back to back (under 4 GiB: starts are 32-bit) */
    Buf starts;  /* if kept: int64 per string, plus the end: string i is text[starts[i]:starts[i+1]] */
    int keep_starts;
    Slot *slots;
    size_t mask;
    size_t count;
} Interner;

/* Whole-word loads only (a byte-wise tail would stall on store forwarding); the last 8 bytes
 * of a longer string overlap the loop's. Equality is always confirmed byte for byte. */
static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xC2B2AE3D27D4EB4FULL), v;
    if (n >= 8) {
        const unsigned char *last = p + n - 8;
        for (; p < last; p += 8) {
            memcpy(&v, p, 8);
            h = (h ^ v) * 0xFF51AFD7ED558CCDULL;
            h ^= h >> 31;
        }
        memcpy(&v, last, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        v = ((uint64_t)a << 32) | b;
    } else {
        v = n ? ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1] : 0;
    }
    h = (h ^ v) * 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    h *= 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 32);
}

#define SMALL_SLOTS (1 << 16)

/* Zeroed slots: a large table mapped on its own, zeroed by the kernel as it is touched (no
 * second pass) and in huge pages where the kernel offers them (random probes over 100 MB
 * otherwise miss the TLB as well as the cache). */
static Slot *new_slots(size_t count) {
#ifdef HAVE_MMAP
    if (count <= SMALL_SLOTS) return calloc(count, sizeof(Slot));
    void *p = mmap(NULL, count * sizeof(Slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, count * sizeof(Slot), MADV_HUGEPAGE);
#endif
    return p;
#else
    return calloc(count, sizeof(Slot));
#endif
}

static void free_slots(Slot *slots, size_t count) {
    if (!slots) return;
#ifdef HAVE_MMAP
    if (count > SMALL_SLOTS) {
        munmap(slots, count * sizeof(Slot));
        return;
    }
#endif
    free(slots);
}

static int interner_init(Interner *t, int keep_starts) {
    memset(t, 0, sizeof *t);
    t->keep_starts = keep_starts;
    t->mask = SMALL_SLOTS - 1;
    t->slots = new_slots(SMALL_SLOTS);
    int64_t zero = 0;
    if (!t->slots || (keep_starts && buf_put(&t->starts, &zero, sizeof zero) < 0)) return -1;
    return 0;
}

static void interner_free(Interner *t) {
    free(t->text.p);
    free(t->starts.p);
    free_slots(t->slots, t->mask + 1);
    memset(t, 0, sizeof *t);
}

static int interner_grow(Interner *t) {
    size_t mask = t->mask * 2 + 1;
    Slot *slots = new_slots(mask + 1);
    if (!slots) return -1;
    for (size_t k = 0; k <= t->mask; k++) {
        if (!t->slots[k].id1) continue;
        size_t i = t->slots[k].hash & mask;
        while (slots[i].id1) i = (i + 1) & mask;
        slots[i] = t->slots[k];
    }
    free_slots(t->slots, t->mask + 1);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

enum { NEW = -3, LIMIT = -2, FULL = -1 };

/* Short strings compared inline: most phrases and words are, and a call per probe costs. */
static inline int same_bytes(const char *a, const char *b, size_t n) {
    if (n <= 8) {
        if (n >= 4) {
            uint32_t a0, a1, b0, b1;
            memcpy(&a0, a, 4); memcpy(&a1, a + n - 4, 4);
            memcpy(&b0, b, 4); memcpy(&b1, b + n - 4, 4);
            return a0 == b0 && a1 == b1;
        }
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    if (n <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8); memcpy(&a1, a + n - 8, 8);
        memcpy(&b0, b, 8); memcpy(&b1, b + n - 8, 8);
        return a0 == b0 && a1 == b1;
    }
    return memcmp(a, b, n) == 0;
}

/* The id of s[0:n] (hash h), and where its text is kept through *start; when it was not there
 * yet, its new id through *added and NEW; FULL when out of memory, LIMIT beyond 32-bit ids and
 * offsets. The table grows at 70% full: linear probes stay short, and every slot touched is
 * memory zeroed by the kernel, which costs. */
static int64_t intern(Interner *t, const char *s, size_t n, uint32_t h, int32_t *added, uint32_t *start) {
    size_t i = h & t->mask;
    for (const Slot *sl; (sl = &t->slots[i])->id1 != 0; i = (i + 1) & t->mask) {
        if (sl->hash == h && sl->len == n && same_bytes(t->text.p + sl->start, s, n)) {
            *start = sl->start;
            return (int64_t)sl->id1 - 1;
        }
    }
    if (t->count >= INT32_MAX - 1 || t->text.n + n > UINT32_MAX) return LIMIT;
    Slot new = {h, (uint32_t)t->count + 1, (uint32_t)n, (uint32_t)t->text.n};
    int64_t end = (int64_t)(t->text.n + n);
    if (buf_put(&t->text, s, n) < 0 || (t->keep_starts && buf_put(&t->starts, &end, sizeof end) < 0)) return FULL;
    t->slots[i] = new;
    *start = new.start;
    *added = (int32_t)t->count++;
    if (t->count * 10 > (t->mask + 1) * 7 && interner_grow(t) < 0) return FULL;
    return NEW;
}

static inline uint32_t hash32(const char *s, size_t n) { return (uint32_t)hash_bytes((const unsigned char *)s, n); }

/* ---- plain text ------------------------------------------------------------------------- */
/* Whether s[0:n] is valid UTF-8 as Python's strict decoder sees it (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 32 <= n) {
            uint64_t v[4];
            memcpy(v, s + i, 32);
            if (!((v[0] | v[1] | v[2] | v[3]) & 0x8080808080808080ULL)) { i += 32; continue; }
        }
        if (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, s + i, 8);
            if (!(v & 0x8080808080808080ULL)) { i += 8; continue; }
        }
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return 0;
        if (i + len > n) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        i += len;
    }
    return 1;
}

/* ---- the builder ------------------------------------------------------------------------ */
typedef struct {
    PyObject_HEAD
    Interner phrases, words;
    Buf tokens;     /* int32 word ids of the phrases, in phrase order */
    Buf offsets;    /* int64 per phrase, plus 0 first: phrase p's words are tokens[offsets[p]:offsets[p+1]] */
    Buf refs, pars; /* int32 phrase ids per entry */
    long long lines;
    int32_t last_ref; /* id of the previous reference line (-1: none), and where its text is */
    size_t last_ref_start, last_ref_len;
    int state;      /* OK, or why feeding stopped */
} Builder;

enum { OK = 0, NOT_PLAIN = 1, NO_MEMORY = 2, TAKEN = 3 };

static int add_word(Builder *b, const char *s, size_t n) {
    int32_t wid;
    uint32_t wstart;
    int64_t w = intern(&b->words, s, n, hash32(s, n), &wid, &wstart);
    if (w == FULL) return NO_MEMORY;
    if (w == LIMIT) return NOT_PLAIN; /* the general conversion decides */
    if (w >= 0) wid = (int32_t)w;
    return buf_put(&b->tokens, &wid, sizeof wid) < 0 ? NO_MEMORY : OK;
}

/* A phrase line; a new phrase's words get their ids, in one pass that also checks it is
 * plain: words separated by single spaces alone (no tab, form feed, doubled or outer space;
 * an empty phrase has no words). */
static int add_phrase(Builder *b, const char *s, size_t n, uint32_t h, int32_t *id_out, uint32_t *start) {
    int64_t id = intern(&b->phrases, s, n, h, id_out, start);
    if (id == FULL) return NO_MEMORY;
    if (id == LIMIT) return NOT_PLAIN; /* the general conversion decides */
    if (id >= 0) { *id_out = (int32_t)id; return OK; }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > ' ') continue; /* most bytes: one test */
        if (c == ' ') {
            if (i == at) return NOT_PLAIN; /* an outer or doubled space */
            int rc = add_word(b, s + at, i - at);
            if (rc != OK) return rc;
            at = i + 1;
        } else if (c == '\t' || c == '\f') {
            return NOT_PLAIN;
        }
    }
    if (n && at == n) return NOT_PLAIN; /* a trailing space */
    if (n) {
        int rc = add_word(b, s + at, n - at);
        if (rc != OK) return rc;
    }
    int64_t end = (int64_t)(b->tokens.n / sizeof(int32_t));
    return buf_put(&b->offsets, &end, sizeof end) < 0 ? NO_MEMORY : OK;
}

enum { REF = 1, PAR = 2, SAME_REF = 3 };

/* One phrase line: a reference, a paraphrase, or a reference equal to the previous one. */
static int feed_phrase(Builder *b, const char *s, size_t n, uint32_t h, int kind) {
    int32_t id = b->last_ref;
    if (kind != SAME_REF) {
        uint32_t start;
        int rc = add_phrase(b, s, n, h, &id, &start);
        if (rc != OK) return rc;
        if (kind == REF) {
            b->last_ref = id;
            b->last_ref_start = start;
            b->last_ref_len = n;
        }
    }
    return buf_put(kind == PAR ? &b->pars : &b->refs, &id, sizeof id) < 0 ? NO_MEMORY : OK;
}

#define CHUNK 1024
#define AHEAD 16

/* Lines are split CHUNK at a time. Probability lines are only counted, and a reference line
 * equal to the previous one (the table is grouped by reference phrase: 92% of coco's are)
 * reuses its id; the other phrase lines are hashed, and while line i is looked up, the text
 * of the phrase in line i + AHEAD's first slot and the slot of line i + 2 AHEAD are
 * prefetched, so that the table's cache misses overlap instead of following one another. */
static int feed_block(Builder *b, const char *data, size_t n) {
    if (memchr(data, '\r', n) || !valid_utf8((const unsigned char *)data, n)) return NOT_PLAIN;
    size_t begin[CHUNK], len[CHUNK];
    uint32_t hash[CHUNK];
    unsigned char kind[CHUNK];
    size_t at = 0;
    while (at < n) {
        int k = 0;
        const char *prev = b->last_ref >= 0 ? b->phrases.text.p + b->last_ref_start : NULL;
        size_t prev_len = b->last_ref_len;
        for (; k < CHUNK && at < n; b->lines++) {
            const char *nl = memchr(data + at, '\n', n - at);
            size_t stop = nl ? (size_t)(nl - data) : n, start = at;
            at = stop + 1;
            int role = (int)(b->lines % 3);
            if (!role) continue;
            begin[k] = start;
            len[k] = stop - start;
            if (role == 1 && prev && prev_len == len[k] && same_bytes(prev, data + start, len[k])) {
                kind[k++] = SAME_REF;
                continue;
            }
            if (role == 1) {
                prev = data + start;
                prev_len = len[k];
            }
            kind[k] = role == 1 ? REF : PAR;
            hash[k++] = hash32(data + start, stop - start);
        }
        const Interner *t = &b->phrases;
        for (int j = 0; j < k && j < 2 * AHEAD; j++)
            if (kind[j] != SAME_REF) PREFETCH(&t->slots[hash[j] & t->mask]);
        for (int j = 0; j < k; j++) {
            if (j + 2 * AHEAD < k && kind[j + 2 * AHEAD] != SAME_REF)
                PREFETCH(&t->slots[hash[j + 2 * AHEAD] & t->mask]);
            if (j + AHEAD < k && kind[j + AHEAD] != SAME_REF) {
                const Slot *sl = &t->slots[hash[j + AHEAD] & t->mask];
                if (sl->id1) PREFETCH(t->text.p + sl->start);
            }
            int rc = feed_phrase(b, data + begin[j], len[j], hash[j], kind[j]);
            if (rc != OK) return rc;
        }
    }
    return OK;
}

static void builder_dealloc(Builder *b) {
    interner_free(&b->phrases);
    interner_free(&b->words);
    free(b->tokens.p);
    free(b->offsets.p);
    free(b->refs.p);
    free(b->pars.p);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyObject *builder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Builder() takes no arguments");
        return NULL;
    }
    Builder *b = (Builder *)type->tp_alloc(type, 0);
    if (!b) return NULL;
    b->last_ref = -1;
    int64_t zero = 0;
    if (interner_init(&b->phrases, 0) < 0 || interner_init(&b->words, 1) < 0
            || buf_put(&b->offsets, &zero, sizeof zero) < 0) {
        Py_DECREF(b);
        return PyErr_NoMemory();
    }
    return (PyObject *)b;
}

/* feed(block): the block's lines (a last one without '\n' counts as a line); False once the
 * table is found not plain (every later call too). The GIL is released meanwhile, and the
 * builder must not be used from two threads at once. */
static PyObject *builder_feed(Builder *b, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (b->state == OK) {
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = feed_block(b, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
        b->state = rc;
    }
    PyBuffer_Release(&view);
    if (b->state == NO_MEMORY) return PyErr_NoMemory();
    if (b->state == TAKEN) {
        PyErr_SetString(PyExc_ValueError, "the result was taken already");
        return NULL;
    }
    return PyBool_FromLong(b->state == OK);
}

/* A read-only buffer that owns memory the builder filled: results handed over without a copy
 * (numpy.frombuffer reads it in place and keeps it alive). */
typedef struct {
    PyObject_HEAD
    Buf buf;
} Chunk;

static void chunk_dealloc(Chunk *c) {
    free(c->buf.p);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int chunk_getbuffer(Chunk *c, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)c, c->buf.n ? c->buf.p : (void *)"", (Py_ssize_t)c->buf.n, 1, flags);
}

static PyBufferProcs chunk_as_buffer = {(getbufferproc)chunk_getbuffer, NULL};

static PyTypeObject ChunkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "capeval.metrics._meteor_native._paratable.Chunk",
    .tp_basicsize = sizeof(Chunk),
    .tp_dealloc = (destructor)chunk_dealloc,
    .tp_as_buffer = &chunk_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only bytes the paraphrase builder filled.",
};

/* *buf's memory, now owned by a Chunk (the builder's Buf is left empty). */
static PyObject *take(Buf *buf) {
    Chunk *c = PyObject_New(Chunk, &ChunkType);
    if (!c) return NULL;
    c->buf = *buf;
    memset(buf, 0, sizeof *buf);
    return (PyObject *)c;
}

/* The words joined by '\n' (a word has no '\n'). */
static PyObject *vocab_bytes(const Interner *w) {
    size_t n = w->text.n + (w->count ? w->count - 1 : 0);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (!out) return NULL;
    char *p = PyBytes_AS_STRING(out);
    const int64_t *starts = (const int64_t *)w->starts.p;
    for (size_t i = 0; i < w->count; i++) {
        if (i) *p++ = '\n';
        size_t len = (size_t)(starts[i + 1] - starts[i]);
        memcpy(p, w->text.p + starts[i], len);
        p += len;
    }
    return out;
}

/* result() -> (lines, entry refs int32, entry paraphrases int32, phrase offsets int64,
 * phrase words int32, vocabulary joined by '\n'): native-endian buffers, handed over once
 * (the builder takes no more lines after). */
static PyObject *builder_result(Builder *b, PyObject *Py_UNUSED(ignored)) {
    if (b->state != OK) {
        PyErr_SetString(PyExc_ValueError, b->state == NOT_PLAIN ? "the table was not plain; there is no result"
                                                                : "the result was taken already");
        return NULL;
    }
    b->state = TAKEN;
    return Py_BuildValue("(LNNNNN)", b->lines, take(&b->refs), take(&b->pars), take(&b->offsets),
                         take(&b->tokens), vocab_bytes(&b->words));
}

static PyMethodDef builder_methods[] = {
    {"feed", (PyCFunction)builder_feed, METH_O, "Add a block of whole lines; False if not plain."},
    {"result", (PyCFunction)builder_result, METH_NOARGS, "The converted arrays, as bytes."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "capeval.metrics._meteor_native._paratable.Builder",
    .tp_basicsize = sizeof(Builder),
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Phrase and word ids of a plain paraphrase table, fed in blocks of whole lines.",
    .tp_methods = builder_methods,
    .tp_new = builder_new,
};

/* ---- the lookup indexes ------------------------------------------------------------------- */
static int get_view(PyObject *o, Py_buffer *v, size_t item) {
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (v->len % (Py_ssize_t)item) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_ValueError, "buffer length is not a multiple of its item size");
        return -1;
    }
    return 0;
}

/* The rank that picks a phrase's anchor: its rarest word in the table, ties to the smaller id. */
static void anchors(const int64_t *off, size_t n_phrases, const int32_t *tok, const int64_t *freq,
                   int64_t n_words, int32_t *anchor) {
    for (size_t p = 0; p < n_phrases; p++) {
        anchor[p] = -1;
        int64_t best = INT64_MAX;
        for (int64_t k = off[p]; k < off[p + 1]; k++) {
            int64_t rank = freq[tok[k]] * n_words + tok[k];
            if (rank < best) { best = rank; anchor[p] = tok[k]; }
        }
    }
}

/* index(phrase_offsets int64, phrase_tokens int32, entry_ref int32) -> (anchor_phrases int32,
 * anchor_offsets int64, empty_phrases int32, ref_entries int32, ref_offsets int64) as bytes:
 * convert._index_paraphrases_numpy's arrays, by counting sorts (stable, as its argsorts are). */
static PyObject *py_index(PyObject *self, PyObject *args) {
    PyObject *o_off, *o_tok, *o_ref, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO", &o_off, &o_tok, &o_ref)) return NULL;
    Py_buffer v_off, v_tok, v_ref;
    if (get_view(o_off, &v_off, 8) < 0) return NULL;
    if (get_view(o_tok, &v_tok, 4) < 0) { PyBuffer_Release(&v_off); return NULL; }
    if (get_view(o_ref, &v_ref, 4) < 0) { PyBuffer_Release(&v_off); PyBuffer_Release(&v_tok); return NULL; }
    const int64_t *off = v_off.buf;
    const int32_t *tok = v_tok.buf, *ref = v_ref.buf;
    size_t n_phrases = v_off.len / 8 ? (size_t)(v_off.len / 8 - 1) : 0;
    size_t n_tok = (size_t)(v_tok.len / 4), n_ent = (size_t)(v_ref.len / 4);
    int64_t n_words = 0;
    int bad = n_phrases == 0 && v_off.len == 0;
    for (size_t p = 0; p < n_phrases && !bad; p++)
        bad = off[p] < 0 || off[p + 1] < off[p] || (size_t)off[p + 1] > n_tok;
    for (size_t k = 0; k < n_tok && !bad; k++) {
        bad = tok[k] < 0;
        if (tok[k] >= n_words) n_words = (int64_t)tok[k] + 1;
    }
    for (size_t e = 0; e < n_ent && !bad; e++) bad = ref[e] < 0 || (size_t)ref[e] >= n_phrases;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "inconsistent phrase offsets, words or entries");
        goto done;
    }
    int64_t *freq = calloc((size_t)n_words + 1, sizeof(int64_t));
    int32_t *anchor = malloc((n_phrases + 1) * sizeof(int32_t));
    size_t n_filled = 0, n_empty = 0;
    PyObject *b_ap = NULL, *b_ao = NULL, *b_em = NULL, *b_re = NULL, *b_ro = NULL;
    if (!freq || !anchor) { PyErr_NoMemory(); goto free_all; }
    for (size_t k = 0; k < n_tok; k++) freq[tok[k]]++;
    anchors(off, n_phrases, tok, freq, n_words, anchor);
    for (size_t p = 0; p < n_phrases; p++) anchor[p] >= 0 ? n_filled++ : n_empty++;
    b_ap = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_filled * 4));
    b_ao = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n_words + 1) * 8));
    b_em = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_empty * 4));
    b_re = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_ent * 4));
    b_ro = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n_phrases + 1) * 8));
    if (!b_ap || !b_ao || !b_em || !b_re || !b_ro) goto free_all;
    int64_t *ao = (int64_t *)PyBytes_AS_STRING(b_ao), *ro = (int64_t *)PyBytes_AS_STRING(b_ro);
    int32_t *ap = (int32_t *)PyBytes_AS_STRING(b_ap), *em = (int32_t *)PyBytes_AS_STRING(b_em);
    int32_t *re = (int32_t *)PyBytes_AS_STRING(b_re);
    /* phrases grouped by anchor, ascending within a group; entries grouped by reference */
    memset(ao, 0, (size_t)(n_words + 1) * 8);
    for (size_t p = 0; p < n_phrases; p++)
        if (anchor[p] >= 0) ao[anchor[p] + 1]++;
    for (int64_t w = 0; w < n_words; w++) ao[w + 1] += ao[w];
    memcpy(freq, ao, (size_t)n_words * 8); /* freq: now each group's next free place */
    for (size_t p = 0, e = 0; p < n_phrases; p++) {
        if (anchor[p] >= 0) ap[freq[anchor[p]]++] = (int32_t)p;
        else em[e++] = (int32_t)p;
    }
    memset(ro, 0, (n_phrases + 1) * 8);
    for (size_t e = 0; e < n_ent; e++) ro[ref[e] + 1]++;
    for (size_t p = 0; p < n_phrases; p++) ro[p + 1] += ro[p];
    free(freq);
    freq = malloc((n_phrases + 1) * sizeof(int64_t));
    if (!freq) { PyErr_NoMemory(); goto free_all; }
    memcpy(freq, ro, (n_phrases + 1) * 8);
    for (size_t e = 0; e < n_ent; e++) re[freq[ref[e]]++] = (int32_t)e;
    result = Py_BuildValue("(OOOOO)", b_ap, b_ao, b_em, b_re, b_ro);
free_all:
    Py_XDECREF(b_ap);
    Py_XDECREF(b_ao);
    Py_XDECREF(b_em);
    Py_XDECREF(b_re);
    Py_XDECREF(b_ro);
    free(freq);
    free(anchor);
done:
    PyBuffer_Release(&v_off);
    PyBuffer_Release(&v_tok);
    PyBuffer_Release(&v_ref);
    return result;
}

/* valid_utf8(data): exposed so the tests can hold it against Python's decoder. */
static PyObject *py_valid_utf8(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    int ok = valid_utf8(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

static PyMethodDef module_methods[] = {
    {"valid_utf8", py_valid_utf8, METH_O, "Whether the bytes are valid UTF-8 (strict)."},
    {"index", py_index, METH_VARARGS, "The paraphrase table's lookup indexes (anchors, entries by reference)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_paratable", "One-pass conversion of METEOR's plain paraphrase table.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__paratable(void) {
    if (PyType_Ready(&BuilderType) < 0 || PyType_Ready(&ChunkType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&BuilderType);
    if (PyModule_AddObject(m, "Builder", (PyObject *)&BuilderType) < 0) {
        Py_DECREF(&BuilderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

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
#include <sys/mman.h>

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
    Buf starts;  /* int64 per string, plus the end: string i is text[starts[i]:starts[i+1]] */
    Slot *slots;
    size_t mask;
    size_t count;
} Interner;

/* Whole-word loads only (a byte-wise tail would stall on store forwarding); the last 8 bytes
 * of a longer string overlap the loop's. Equality is always confirmed by memcmp. */
static uint64_t hash_bytes(const unsigned char *p, size_t n) {
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

static int interner_init(Interner *t) {
    memset(t, 0, sizeof *t);
    t->mask = (1 << 16) - 1;
    t->slots = calloc(t->mask + 1, sizeof(Slot));
    int64_t zero = 0;
    if (!t->slots || buf_put(&t->starts, &zero, sizeof zero) < 0) return -1;
    return 0;
}

static void interner_free(Interner *t) {
    free(t->text.p);
    free(t->starts.p);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* Zeroed slots; large tables in huge pages where the kernel offers them (random probes over
 * 100 MB otherwise miss the TLB as well as the cache). */
static Slot *new_slots(size_t count) {
    size_t size = count * sizeof(Slot);
#ifdef MADV_HUGEPAGE
    if (size >= (1 << 22)) {
        void *p = NULL;
        if (posix_memalign(&p, 1 << 21, size) != 0) return NULL;
        madvise(p, size, MADV_HUGEPAGE);
        memset(p, 0, size);
        return p;
    }
#endif
    return calloc(count, sizeof(Slot));
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
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

enum { NEW = -2, FULL = -1 };

/* The id of s[0:n]; when it was not there yet, its new id through *added and NEW; FULL when
 * out of memory or beyond 32-bit ids and offsets. */
static int64_t intern(Interner *t, const char *s, size_t n, uint32_t h, int32_t *added) {
    size_t i = h & t->mask;
    for (const Slot *sl; (sl = &t->slots[i])->id1 != 0; i = (i + 1) & t->mask) {
        if (sl->hash == h && sl->len == n && memcmp(t->text.p + sl->start, s, n) == 0)
            return (int64_t)sl->id1 - 1;
    }
    if (t->count >= INT32_MAX - 1 || t->text.n + n > UINT32_MAX) return FULL;
    Slot new = {h, (uint32_t)t->count + 1, (uint32_t)n, (uint32_t)t->text.n};
    int64_t end = (int64_t)(t->text.n + n);
    if (buf_put(&t->text, s, n) < 0 || buf_put(&t->starts, &end, sizeof end) < 0) return FULL;
    t->slots[i] = new;
    *added = (int32_t)t->count++;
    if (t->count * 2 > t->mask && interner_grow(t) < 0) return FULL;
    return NEW;
}

static uint32_t hash32(const char *s, size_t n) { return (uint32_t)hash_bytes((const unsigned char *)s, n); }

/* ---- plain text ------------------------------------------------------------------------- */
/* Whether s[0:n] is valid UTF-8 as Python's strict decoder sees it (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
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

/* Words separated by single spaces alone, none empty (an empty phrase has no words). */
static int plain_phrase(const char *s, size_t n) {
    if (n == 0) return 1;
    if (s[0] == ' ' || s[n - 1] == ' ') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\t' || c == '\f' || (c == ' ' && s[i + 1] == ' ')) return 0;
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

enum { OK = 0, NOT_PLAIN = 1, NO_MEMORY = 2 };

static int add_phrase(Builder *b, const char *s, size_t n, uint32_t h, int32_t *id_out) {
    int64_t id = intern(&b->phrases, s, n, h, id_out);
    if (id == FULL) return NO_MEMORY;
    if (id >= 0) { *id_out = (int32_t)id; return OK; }
    if (!plain_phrase(s, n)) return NOT_PLAIN;
    size_t at = 0;
    while (at < n) {
        const char *sp = memchr(s + at, ' ', n - at);
        size_t stop = sp ? (size_t)(sp - s) : n;
        int32_t wid;
        int64_t w = intern(&b->words, s + at, stop - at, hash32(s + at, stop - at), &wid);
        if (w == FULL) return NO_MEMORY;
        if (w >= 0) wid = (int32_t)w;
        if (buf_put(&b->tokens, &wid, sizeof wid) < 0) return NO_MEMORY;
        at = stop + 1;
    }
    int64_t end = (int64_t)(b->tokens.n / sizeof(int32_t));
    return buf_put(&b->offsets, &end, sizeof end) < 0 ? NO_MEMORY : OK;
}

/* One line; a reference line equal to the previous one (the table is grouped by reference
 * phrase: 92% of coco's are) reuses its id without a lookup. */
static int feed_line(Builder *b, const char *s, size_t n, uint32_t h) {
    int role = (int)(b->lines++ % 3);
    if (!role) return OK;
    int32_t id;
    if (role == 1 && b->last_ref >= 0 && b->last_ref_len == n
            && memcmp(b->phrases.text.p + b->last_ref_start, s, n) == 0) {
        id = b->last_ref;
    } else {
        int rc = add_phrase(b, s, n, h, &id);
        if (rc != OK) return rc;
        if (role == 1) {
            const int64_t *starts = (const int64_t *)b->phrases.starts.p;
            b->last_ref = id;
            b->last_ref_start = (size_t)starts[id];
            b->last_ref_len = n;
        }
    }
    return buf_put(role == 1 ? &b->refs : &b->pars, &id, sizeof id) < 0 ? NO_MEMORY : OK;
}

#define CHUNK 1024
#define AHEAD 8

/* Lines are split and hashed CHUNK at a time; then, while line i is looked up, the text of
 * the phrase in line i + AHEAD's first slot and the slot of line i + 2 AHEAD are prefetched,
 * so that the table's cache misses overlap instead of following one another. */
static int feed_block(Builder *b, const char *data, size_t n) {
    if (memchr(data, '\r', n) || !valid_utf8((const unsigned char *)data, n)) return NOT_PLAIN;
    size_t begin[CHUNK], len[CHUNK];
    uint32_t hash[CHUNK];
    size_t at = 0;
    while (at < n) {
        int k = 0;
        for (; k < CHUNK && at < n; k++) {
            const char *nl = memchr(data + at, '\n', n - at);
            size_t stop = nl ? (size_t)(nl - data) : n;
            begin[k] = at;
            len[k] = stop - at;
            hash[k] = hash32(data + at, len[k]);
            at = stop + 1;
        }
        const Interner *t = &b->phrases;
        for (int j = 0; j < k && j < 2 * AHEAD; j++) __builtin_prefetch(&t->slots[hash[j] & t->mask]);
        for (int j = 0; j < k; j++) {
            if (j + 2 * AHEAD < k) __builtin_prefetch(&t->slots[hash[j + 2 * AHEAD] & t->mask]);
            if (j + AHEAD < k) {
                const Slot *sl = &t->slots[hash[j + AHEAD] & t->mask];
                if (sl->id1) __builtin_prefetch(t->text.p + sl->start);
            }
            int rc = feed_line(b, data + begin[j], len[j], hash[j]);
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
    if (interner_init(&b->phrases) < 0 || interner_init(&b->words) < 0
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
    return PyBool_FromLong(b->state == OK);
}

static PyObject *as_bytes(const Buf *buf) {
    return PyBytes_FromStringAndSize(buf->n ? buf->p : "", (Py_ssize_t)buf->n);
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
 * phrase words int32, vocabulary joined by '\n'), raw native-endian bytes. */
static PyObject *builder_result(Builder *b, PyObject *Py_UNUSED(ignored)) {
    if (b->state != OK) {
        PyErr_SetString(PyExc_ValueError, "the table was not plain; there is no result");
        return NULL;
    }
    return Py_BuildValue("(LNNNNN)", b->lines, as_bytes(&b->refs), as_bytes(&b->pars), as_bytes(&b->offsets),
                         as_bytes(&b->tokens), vocab_bytes(&b->words));
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_paratable", "One-pass conversion of METEOR's plain paraphrase table.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__paratable(void) {
    if (PyType_Ready(&BuilderType) < 0) return NULL;
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

/* A small JSON reader and value tree for the C conformance runner and the
 * round trip (header-only; no dependencies beyond libc).
 *
 * jparse() reads one JSON document (RFC 8259: objects, arrays, strings with
 * every escape including \uXXXX surrogate pairs, numbers, true/false/null)
 * into a tree of `jval`s; nesting deeper than JSON_MAX_DEPTH is refused.
 * The same tree is built by hand (jnew_*, jobj_put, jarr_push) for the
 * answers a runner observes, so expected and observed values compare with
 * one function (jsubset). Every tree is freed with jfree(). */
#ifndef TJ_MINI_JSON_H
#define TJ_MINI_JSON_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    bool b;
    double num;
    char *str;           /* J_STR: NUL-terminated (may hold NULs: see len) */
    size_t len;          /* J_STR: bytes; J_ARR/J_OBJ: items */
    struct jval **items; /* J_ARR / J_OBJ values */
    char **keys;         /* J_OBJ keys */
    size_t cap;
} jval;

static inline void *jx_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) { fputs("out of memory\n", stderr); abort(); }
    return p;
}

static inline jval *jnew(jtype t) { jval *v = jx_alloc(sizeof *v); v->t = t; return v; }
static inline jval *jnew_null(void) { return jnew(J_NULL); }
static inline jval *jnew_bool(bool b) { jval *v = jnew(J_BOOL); v->b = b; return v; }
static inline jval *jnew_num(double n) { jval *v = jnew(J_NUM); v->num = n; return v; }
static inline jval *jnew_strn(const char *s, size_t n) {
    jval *v = jnew(J_STR);
    v->str = jx_alloc(n + 1);
    if (n) memcpy(v->str, s, n);
    v->len = n;
    return v;
}
static inline jval *jnew_str(const char *s) { return s ? jnew_strn(s, strlen(s)) : jnew_null(); }
static inline jval *jnew_arr(void) { return jnew(J_ARR); }
static inline jval *jnew_obj(void) { return jnew(J_OBJ); }

static inline void jx_grow(jval *c) {
    if (c->len < c->cap) return;
    c->cap = c->cap ? c->cap * 2 : 8;
    c->items = realloc(c->items, c->cap * sizeof *c->items);
    if (c->t == J_OBJ) c->keys = realloc(c->keys, c->cap * sizeof *c->keys);
    if (!c->items || (c->t == J_OBJ && !c->keys)) { fputs("out of memory\n", stderr); abort(); }
}

static inline void jfree(jval *v);

/* Append `item` (owned from now on) to array `a`. */
static inline void jarr_push(jval *a, jval *item) { jx_grow(a); a->items[a->len++] = item; }

/* Set `key` of object `o` to `item` (owned from now on); replaces an old value. */
static inline void jobj_put(jval *o, const char *key, jval *item) {
    for (size_t i = 0; i < o->len; i++) {
        if (strcmp(o->keys[i], key) == 0) { jfree(o->items[i]); o->items[i] = item; return; }
    }
    jx_grow(o);
    size_t n = strlen(key);
    o->keys[o->len] = jx_alloc(n + 1);
    memcpy(o->keys[o->len], key, n);
    o->items[o->len++] = item;
}

static inline void jfree(jval *v) {
    if (!v) return;
    for (size_t i = 0; i < v->len && (v->t == J_ARR || v->t == J_OBJ); i++) {
        jfree(v->items[i]);
        if (v->t == J_OBJ) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

/* The value of `key` in object `o`, or NULL (also when `o` is not an object). */
static inline const jval *jget(const jval *o, const char *key) {
    if (!o || o->t != J_OBJ) return NULL;
    for (size_t i = 0; i < o->len; i++)
        if (strcmp(o->keys[i], key) == 0) return o->items[i];
    return NULL;
}

/* `key` of `o` as a string, or `dflt` when missing or not a string. */
static inline const char *jget_str(const jval *o, const char *key, const char *dflt) {
    const jval *v = jget(o, key);
    return v && v->t == J_STR ? v->str : dflt;
}

/* `key` of `o` as a number in *out; false when missing or not a number. */
static inline bool jget_num(const jval *o, const char *key, double *out) {
    const jval *v = jget(o, key);
    if (!v || v->t != J_NUM) return false;
    *out = v->num;
    return true;
}

/* ------------------------------------------------------------ parser */

struct jx_parser {
    const char *start, *s, *end;
    char *err;
    size_t errlen;
    int depth;
};

static inline jval *jx_fail(struct jx_parser *p, const char *what) {
    if (p->err && !p->err[0])
        snprintf(p->err, p->errlen, "%s at byte %zu", what, (size_t)(p->s - p->start));
    return NULL;
}

static inline void jx_ws(struct jx_parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static inline int jx_hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static inline size_t jx_utf8(unsigned cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* A string literal (p->s at the opening quote) into a new buffer. */
static inline char *jx_string(struct jx_parser *p, size_t *len_out) {
    p->s++; /* the quote */
    size_t cap = 16, n = 0;
    char *buf = jx_alloc(cap);
    while (p->s < p->end && *p->s != '"') {
        if (n + 5 > cap) { cap *= 2; buf = realloc(buf, cap); if (!buf) abort(); }
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) { free(buf); jx_fail(p, "control character in a string"); return NULL; }
        if (c != '\\') { buf[n++] = (char)c; p->s++; continue; }
        if (p->end - p->s < 2) break;
        char e = p->s[1];
        p->s += 2;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (p->end - p->s < 4 || jx_hex4(p->s, &cp)) { free(buf); jx_fail(p, "bad \\u escape"); return NULL; }
            p->s += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* a high surrogate: its low half must follow */
                if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' || jx_hex4(p->s + 2, &lo)
                    || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf); jx_fail(p, "unpaired surrogate"); return NULL;
                }
                p->s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf); jx_fail(p, "unpaired surrogate"); return NULL;
            }
            n += jx_utf8(cp, buf + n);
            break;
        }
        default: free(buf); jx_fail(p, "bad escape"); return NULL;
        }
    }
    if (p->s >= p->end) { free(buf); jx_fail(p, "unterminated string"); return NULL; }
    p->s++; /* the closing quote */
    buf[n] = 0;
    *len_out = n;
    return buf;
}

static inline jval *jx_value(struct jx_parser *p);

static inline jval *jx_container(struct jx_parser *p, bool obj) {
    if (++p->depth > JSON_MAX_DEPTH) return jx_fail(p, "nesting too deep");
    jval *c = obj ? jnew_obj() : jnew_arr();
    p->s++; /* [ or { */
    jx_ws(p);
    char close = obj ? '}' : ']';
    if (p->s < p->end && *p->s == close) { p->s++; p->depth--; return c; }
    for (;;) {
        char *key = NULL;
        if (obj) {
            jx_ws(p);
            size_t klen;
            if (p->s >= p->end || *p->s != '"' || !(key = jx_string(p, &klen))) {
                jfree(c);
                return jx_fail(p, "object key expected");
            }
            jx_ws(p);
            if (p->s >= p->end || *p->s != ':') { free(key); jfree(c); return jx_fail(p, "':' expected"); }
            p->s++;
        }
        jval *v = jx_value(p);
        if (!v) { free(key); jfree(c); return NULL; }
        if (obj) { jobj_put(c, key, v); free(key); } else jarr_push(c, v);
        jx_ws(p);
        if (p->s < p->end && *p->s == ',') { p->s++; continue; }
        if (p->s < p->end && *p->s == close) { p->s++; p->depth--; return c; }
        jfree(c);
        return jx_fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static inline jval *jx_value(struct jx_parser *p) {
    jx_ws(p);
    if (p->s >= p->end) return jx_fail(p, "value expected");
    char c = *p->s;
    if (c == '{' || c == '[') return jx_container(p, c == '{');
    if (c == '"') {
        size_t n;
        char *s = jx_string(p, &n);
        if (!s) return NULL;
        jval *v = jnew(J_STR);
        v->str = s;
        v->len = n;
        return v;
    }
    if (strncmp(p->s, "true", 4) == 0) { p->s += 4; return jnew_bool(true); }
    if (strncmp(p->s, "false", 5) == 0) { p->s += 5; return jnew_bool(false); }
    if (strncmp(p->s, "null", 4) == 0) { p->s += 4; return jnew_null(); }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char *after;
        double d = strtod(p->s, &after);
        if (after == p->s || !isfinite(d)) return jx_fail(p, "bad number");
        p->s = after;
        return jnew_num(d);
    }
    return jx_fail(p, "unexpected character");
}

/* Parse the NUL-terminated `text`. Returns the tree (free with jfree), or
 * NULL with a message in `err` (`errlen` bytes). */
static inline jval *jparse(const char *text, char *err, size_t errlen) {
    struct jx_parser p = {text, text, text + strlen(text), err, errlen, 0};
    if (err && errlen) err[0] = 0;
    jval *v = jx_value(&p);
    if (!v) return NULL;
    jx_ws(&p);
    if (p.s != p.end) { jfree(v); return jx_fail(&p, "trailing characters"); }
    return v;
}

/* Read and parse a whole file; NULL with a message in `err` on failure. */
static inline jval *jparse_file(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "cannot open %.200s", path); return NULL; }
    size_t cap = 4096, n = 0;
    char *buf = jx_alloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) { cap *= 2; buf = realloc(buf, cap); if (!buf) abort(); }
    }
    fclose(f);
    buf[n] = 0;
    jval *v = jparse(buf, err, errlen);
    free(buf);
    return v;
}

/* ------------------------------------------------------------ printing and comparing */

/* Append the JSON text of `v` to `out` (`cap` bytes, always NUL-terminated; cut when full). */
static inline void jprint(const jval *v, char *out, size_t cap) {
    size_t n = strlen(out);
#define JP(...) do { if (n < cap) { int k = snprintf(out + n, cap - n, __VA_ARGS__); if (k > 0) n += (size_t)k; } } while (0)
    if (!v) { JP("(missing)"); return; }
    switch (v->t) {
    case J_NULL: JP("null"); break;
    case J_BOOL: JP(v->b ? "true" : "false"); break;
    case J_NUM: JP("%.17g", v->num); break;
    case J_STR: JP("\"%.200s\"", v->str); break;
    case J_ARR:
    case J_OBJ:
        JP(v->t == J_ARR ? "[" : "{");
        for (size_t i = 0; i < v->len; i++) {
            if (i) JP(",");
            if (v->t == J_OBJ) JP("\"%s\":", v->keys[i]);
            if (n >= cap) break;
            jprint(v->items[i], out, cap);
            n = strlen(out);
        }
        JP(v->t == J_ARR ? "]" : "}");
        break;
    }
#undef JP
}

static inline bool jequal(const jval *a, const jval *b) {
    if (a->t != b->t) return false;
    switch (a->t) {
    case J_NULL: return true;
    case J_BOOL: return a->b == b->b;
    case J_NUM: return a->num == b->num;
    case J_STR: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case J_ARR:
        if (a->len != b->len) return false;
        for (size_t i = 0; i < a->len; i++)
            if (!jequal(a->items[i], b->items[i])) return false;
        return true;
    case J_OBJ:
        if (a->len != b->len) return false;
        for (size_t i = 0; i < a->len; i++) {
            const jval *o = jget(b, a->keys[i]);
            if (!o || !jequal(a->items[i], o)) return false;
        }
        return true;
    }
    return false;
}

#endif /* TJ_MINI_JSON_H */

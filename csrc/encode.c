/*
** encode.c: Lua values -> JSON text (RFC 8259), deterministic: object
** members in byte order of their names, so equal values give equal text
** (contract schema hashes rely on it). An object whose metatable has an
** '__order' array is written in that order instead (names listed there
** first, the others after in byte order): the author's property order is
** meaning to a model provider (it generates in schema order), and
** 'decode(text, {keep_order = true})' / 'jc.ordered' set it.
**
** The output starts in a C array and grows in a block owned by a userdata
** (the upvalue of encode, see 'jc_encbuf'), so a raise anywhere leaks
** nothing.
*/
#include "jc.h"
#include "opts.h"
#include "utf8.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef JC_ENCODE_MAX_DEPTH
#define JC_ENCODE_MAX_DEPTH 1000        /* default 'max_depth' (levels) */
#endif
#ifndef JC_ENCODE_POINTER_SHOWN
#define JC_ENCODE_POINTER_SHOWN 120     /* bytes of a pointer shown in an error */
#endif
#ifndef JC_ENCODE_DEPTH_LIMIT
#define JC_ENCODE_DEPTH_LIMIT 3000      /* largest 'max_depth' accepted */
#endif
#define JC_ENCODE_MAX_INDENT 16
#define JC_ENCODE_LOCAL 4096    /* output bytes kept on the C stack */
#define JC_ENCBUF_MT "jsoncontract.encode_buffer"
#ifndef JC_ENCODE_KEEP
#define JC_ENCODE_KEEP (8u << 20) /* largest output block kept (bytes) */
#endif

/* Fixed stack slots of an encode call. */
#define JC_E_BUF 3          /* this call's jc_encbuf userdata, or nil */
#define JC_E_ARRMT 4        /* our array metatable */
#define JC_E_CJ_EMPTY 5     /* cjson.empty_array or nil */
#define JC_E_CJ_ARRMT 6     /* cjson.array_mt or nil */
#define JC_E_CJ_EMPTYMT 7   /* cjson.empty_array_mt or nil */

/* Where the value being encoded sits, for messages (a JSON Pointer built
** only when raising). */
typedef struct jc_path {
  const struct jc_path *up;
  const char *key;          /* member name, or NULL for an array element */
  size_t klen;
  size_t index;             /* 0-based element index */
} jc_path;

/* The output block kept between calls (the upvalue of encode), so large
** texts do not allocate and fault in fresh memory each time. Owned by the
** userdata: a raise leaks nothing; freed by __gc, or after a call that
** grew it past JC_ENCODE_KEEP. encode does run Lua code: a __gc at any
** allocation (a member name's string, the result) may call encode again.
** So a call takes the userdata out of the upvalue for its duration
** (anchored at JC_E_BUF) and puts it back at its end: a call made meanwhile
** finds none and uses a block of its own. After a raise the upvalue stays
** empty until a call that returns puts its block there: nothing is left
** marked in use. */
typedef struct jc_encbuf {
  char *b;
  size_t cap;
} jc_encbuf;

typedef struct jc_enc {
  lua_State *L;
  jc_encbuf *keep;
  char *b;
  size_t len;
  size_t cap;
  int indent;               /* spaces per level; 0 = compact */
  size_t max_depth;
  int sorted;               /* 1: ignore '__order' (option keep_order false) */
  char decpoint;
} jc_enc;

typedef struct jc_key {
  const char *s;
  size_t len;
} jc_key;

#define JC_LOCAL_KEYS 16    /* names of an object sorted on the C stack */

/* ===================================================================== */
/* Output buffer and errors                                              */
/* ===================================================================== */

static int jc_encbuf_gc(lua_State *L);

/* A new empty output block userdata, stored at JC_E_BUF (this call's
** block from then on). [-0, +0, m] */
static jc_encbuf *jc_encbuf_new(lua_State *L) {
  jc_encbuf *k = (jc_encbuf *)jc_newuserdata(L, sizeof *k);
  k->b = NULL;
  k->cap = 0;
  if (luaL_newmetatable(L, JC_ENCBUF_MT)) {
    lua_pushcfunction(L, jc_encbuf_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, JC_ENCBUF_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  lua_replace(L, JC_E_BUF);
  return k;
}

/* Make room for 'n' more bytes. [-0, +0, m] */
static void jc_enc_reserve(jc_enc *e, size_t n) {
  size_t cap;
  char *nb;
  void *ud;
  lua_Alloc alloc;
  jc_encbuf *k;
  if (n <= e->cap - e->len) return;
  if (n > ((size_t)-1) / 2 - e->len)
    luaL_error(e->L, "cannot encode: output too large");
  if (e->keep == NULL) e->keep = jc_encbuf_new(e->L);
  k = e->keep;
  cap = e->cap * 2;
  if (cap < e->len + n) cap = e->len + n;
  alloc = lua_getallocf(e->L, &ud);
  if (e->b == k->b) {                   /* grow the kept block in place */
    nb = (char *)alloc(ud, k->b, k->cap, cap);
    if (nb == NULL) luaL_error(e->L, "not enough memory");
  } else {                              /* leave the C-stack array */
    nb = (char *)alloc(ud, k->b, k->cap, cap);
    if (nb == NULL) luaL_error(e->L, "not enough memory");
    memcpy(nb, e->b, e->len);
  }
  k->b = nb;
  k->cap = cap;
  e->b = nb;
  e->cap = cap;
}

static void jc_enc_put(jc_enc *e, const char *s, size_t n) {
  jc_enc_reserve(e, n);
  memcpy(e->b + e->len, s, n);
  e->len += n;
}

#define jc_enc_lit(e, s) jc_enc_put((e), "" s, sizeof(s) - 1)

static void jc_enc_char(jc_enc *e, char c) {
  if (e->len == e->cap) jc_enc_reserve(e, 1);
  e->b[e->len++] = c;
}

/* Append the JSON Pointer of 'p' to 'b', root first. */
static void jc_path_add(luaL_Buffer *b, const jc_path *p) {
  size_t i;
  char num[32];
  if (p == NULL) return;
  jc_path_add(b, p->up);
  luaL_addchar(b, '/');
  if (p->key == NULL) {
    snprintf(num, sizeof num, "%lu", (unsigned long)p->index);
    luaL_addstring(b, num);
    return;
  }
  for (i = 0; i < p->klen; i++) {
    if (p->key[i] == '~') luaL_addstring(b, "~0");
    else if (p->key[i] == '/') luaL_addstring(b, "~1");
    else luaL_addchar(b, p->key[i]);
  }
}

/* Raise "cannot encode <what> at <pointer>". Never returns. */
static int jc_enc_raise(jc_enc *e, const jc_path *p, const char *what) {
  lua_State *L = e->L;
  luaL_Buffer b;
  const char *ptr;
  size_t len;
  luaL_checkstack(L, 4, "jsoncontract.encode");
  luaL_buffinit(L, &b);
  jc_path_add(&b, p);
  luaL_pushresult(&b);
  ptr = lua_tolstring(L, -1, &len);
  if (len == 0)
    return luaL_error(L, "cannot encode %s at the root", what);
  if (len > JC_ENCODE_POINTER_SHOWN) {
    /* A long pointer (a deep value) is elided in the middle with its length,
    ** so the message stays short and still says where it starts and ends. The
    ** cut points step back to a UTF-8 character start (member names are UTF-8
    ** here: invalid ones raise before their path is shown). */
    size_t head = JC_ENCODE_POINTER_SHOWN * 2 / 3, tail;
    char n[32];
    snprintf(n, sizeof n, "%lu", (unsigned long)len);
    while (head > 0 && ((unsigned char)ptr[head] & 0xC0) == 0x80) head--;
    tail = len - (JC_ENCODE_POINTER_SHOWN - JC_ENCODE_POINTER_SHOWN * 2 / 3);
    while (tail < len && ((unsigned char)ptr[tail] & 0xC0) == 0x80) tail++;
    lua_pushlstring(L, ptr, head);
    lua_pushlstring(L, ptr + tail, len - tail);
    return luaL_error(L, "cannot encode %s at %s\xe2\x80\xa6(%s bytes)"
                      "\xe2\x80\xa6%s", what, lua_tostring(L, -2), n,
                      lua_tostring(L, -1));
  }
  return luaL_error(L, "cannot encode %s at %s", what, ptr);
}

/* ===================================================================== */
/* Scalars                                                               */
/* ===================================================================== */

/* Which bytes of a string need an escape: 0 none, 1 short escape, 2 \u00XX. */
static const unsigned char jc_escclass[128] = {
  2,2,2,2,2,2,2,2,1,1,1,2,1,1,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
  0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0
};

/* The first byte at or after 's' (before 'end') that is not plain ASCII
** ('"', '\\', a control character or a byte >= 0x80), or 'end'. */
static const unsigned char *jc_enc_plain(const unsigned char *s,
                                         const unsigned char *end) {
  s = jc_scan_plain8(s, end);
  while (s < end && *s < 0x80 && jc_escclass[*s] == 0) s++;
  return s;
}

/* Append 's' (NUL-terminated after 'len' bytes, as Lua strings are) as a
** JSON string; raise on invalid UTF-8. Room for the rest of the string
** unescaped (plus one escape) is made up front and again at each escape,
** so the loop writes unchecked. */
static void jc_enc_string(jc_enc *e, const char *str, size_t len,
                          const jc_path *p, int is_key) {
  const unsigned char *s = (const unsigned char *)str, *end = s + len, *run;
  static const char hex[] = "0123456789abcdef";
  char *o;
  size_t n;
  jc_enc_reserve(e, len + 8);
  o = e->b + e->len;
  *o++ = '"';
  while (s < end) {
    unsigned char c;
    run = s;
    s = jc_enc_plain(s, end);
    memcpy(o, run, (size_t)(s - run));
    o += s - run;
    if (s >= end) break;
    c = *s;
    if (c >= 0x80) {
      n = jc_utf8_len(s);
      if (n == 0 || s + n > end) {
        e->len = (size_t)(o - e->b);
        jc_enc_raise(e, p, is_key ? "a member name with invalid UTF-8"
                                  : "an invalid UTF-8 string");
      }
      memcpy(o, s, n);
      o += n;
      s += n;
      continue;
    }
    e->len = (size_t)(o - e->b);
    jc_enc_reserve(e, (size_t)(end - s) + 8);   /* the escape, the rest */
    o = e->b + e->len;
    *o++ = '\\';
    switch (c) {
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '\b': *o++ = 'b'; break;
      case '\f': *o++ = 'f'; break;
      case '\n': *o++ = 'n'; break;
      case '\r': *o++ = 'r'; break;
      case '\t': *o++ = 't'; break;
      default:
        *o++ = 'u'; *o++ = '0'; *o++ = '0';
        *o++ = hex[c >> 4]; *o++ = hex[c & 15];
        break;
    }
    s++;
  }
  *o++ = '"';
  e->len = (size_t)(o - e->b);
}

/* Append the number at 'idx'. Integers (5.3+) exactly; floats in the
** shortest of %.15g/%.16g/%.17g that reads back to the same double; on
** 5.3+ an integral float keeps ".0" so it decodes as a float again. */
static void jc_enc_number(jc_enc *e, int idx, const jc_path *p) {
  lua_State *L = e->L;
  char buf[64], *dp, *q;
  double d;
  int prec, n = 0, neg;
  unsigned long long u;
#if JC_HAVE_INTEGER
  if (lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    neg = v < 0;
    u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    goto digits;
  }
#endif
  d = (double)lua_tonumber(L, idx);
  if (isnan(d) || isinf(d))
    jc_enc_raise(e, p, isnan(d) ? "NaN" : "an infinite number");
  /* Integral doubles below 10^15 print as their digits (what %.15g gives),
  ** with ".0" on 5.3+; -0.0 takes the general path. */
  if (d == floor(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
    neg = d < 0;
    u = (unsigned long long)(neg ? -d : d);
#if JC_HAVE_INTEGER
    buf[sizeof buf - 2] = '.';
    buf[sizeof buf - 1] = '0';
    q = buf + sizeof buf - 2;
    goto write;
#else
    goto digits;
#endif
  }
  for (prec = 15; prec <= 17; prec++) {
    n = snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  if (e->decpoint != '.' && (dp = strchr(buf, e->decpoint)) != NULL)
    *dp = '.';
#if JC_HAVE_INTEGER
  if (strspn(buf, "-0123456789") == (size_t)n) {
    buf[n++] = '.';
    buf[n++] = '0';
  }
#endif
  jc_enc_put(e, buf, (size_t)n);
  return;
digits:
  q = buf + sizeof buf;
#if JC_HAVE_INTEGER
write:
#endif
  do { *--q = (char)('0' + u % 10); u /= 10; } while (u);
  if (neg) *--q = '-';
  jc_enc_put(e, q, (size_t)(buf + sizeof buf - q));
}

/* ===================================================================== */
/* Containers                                                            */
/* ===================================================================== */

static void jc_enc_value(jc_enc *e, int idx, size_t depth, const jc_path *p);

static void jc_enc_newline(jc_enc *e, size_t depth) {
  size_t n = depth * (size_t)e->indent;
  jc_enc_reserve(e, n + 1);
  e->b[e->len++] = '\n';
  memset(e->b + e->len, ' ', n);
  e->len += n;
}

static int jc_key_cmp(const void *a, const void *b) {
  const jc_key *x = (const jc_key *)a, *y = (const jc_key *)b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, n);
  if (c != 0) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

/* Is the metatable on top one that marks an array? Pops it. */
static int jc_enc_marked(lua_State *L) {
  int r = lua_rawequal(L, -1, JC_E_ARRMT) || lua_rawequal(L, -1, JC_E_CJ_ARRMT)
          || lua_rawequal(L, -1, JC_E_CJ_EMPTYMT);
  lua_pop(L, 1);
  return r;
}

static void jc_enc_array(jc_enc *e, int idx, size_t n, size_t depth,
                         const jc_path *p) {
  lua_State *L = e->L;
  jc_path here;
  size_t i;
  here.up = p;
  here.key = NULL;
  here.klen = 0;
  jc_enc_char(e, '[');
  for (i = 1; i <= n; i++) {
    if (i > 1) jc_enc_char(e, ',');
    if (e->indent) jc_enc_newline(e, depth + 1);
    here.index = i - 1;
    lua_rawgeti(L, idx, (int)i);
    jc_enc_value(e, lua_gettop(L), depth + 1, &here);
    lua_pop(L, 1);
  }
  if (e->indent && n > 0) jc_enc_newline(e, depth);
  jc_enc_char(e, ']');
}

/* Sort 'keys' by name (byte order): insertion sort for the few names of
** a typical object, qsort beyond. */
static void jc_sort_keys(jc_key *keys, size_t n) {
  size_t i, j;
  jc_key k;
  if (n > 24) { qsort(keys, n, sizeof(jc_key), jc_key_cmp); return; }
  for (i = 1; i < n; i++) {
    k = keys[i];
    for (j = i; j > 0 && jc_key_cmp(&keys[j - 1], &k) > 0; j--)
      keys[j] = keys[j - 1];
    keys[j] = k;
  }
}

/* Find 'name' in the sorted 'keys'; its index or 'n' when absent. */
static size_t jc_key_find(const jc_key *keys, size_t n, const jc_key *name) {
  size_t lo = 0, hi = n, mid;
  int c;
  while (lo < hi) {
    mid = lo + (hi - lo) / 2;
    c = jc_key_cmp(&keys[mid], name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return n;
}

/* Reorder the sorted 'keys' (n names) by the array at 'ord': names listed
** there first, in its order (names not in the object, repeats and values
** that are not strings are skipped), the rest after in byte order. Uses
** a userdata left on the stack as scratch. [-0, +1, m] */
static void jc_order_keys(lua_State *L, jc_key *keys, size_t n, int ord) {
  size_t m, i, at, out = 0;
  jc_key name, *tmp;
  unsigned char *used;
  tmp = (jc_key *)jc_newuserdata(L, n * (sizeof(jc_key) + 1));
  used = (unsigned char *)(tmp + n);
  memset(used, 0, n);
  m = (size_t)jc_rawlen(L, ord);
  for (i = 1; i <= m && out < n; i++) {
    lua_rawgeti(L, ord, (int)i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      name.s = lua_tolstring(L, -1, &name.len);
      at = jc_key_find(keys, n, &name);
      if (at < n && !used[at]) {
        used[at] = 1;
        tmp[out++] = keys[at];
      }
    }
    lua_pop(L, 1);
  }
  for (i = 0; i < n; i++)
    if (!used[i]) tmp[out++] = keys[i];
  memcpy(keys, tmp, n * sizeof(jc_key));
}

/* Write the object at 'idx' with its 'n' string keys. 'keys' holds them
** already when 'n' <= JC_LOCAL_KEYS, else NULL. 'ord' is the stack index
** of its '__order' array, or 0. The name pointers stay valid while the
** names are keys of the table, which encode never modifies (raw access,
** no metamethods run). */
static void jc_enc_object(jc_enc *e, int idx, size_t n, size_t depth,
                          const jc_path *p, jc_key *keys, int ord) {
  lua_State *L = e->L;
  jc_path here;
  size_t j;
  if (keys == NULL) {
    size_t i = 0;
    if (n > ((size_t)-1) / sizeof(jc_key))
      luaL_error(L, "cannot encode: object too large");
    keys = (jc_key *)jc_newuserdata(L, n * sizeof(jc_key));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      keys[i].s = lua_tolstring(L, -1, &keys[i].len);
      i++;
    }
  } else {
    lua_pushnil(L);                     /* same stack shape as above */
  }
  jc_sort_keys(keys, n);
  if (ord != 0 && n > 1) jc_order_keys(L, keys, n, ord);
  else lua_pushnil(L);                  /* same stack shape */
  here.up = p;
  here.index = 0;
  jc_enc_char(e, '{');
  for (j = 0; j < n; j++) {
    if (j > 0) jc_enc_char(e, ',');
    if (e->indent) jc_enc_newline(e, depth + 1);
    here.key = keys[j].s;
    here.klen = keys[j].len;
    jc_enc_string(e, keys[j].s, keys[j].len, &here, 1);
    jc_enc_char(e, ':');
    if (e->indent) jc_enc_char(e, ' ');
    lua_pushlstring(L, keys[j].s, keys[j].len);
    lua_rawget(L, idx);
    jc_enc_value(e, lua_gettop(L), depth + 1, &here);
    lua_pop(L, 1);
  }
  if (e->indent && n > 0) jc_enc_newline(e, depth);
  jc_enc_char(e, '}');
  lua_pop(L, 2);
}

/* A table: an err as the object of its named fields (see jc.h); an array
** when marked (our array_mt, cjson's array_mt or
** empty_array_mt) or when its keys are exactly 1..n (n >= 1); an object
** when all keys are strings (an empty unmarked table is {}), in the order
** of its metatable's '__order' array when it has one (read raw). */
static void jc_enc_table(jc_enc *e, int idx, size_t depth, const jc_path *p) {
  lua_State *L = e->L;
  int marked = 0, allstr = 1, allpos = 1, ord = 0;
  size_t n = 0;
  double maxk = 0, k;
  jc_key keys[JC_LOCAL_KEYS];
  if (jc_error_fields(L, idx)) {        /* an err is its named fields */
    jc_enc_table(e, lua_gettop(L), depth, p);
    lua_pop(L, 1);
    return;
  }
  if (depth >= e->max_depth) {
    char what[96];
    snprintf(what, sizeof what,
             "a table nested deeper than %lu levels (or a cycle)",
             (unsigned long)e->max_depth);
    jc_enc_raise(e, p, what);
  }
  if (!lua_checkstack(L, 10))
    jc_enc_raise(e, p, "a table nested this deep (Lua stack full)");
  if (lua_getmetatable(L, idx)) {
    if (e->sorted) {
      lua_pushnil(L);
    } else {
      lua_pushliteral(L, "__order");
      lua_rawget(L, -2);
    }
    lua_insert(L, -2);                  /* keep __order below the mt */
    marked = jc_enc_marked(L);
    if (!marked && lua_istable(L, -1)) ord = lua_gettop(L);
    else lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      allpos = 0;
      if (n < JC_LOCAL_KEYS) keys[n].s = lua_tolstring(L, -1, &keys[n].len);
      n++;
    } else {
      n++;
      allstr = 0;
      if (lua_type(L, -1) == LUA_TNUMBER) {
        k = (double)lua_tonumber(L, -1);
        if (k >= 1 && k == floor(k)) { if (k > maxk) maxk = k; }
        else allpos = 0;
      } else {
        allpos = 0;
      }
    }
  }
  if (allpos && maxk == (double)n && (n > 0 || marked)) {
    if (n > 0x7fffffff) luaL_error(L, "cannot encode: array too large");
    jc_enc_array(e, idx, n, depth, p);
  } else if (marked) {
    jc_enc_raise(e, p, "an array whose keys are not exactly 1..n");
  } else if (allstr) {
    jc_enc_object(e, idx, n, depth, p, n <= JC_LOCAL_KEYS ? keys : NULL,
                  ord);
  } else {
    jc_enc_raise(e, p, "a table whose keys are neither all strings (object) "
                       "nor exactly 1..n (array)");
  }
  if (ord != 0) lua_remove(L, ord);
}

/* Append the value at absolute index 'idx'. */
static void jc_enc_value(jc_enc *e, int idx, size_t depth, const jc_path *p) {
  lua_State *L = e->L;
  const char *s;
  size_t len;
  char what[64];
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
      s = lua_tolstring(L, idx, &len);
      jc_enc_string(e, s, len, p, 0);
      return;
    case LUA_TNUMBER:
      jc_enc_number(e, idx, p);
      return;
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, idx)) jc_enc_lit(e, "true");
      else jc_enc_lit(e, "false");
      return;
    case LUA_TTABLE:
      jc_enc_table(e, idx, depth, p);
      return;
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) { jc_enc_lit(e, "null"); return; }
      if (lua_rawequal(L, idx, JC_E_CJ_EMPTY)) { jc_enc_lit(e, "[]"); return; }
      break;
    default:
      break;
  }
  snprintf(what, sizeof what, "a %s value", luaL_typename(L, idx));
  jc_enc_raise(e, p, what);
}

/* ===================================================================== */
/* encode()                                                              */
/* ===================================================================== */

static const jc_opt jc_encode_optspec[] = {
  { "indent", JC_OPT_INT, 0, JC_ENCODE_MAX_INDENT,
    "an integer from 0 to 16", NULL },
  { "max_depth", JC_OPT_INT, 1, JC_ENCODE_DEPTH_LIMIT,
    "an integer from 1 to 3000", NULL },
  { "keep_order", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

static void jc_encode_opts(lua_State *L, jc_enc *e) {
  jc_optval v[3];
  jc_opts_read(L, 2, jc_encode_optspec, v);
  if (v[0].set) e->indent = (int)v[0].n;
  if (v[1].set) e->max_depth = (size_t)v[1].n;
  if (v[2].set) e->sorted = !v[2].b;
}

/* Free the kept output block 'k' (idempotent). [-0, +0, -] */
static void jc_encbuf_free(lua_State *L, jc_encbuf *k) {
  void *ud;
  lua_Alloc alloc = lua_getallocf(L, &ud);
  if (k->b != NULL) alloc(ud, k->b, k->cap, 0);
  k->b = NULL;
  k->cap = 0;
}

/* __gc of the kept block's userdata. [-0, +0, -] */
static int jc_encbuf_gc(lua_State *L) {
  jc_encbuf_free(L, (jc_encbuf *)luaL_checkudata(L, 1, JC_ENCBUF_MT));
  return 0;
}

/* Push cjson.<name> from the module table on top, or nil. [-0, +1, -] */
static void jc_rawfield(lua_State *L, const char *name) {
  if (lua_istable(L, -1)) {
    lua_pushstring(L, name);
    lua_rawget(L, -2);
  } else {
    lua_pushnil(L);
  }
}

/*
** core.encode(value [, opts]) -> string
**
** Compact JSON text (RFC 8259) for 'value'. Tables: an array when they
** carry core.array_mt (or lua-cjson's array_mt / empty_array_mt) or their
** keys are exactly 1..n (n >= 1); otherwise an object, whose keys must all
** be strings, written in byte order of the names, or, when its metatable
** has an '__order' array (read raw), the names listed there first in that
** order (names absent from the object, repeats and non-strings skipped)
** and the others after in byte order; an empty unmarked table is {}. core.null (= cjson.null) is null; cjson.empty_array is [].
** Numbers: Lua integers exactly; floats in the shortest form that reads
** back to the same double, integral floats with ".0" on Lua 5.3+ (so
** decode gives a float back), without on LuaJIT. An err (core.error) is
** written as the object of its named fields, not as the text ngx.say
** prints. Strings are written as
** UTF-8, escaping '"', '\\' and control characters. Tables are read with
** raw access: __index, __pairs and other metamethods are not called.
** opts (table, optional):
**   indent     integer 0..16 (spaces per level), default 0 = compact;
**              when > 0: one member or element per line, ": " after names
**   keep_order boolean, default true; false: every object in byte order
**              of its names, '__order' ignored (canonical text, e.g. for
**              a hash)
**   max_depth  integer 1..3000, default 1000 (levels; catches cycles)
** Returns the text (a new Lua string).
** Raises (with the JSON Pointer of the value): a function, thread,
** userdata or light userdata other than null/empty_array; NaN or
** infinity; a string or member name with invalid UTF-8; a table with
** mixed or non-string keys; an array-marked table whose keys are not
** 1..n; nesting deeper than max_depth (or a cycle); unknown option;
** memory errors.
** Stack: [-0, +1, m]
*/
static int jc_encode(lua_State *L) {
  jc_enc e;
  char local[JC_ENCODE_LOCAL];
  luaL_checkany(L, 1);
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  memset(&e, 0, sizeof e);
  e.L = L;
  e.max_depth = JC_ENCODE_MAX_DEPTH;
  jc_encode_opts(L, &e);
  lua_settop(L, 2);
  luaL_checkstack(L, 20, "jsoncontract.encode");
  /* take the kept block (see jc_encbuf): no allocation from here to the
  ** upvalue's clearing, so no other call can take it too */
  lua_pushvalue(L, lua_upvalueindex(1));        /* JC_E_BUF */
  e.keep = (jc_encbuf *)lua_touserdata(L, JC_E_BUF);
  lua_pushnil(L);
  lua_replace(L, lua_upvalueindex(1));
  if (e.keep != NULL && e.keep->cap > sizeof local) {
    e.b = e.keep->b;
    e.cap = e.keep->cap;
  } else {
    e.b = local;
    e.cap = sizeof local;
  }
  luaL_getmetatable(L, JC_ARRAY_MT);            /* JC_E_ARRMT */
  /* lua-cjson's markers, when it is loaded */
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  jc_rawfield(L, "cjson");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    jc_rawfield(L, "cjson.safe");
  }
  lua_replace(L, -2);
  jc_rawfield(L, "empty_array");
  jc_rawfield(L, "array_mt");
  jc_rawfield(L, "empty_array_mt");
  lua_remove(L, -4);                             /* slots 5, 6, 7 */
  e.decpoint = localeconv()->decimal_point[0];
  jc_enc_value(&e, 1, 0, NULL);
  lua_pushlstring(L, e.b, e.len);
  if (e.keep != NULL) {
    if (e.keep->cap > JC_ENCODE_KEEP) jc_encbuf_free(L, e.keep);
    /* put it back (a nested call's block there is dropped: the last
    ** one to return is kept) */
    lua_pushvalue(L, JC_E_BUF);
    lua_replace(L, lua_upvalueindex(1));
  }
  return 1;
}

static const luaL_Reg jc_encode_funcs[] = {
  {"encode", jc_encode},
  {NULL, NULL}
};

void jc_encode_open(lua_State *L) {
  /* the upvalue: nil until a call grows past its C-stack array */
  lua_pushnil(L);
  luaL_setfuncs(L, jc_encode_funcs, 1);
}

/*
** schema.c: the schema gate. A JSON Schema (draft 2020-12 keywords, as Lua
** values) is compiled into a tree of C nodes owned by a userdata
** "jsoncontract.Validator"; 'validate' walks one instance (Lua values as
** 'core.decode' makes them) in one C call and returns every error as a list.
**
** Ownership: every compiled piece (nodes, arrays of nodes, kept strings,
** PCRE2 patterns, the matcher, the path scratch) is a Lua value stored in
** one "keep" table; the validator holds a registry reference to it, dropped
** by its __gc. A compile that raises halfway leaves only garbage for the
** collector. No C pointer outlives the keep table.
**
** Layout for the rest of draft 2020-12: one 'jc_node' per subschema, the
** keyword readers in 'jc_compile_node', the evaluators in 'jc_eval'
** (fixed order); if/then/else, unevaluated*, $dynamicRef and a remote-ref
** loader slot in as further fields and readers.
*/
#include "jc.h"
#include "pattern.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JC_VALIDATOR_MT "jsoncontract.Validator"

#if defined(__GNUC__)
#define JC_NOINLINE __attribute__((noinline))
#else
#define JC_NOINLINE
#endif

#ifndef JC_SCHEMA_MAX_DEPTH
#define JC_SCHEMA_MAX_DEPTH 1000      /* default instance depth bound */
#endif
#ifndef JC_SCHEMA_MAX_DEPTH_LIMIT
#define JC_SCHEMA_MAX_DEPTH_LIMIT 10000   /* largest max_depth accepted */
#endif
#ifndef JC_SCHEMA_MAX_EVAL
#define JC_SCHEMA_MAX_EVAL 8000       /* nested subschema evaluations (C stack) */
#endif
#ifndef JC_SCHEMA_MAX_NEST
#define JC_SCHEMA_MAX_NEST 1000       /* nesting of the schema itself at compile */
#endif
#define JC_RENDER_MAX 120             /* bytes of a value shown in a message */
#define JC_COUNT_MAX (((size_t)-1) - 1)

/* JSON types of instance values. */
enum { JT_NULL, JT_BOOLEAN, JT_OBJECT, JT_ARRAY, JT_NUMBER, JT_STRING,
       JT_OTHER };

/* Bits of the 'type' keyword. */
#define TB_NULL 0x01u
#define TB_BOOLEAN 0x02u
#define TB_OBJECT 0x04u
#define TB_ARRAY 0x08u
#define TB_NUMBER 0x10u
#define TB_INTEGER 0x20u
#define TB_STRING 0x40u

enum { FMT_NONE, FMT_DATE, FMT_DATETIME, FMT_TIME };
enum { LIM_MIN, LIM_MAX, LIM_XMIN, LIM_XMAX, LIM_MULT, LIM_N };

typedef struct jc_node jc_node;

typedef struct jc_prop {       /* one member of 'properties' */
  const char *name;
  size_t len;
  jc_node *node;
} jc_prop;

typedef struct jc_patprop {    /* one member of 'patternProperties' */
  const char *src;
  size_t len;
  jc_pattern *re;
  jc_node *node;
} jc_patprop;

typedef struct jc_limit {      /* a numeric bound, exact for integers */
  int set;
  int isint;
  lua_Integer i;
  lua_Number d;
} jc_limit;

struct jc_node {
  const char *path;            /* schema pointer of this subschema ("" root) */
  int boolean;                 /* -1 object schema, 0 false, 1 true */
  unsigned types;              /* TB_* bits, 0 = no 'type' */
  const char *types_text;      /* "string or null" */
  int enum_ref, const_ref;     /* index in the keep table, 0 = absent */
  jc_node *ref;                /* '$ref' target */
  /* objects */
  jc_prop *required;           /* names only */
  size_t nrequired;
  jc_prop *props;              /* evaluation order: required order, then bytes */
  jc_prop *props_sorted;       /* byte order, for lookup */
  size_t nprops;
  jc_patprop *pprops;          /* byte order of the source */
  size_t npprops;
  jc_node *addl;               /* 'additionalProperties' */
  size_t min_props, max_props; /* (size_t)-1 = absent */
  /* arrays */
  jc_node **prefix;
  size_t nprefix;
  jc_node *items;
  size_t min_items, max_items;
  int unique;
  /* strings */
  size_t min_len, max_len;
  jc_pattern *pattern;
  const char *pattern_src;
  int format;
  const char *format_name;
  /* numbers */
  jc_limit lim[LIM_N];
  /* applicators */
  jc_node **allof, **anyof, **oneof;
  size_t nallof, nanyof, noneof;
  jc_node *not_;
};

typedef struct jc_seg {        /* one step of the instance location */
  const char *key;             /* NULL for an array index */
  size_t len;
  size_t index;
} jc_seg;

typedef struct jc_validator {
  int keep_ref;                /* registry ref of the keep table */
  jc_node *root;
  jc_matcher *matcher;
  jc_seg *segs;                /* max_depth + 1 entries */
  int max_depth;
  int format_assertion;
} jc_validator;

#define ABSENT ((size_t)-1)

/* ===================================================================== */
/* JSON values in Lua                                                      */
/* ===================================================================== */

/* Is the table at 'idx' a JSON array? Marked by JC_ARRAY_MT, or keys are
** exactly 1..n with n >= 1. [-0, +0, -] */
static int jc_is_array(lua_State *L, int idx) {
  size_t n, count = 0;
  int res = 1;
  if (lua_getmetatable(L, idx)) {
    int marked;
    luaL_getmetatable(L, JC_ARRAY_MT);
    marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (marked) return 1;
  }
  n = (size_t)jc_rawlen(L, idx);
  if (n == 0) return 0;
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    lua_Number d;
    if (lua_type(L, -2) != LUA_TNUMBER) { res = 0; lua_pop(L, 2); break; }
    d = lua_tonumber(L, -2);
    if (d < 1 || d > (lua_Number)n || d != floor(d)) {
      res = 0; lua_pop(L, 2); break;
    }
    count++;
    lua_pop(L, 1);
  }
  return res && count == n;
}

/* JSON type of the value at 'idx' (JT_OTHER for nil, functions...).
** [-0, +0, -] */
static int jc_json_type(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN: return JT_BOOLEAN;
    case LUA_TNUMBER: return JT_NUMBER;
    case LUA_TSTRING: return JT_STRING;
    case LUA_TLIGHTUSERDATA:
      return lua_touserdata(L, idx) == NULL ? JT_NULL : JT_OTHER;
    case LUA_TTABLE: return jc_is_array(L, idx) ? JT_ARRAY : JT_OBJECT;
    default: return JT_OTHER;
  }
}

static const char *const jc_jt_names[] = {
  "null", "boolean", "object", "array", "number", "string", "non-JSON value"
};

/* Is the number at 'idx' integer-valued (1, 1.0; not 1.5, inf)? */
static int jc_is_integral(lua_State *L, int idx) {
  lua_Number d;
#if JC_HAVE_INTEGER
  if (lua_isinteger(L, idx)) return 1;
#endif
  d = lua_tonumber(L, idx);
  return d == floor(d) && d - d == 0;
}

/* a < b for the numbers at 'a' and 'b', exact across integer and float.
** [-0, +0, -] */
static int jc_num_lt(lua_State *L, int a, int b) {
#if LUA_VERSION_NUM >= 502
  return lua_compare(L, a, b, LUA_OPLT);
#else
  return lua_lessthan(L, a, b);
#endif
}

/* JSON equality of the values at 'a' and 'b' (1 == 1.0; arrays and objects
** compared structurally). 'depth' bounds recursion on cyclic tables: past
** it the values count as different. [-0, +0, -] */
static int jc_json_equal(lua_State *L, int a, int b, int depth) {
  int ta, tb;
  a = jc_absindex(L, a);
  b = jc_absindex(L, b);
  if (lua_type(L, a) != lua_type(L, b)) return 0;
  if (lua_type(L, a) != LUA_TTABLE) return lua_rawequal(L, a, b);
  if (lua_rawequal(L, a, b)) return 1;
  if (depth <= 0 || !lua_checkstack(L, 4)) return 0;
  ta = jc_json_type(L, a);
  tb = jc_json_type(L, b);
  if (ta != tb) return 0;
  if (ta == JT_ARRAY) {
    size_t n = (size_t)jc_rawlen(L, a), i;
    if (n != (size_t)jc_rawlen(L, b)) return 0;
    for (i = 1; i <= n; i++) {
      int eq;
      lua_rawgeti(L, a, (lua_Integer)i);
      lua_rawgeti(L, b, (lua_Integer)i);
      eq = jc_json_equal(L, -2, -1, depth - 1);
      lua_pop(L, 2);
      if (!eq) return 0;
    }
    return 1;
  } else {
    size_t na = 0, nb = 0;
    lua_pushnil(L);
    while (lua_next(L, a) != 0) {
      int eq;
      na++;
      lua_pushvalue(L, -2);
      lua_rawget(L, b);
      eq = !lua_isnil(L, -1) && jc_json_equal(L, -2, -1, depth - 1);
      lua_pop(L, 2);
      if (!eq) { lua_pop(L, 1); return 0; }
    }
    lua_pushnil(L);
    while (lua_next(L, b) != 0) { nb++; lua_pop(L, 1); }
    return na == nb;
  }
}

/* --------------------------------------------------------------------- */
/* Compact JSON rendering for messages, bounded to JC_RENDER_MAX bytes.    */
/* --------------------------------------------------------------------- */

typedef struct jc_rbuf {
  char b[JC_RENDER_MAX + 8];
  size_t n;
  int full;
} jc_rbuf;

static void jc_rb_add(jc_rbuf *r, const char *s, size_t len) {
  if (r->full) return;
  if (r->n + len > JC_RENDER_MAX) {
    size_t fit = JC_RENDER_MAX - r->n;
    while (fit > 0 && ((unsigned char)s[fit] & 0xC0) == 0x80) fit--;
    memcpy(r->b + r->n, s, fit);
    r->n += fit;
    memcpy(r->b + r->n, "...", 3);
    r->n += 3;
    r->full = 1;
    return;
  }
  memcpy(r->b + r->n, s, len);
  r->n += len;
}

static void jc_rb_str(jc_rbuf *r, const char *s) { jc_rb_add(r, s, strlen(s)); }

/* Render a number as JSON: integers exactly, floats in the shortest
** round-tripping form. */
static void jc_fmt_number(lua_State *L, int idx, char *out, size_t outsz) {
  lua_Number d;
  int prec;
#if JC_HAVE_INTEGER
  if (lua_isinteger(L, idx)) {
    snprintf(out, outsz, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, idx));
    return;
  }
#endif
  d = lua_tonumber(L, idx);
  if (d != d || d - d != 0) { snprintf(out, outsz, "null"); return; }
  for (prec = 15; prec <= 17; prec++) {
    snprintf(out, outsz, "%.*g", prec, (double)d);
    if (strtod(out, NULL) == (double)d) break;
  }
}

static void jc_render_string(jc_rbuf *r, const char *s, size_t len) {
  size_t i;
  jc_rb_add(r, "\"", 1);
  for (i = 0; i < len && !r->full; i++) {
    unsigned char ch = (unsigned char)s[i];
    char esc[8];
    if (ch == '"') jc_rb_add(r, "\\\"", 2);
    else if (ch == '\\') jc_rb_add(r, "\\\\", 2);
    else if (ch == '\n') jc_rb_add(r, "\\n", 2);
    else if (ch == '\r') jc_rb_add(r, "\\r", 2);
    else if (ch == '\t') jc_rb_add(r, "\\t", 2);
    else if (ch < 0x20 || ch == 0x7F) {
      snprintf(esc, sizeof esc, "\\u%04x", ch);
      jc_rb_add(r, esc, 6);
    } else {
      /* copy a whole run of plain bytes so truncation sees UTF-8 */
      size_t j = i;
      while (j < len && (unsigned char)s[j] >= 0x20 && s[j] != '"' &&
             s[j] != '\\' && s[j] != 0x7F)
        j++;
      jc_rb_add(r, s + i, j - i);
      i = j - 1;
    }
  }
  jc_rb_add(r, "\"", 1);
}

/* Render the value at 'idx'. Object members in byte order of their keys.
** [-0, +0, -] */
static void jc_render(lua_State *L, int idx, jc_rbuf *r, int depth) {
  char num[64];
  idx = jc_absindex(L, idx);
  if (r->full) return;
  switch (jc_json_type(L, idx)) {
    case JT_NULL: jc_rb_str(r, "null"); break;
    case JT_BOOLEAN: jc_rb_str(r, lua_toboolean(L, idx) ? "true" : "false"); break;
    case JT_NUMBER:
      jc_fmt_number(L, idx, num, sizeof num);
      jc_rb_str(r, num);
      break;
    case JT_STRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      jc_render_string(r, s, len);
      break;
    }
    case JT_ARRAY: {
      size_t n = (size_t)jc_rawlen(L, idx), i;
      if (depth <= 0 || !lua_checkstack(L, 4)) { jc_rb_str(r, "[...]"); break; }
      jc_rb_add(r, "[", 1);
      for (i = 1; i <= n && !r->full; i++) {
        if (i > 1) jc_rb_add(r, ",", 1);
        lua_rawgeti(L, idx, (lua_Integer)i);
        jc_render(L, -1, r, depth - 1);
        lua_pop(L, 1);
      }
      jc_rb_add(r, "]", 1);
      break;
    }
    case JT_OBJECT: {
      /* selection of the next key in byte order: O(k^2) but bounded by
      ** the render size */
      const char *last = NULL;
      size_t lastlen = 0;
      int firstm = 1;
      if (depth <= 0 || !lua_checkstack(L, 6)) { jc_rb_str(r, "{...}"); break; }
      jc_rb_add(r, "{", 1);
      while (!r->full) {
        const char *best = NULL;
        size_t bestlen = 0;
        lua_pushnil(L);
        while (lua_next(L, idx) != 0) {
          if (lua_type(L, -2) == LUA_TSTRING) {
            size_t kl;
            const char *k = lua_tolstring(L, -2, &kl);
            size_t m;
            int cl = 1, cb = -1;
            if (last != NULL) {
              m = kl < lastlen ? kl : lastlen;
              cl = memcmp(k, last, m);
              if (cl == 0) cl = (kl > lastlen) - (kl < lastlen);
            }
            if (best != NULL) {
              m = kl < bestlen ? kl : bestlen;
              cb = memcmp(k, best, m);
              if (cb == 0) cb = (kl > bestlen) - (kl < bestlen);
            }
            if (cl > 0 && cb < 0) { best = k; bestlen = kl; }
          }
          lua_pop(L, 1);
        }
        if (best == NULL) break;
        if (!firstm) jc_rb_add(r, ",", 1);
        firstm = 0;
        jc_render_string(r, best, bestlen);
        jc_rb_add(r, ":", 1);
        lua_pushlstring(L, best, bestlen);
        lua_rawget(L, idx);
        jc_render(L, -1, r, depth - 1);
        lua_pop(L, 1);
        last = best;
        lastlen = bestlen;
      }
      jc_rb_add(r, "}", 1);
      break;
    }
    default: jc_rb_str(r, "?"); break;
  }
}

/* Push the compact JSON text of the value at 'idx'. [-0, +1, m] */
static void jc_push_render(lua_State *L, int idx) {
  jc_rbuf r;
  r.n = 0;
  r.full = 0;
  jc_render(L, idx, &r, 16);
  lua_pushlstring(L, r.b, r.n);
}

/* ===================================================================== */
/* RFC 3339 dates and times ('format')                                     */
/* ===================================================================== */

static int jc_digits(const char *s, size_t n, int *out) {
  size_t i;
  int v = 0;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

/* full-date = YYYY-MM-DD, a real calendar day (RFC 3339 §5.6, §5.7). */
static int jc_check_date(const char *s, size_t len) {
  static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
  int y, m, d, max;
  if (len != 10 || s[4] != '-' || s[7] != '-') return 0;
  if (!jc_digits(s, 4, &y) || !jc_digits(s + 5, 2, &m) ||
      !jc_digits(s + 8, 2, &d))
    return 0;
  if (m < 1 || m > 12 || d < 1) return 0;
  max = mdays[m - 1];
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) max = 29;
  return d <= max;
}

/* full-time = HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); a leap second only at
** 23:59:60 UTC (RFC 3339 §5.6, §5.7). */
static int jc_check_time(const char *s, size_t len) {
  int h, mi, sec, oh = 0, om = 0, sign = 0, utc;
  size_t i = 8;
  if (len < 9 || s[2] != ':' || s[5] != ':') return 0;
  if (!jc_digits(s, 2, &h) || !jc_digits(s + 3, 2, &mi) ||
      !jc_digits(s + 6, 2, &sec))
    return 0;
  if (h > 23 || mi > 59 || sec > 60) return 0;
  if (s[i] == '.') {
    size_t start = ++i;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    if (i == start) return 0;
  }
  if (i >= len) return 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != len) return 0;
  } else if (s[i] == '+' || s[i] == '-') {
    sign = s[i] == '+' ? 1 : -1;
    if (len - i != 6 || s[i + 3] != ':') return 0;
    if (!jc_digits(s + i + 1, 2, &oh) || !jc_digits(s + i + 4, 2, &om))
      return 0;
    if (oh > 23 || om > 59) return 0;
  } else {
    return 0;
  }
  if (sec == 60) {
    utc = ((h * 60 + mi - sign * (oh * 60 + om)) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return 0;
  }
  return 1;
}

static int jc_check_datetime(const char *s, size_t len) {
  if (len < 20 || (s[10] != 'T' && s[10] != 't')) return 0;
  return jc_check_date(s, 10) && jc_check_time(s + 11, len - 11);
}

/* ===================================================================== */
/* Compiler                                                                */
/* ===================================================================== */

typedef struct jc_cctx {
  lua_State *L;
  int keep;            /* abs index: keep table (array of owned values) */
  int nkeep;
  int cache;           /* abs index: schema table -> node userdata */
  int root;            /* abs index: the root schema value */
  int nest;
  jc_validator *v;
} jc_cctx;

/* Raise "invalid schema at <path>[/<kw>]: <message>". Never returns. */
static int jc_schema_error(lua_State *L, const char *path, const char *kw,
                           const char *fmt, ...) {
  va_list ap;
  if (kw != NULL)
    lua_pushfstring(L, "invalid schema at %s/%s: ", path, kw);
  else
    lua_pushfstring(L, "invalid schema at %s: ", *path ? path : "(root)");
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

/* Move the value at the top into the keep table; returns its index there.
** [-1, +0, m] */
static int jc_keep(jc_cctx *c) {
  lua_rawseti(c->L, c->keep, ++c->nkeep);
  return c->nkeep;
}

/* Keep the string at the top and return its stable pointer. [-1, +0, m] */
static const char *jc_keep_string(jc_cctx *c, size_t *len) {
  const char *s = lua_tolstring(c->L, -1, len);
  jc_keep(c);
  return s;
}

/* A zeroed block of 'size' bytes owned by the keep table. [-0, +0, m] */
static void *jc_keep_block(jc_cctx *c, size_t n, size_t elem) {
  void *p;
  if (n == 0) return NULL;
  if (n > ((size_t)-1) / elem) luaL_error(c->L, "schema too large");
  p = jc_newuserdata(c->L, n * elem);
  memset(p, 0, n * elem);
  jc_keep(c);
  return p;
}

/* Add 'name' to a luaL_Buffer as a JSON Pointer token (~0, ~1). */
static void jc_add_token(luaL_Buffer *b, const char *s, size_t len) {
  size_t i;
  for (i = 0; i < len; i++) {
    if (s[i] == '~') luaL_addstring(b, "~0");
    else if (s[i] == '/') luaL_addstring(b, "~1");
    else luaL_addchar(b, s[i]);
  }
}

/* Keep and return "<base>/<kw>[/<token>]"; 'token' NULL with 'index' >= 0
** adds the index, both absent adds nothing. [-0, +0, m] */
static const char *jc_child_path(jc_cctx *c, const char *base, const char *kw,
                                 const char *token, size_t toklen,
                                 long index) {
  luaL_Buffer b;
  size_t len;
  luaL_buffinit(c->L, &b);
  luaL_addstring(&b, base);
  luaL_addchar(&b, '/');
  luaL_addstring(&b, kw);
  if (token != NULL) {
    luaL_addchar(&b, '/');
    jc_add_token(&b, token, toklen);
  } else if (index >= 0) {
    char num[32];
    snprintf(num, sizeof num, "/%ld", index);
    luaL_addstring(&b, num);
  }
  luaL_pushresult(&b);
  return jc_keep_string(c, &len);
}

static jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path);

/* Push schema[kw] (raw). Returns its Lua type. [-0, +1, -] */
static int jc_getkw(lua_State *L, int sidx, const char *kw) {
  lua_pushstring(L, kw);
  lua_rawget(L, sidx);
  return lua_type(L, -1);
}

/* Is the value at 'idx' usable as a JSON array of a keyword (an array, or
** an empty plain table)? */
static int jc_arraylike(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  if (jc_is_array(L, idx)) return 1;
  if (lua_getmetatable(L, idx)) { lua_pop(L, 1); return 0; }
  lua_pushnil(L);
  if (lua_next(L, idx) != 0) { lua_pop(L, 2); return 0; }
  return 1;
}

/* Read a non-negative integer keyword into '*out'; returns 0 when absent. */
static int jc_get_count(jc_cctx *c, int sidx, const char *path,
                        const char *kw, size_t *out) {
  lua_State *L = c->L;
  lua_Number d;
  if (jc_getkw(L, sidx, kw) == LUA_TNIL) { lua_pop(L, 1); return 0; }
  d = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || !jc_is_integral(L, -1) || d < 0)
    jc_schema_error(L, path, kw, "must be a non-negative integer");
#if JC_HAVE_INTEGER
  if (lua_isinteger(L, -1)) {
    lua_Integer i = lua_tointeger(L, -1);
    *out = (unsigned long long)i > (unsigned long long)JC_COUNT_MAX
               ? JC_COUNT_MAX : (size_t)i;
    lua_pop(L, 1);
    return 1;
  }
#endif
  *out = d >= (lua_Number)JC_COUNT_MAX ? JC_COUNT_MAX : (size_t)d;
  lua_pop(L, 1);
  return 1;
}

/* Read a numeric bound. */
static void jc_get_limit(jc_cctx *c, int sidx, const char *path,
                         const char *kw, jc_limit *lim) {
  lua_State *L = c->L;
  if (jc_getkw(L, sidx, kw) == LUA_TNIL) { lua_pop(L, 1); return; }
  if (lua_type(L, -1) != LUA_TNUMBER)
    jc_schema_error(L, path, kw, "must be a number");
  lim->set = 1;
  lim->d = lua_tonumber(L, -1);
#if JC_HAVE_INTEGER
  lim->isint = lua_isinteger(L, -1);
  if (lim->isint) lim->i = lua_tointeger(L, -1);
#endif
  lua_pop(L, 1);
}

static void jc_push_limit(lua_State *L, const jc_limit *lim) {
#if JC_HAVE_INTEGER
  if (lim->isint) { lua_pushinteger(L, lim->i); return; }
#endif
  lua_pushnumber(L, lim->d);
}

/* Compile the array of subschemas at the top (keyword 'kw'); pops it. */
static jc_node **jc_compile_list(jc_cctx *c, const char *path, const char *kw,
                                 size_t *count, int nonempty) {
  lua_State *L = c->L;
  int t = lua_gettop(L);
  size_t n, i;
  jc_node **list;
  if (!jc_arraylike(L, t))
    jc_schema_error(L, path, kw, "must be an array of schemas");
  n = (size_t)jc_rawlen(L, t);
  if (nonempty && n == 0)
    jc_schema_error(L, path, kw, "must be a non-empty array of schemas");
  list = (jc_node **)jc_keep_block(c, n, sizeof(jc_node *));
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, t, (lua_Integer)(i + 1));
    list[i] = jc_compile_node(c, lua_gettop(L),
                              jc_child_path(c, path, kw, NULL, 0, (long)i));
    lua_pop(L, 1);
  }
  *count = n;
  lua_pop(L, 1);
  return list;
}

static int jc_cmp_bytes(const char *a, size_t al, const char *b, size_t bl) {
  int r = memcmp(a, b, al < bl ? al : bl);
  if (r != 0) return r;
  return (al > bl) - (al < bl);
}

static int jc_prop_cmp(const void *x, const void *y) {
  const jc_prop *a = (const jc_prop *)x, *b = (const jc_prop *)y;
  return jc_cmp_bytes(a->name, a->len, b->name, b->len);
}

static int jc_patprop_cmp(const void *x, const void *y) {
  const jc_patprop *a = (const jc_patprop *)x, *b = (const jc_patprop *)y;
  return jc_cmp_bytes(a->src, a->len, b->src, b->len);
}

static const jc_prop *jc_find_prop(const jc_node *n, const char *s,
                                   size_t len) {
  jc_prop key;
  if (n->nprops == 0) return NULL;
  key.name = s;
  key.len = len;
  return (const jc_prop *)bsearch(&key, n->props_sorted, n->nprops,
                                  sizeof(jc_prop), jc_prop_cmp);
}

/* Compile a regex at the top-of-stack string for 'kw'; keeps it. */
static jc_pattern *jc_compile_regex(jc_cctx *c, const char *path,
                                    const char *kw, const char *src,
                                    size_t len) {
  char msg[256];
  size_t off = 0;
  jc_pattern *p = jc_pattern_compile(c->L, src, len, msg, sizeof msg, &off);
  if (p == NULL)
    jc_schema_error(c->L, path, kw,
                    "invalid regular expression at offset %d: %s",
                    (int)off, msg);
  jc_keep(c);
  return p;
}

static const struct { const char *name; unsigned bit; } jc_type_names[] = {
  { "null", TB_NULL }, { "boolean", TB_BOOLEAN }, { "object", TB_OBJECT },
  { "array", TB_ARRAY }, { "number", TB_NUMBER }, { "integer", TB_INTEGER },
  { "string", TB_STRING }, { NULL, 0 }
};

static unsigned jc_type_bit(lua_State *L, int idx) {
  int i;
  const char *s;
  if (lua_type(L, idx) != LUA_TSTRING) return 0;
  s = lua_tostring(L, idx);
  for (i = 0; jc_type_names[i].name != NULL; i++)
    if (strcmp(s, jc_type_names[i].name) == 0) return jc_type_names[i].bit;
  return 0;
}

/* 'type': a name or an array of names. */
static void jc_compile_type(jc_cctx *c, int sidx, jc_node *n) {
  lua_State *L = c->L;
  const char *path = n->path;
  size_t len;
  int t;
  if (jc_getkw(L, sidx, "type") == LUA_TNIL) { lua_pop(L, 1); return; }
  t = lua_gettop(L);
  if (lua_type(L, t) == LUA_TSTRING) {
    n->types = jc_type_bit(L, t);
    if (n->types == 0)
      jc_schema_error(L, path, "type", "unknown type \"%s\"",
                      lua_tostring(L, t));
    lua_pushvalue(L, t);
    n->types_text = jc_keep_string(c, &len);
  } else if (jc_arraylike(L, t) && jc_rawlen(L, t) > 0) {
    size_t k, cnt = (size_t)jc_rawlen(L, t);
    luaL_Buffer b;
    for (k = 1; k <= cnt; k++) {
      unsigned bit;
      lua_rawgeti(L, t, (lua_Integer)k);
      if (lua_type(L, -1) != LUA_TSTRING)
        jc_schema_error(L, path, "type",
                        "must be a type name or an array of type names");
      bit = jc_type_bit(L, -1);
      if (bit == 0)
        jc_schema_error(L, path, "type", "unknown type \"%s\"",
                        lua_tostring(L, -1));
      if (n->types & bit)
        jc_schema_error(L, path, "type", "duplicate type \"%s\"",
                        lua_tostring(L, -1));
      n->types |= bit;
      lua_pop(L, 1);
    }
    luaL_buffinit(L, &b);
    for (k = 1; k <= cnt; k++) {
      const char *name;
      lua_rawgeti(L, t, (lua_Integer)k);
      name = lua_tostring(L, -1);
      lua_pop(L, 1);  /* the string stays in the schema table */
      if (k > 1) luaL_addstring(&b, k == cnt ? " or " : ", ");
      luaL_addstring(&b, name);
    }
    luaL_pushresult(&b);
    n->types_text = jc_keep_string(c, &len);
  } else {
    jc_schema_error(L, path, "type",
                    "must be a type name or an array of type names");
  }
  lua_pop(L, 1);
}

/* Object keywords: required, properties, patternProperties,
** additionalProperties, minProperties, maxProperties. */
static void jc_compile_object_kws(jc_cctx *c, int sidx, jc_node *n) {
  lua_State *L = c->L;
  const char *path = n->path;
  size_t i, len;
  int t;

  if (jc_getkw(L, sidx, "required") != LUA_TNIL) {
    t = lua_gettop(L);
    if (!jc_arraylike(L, t))
      jc_schema_error(L, path, "required", "must be an array of strings");
    n->nrequired = (size_t)jc_rawlen(L, t);
    n->required = (jc_prop *)jc_keep_block(c, n->nrequired, sizeof(jc_prop));
    for (i = 0; i < n->nrequired; i++) {
      lua_rawgeti(L, t, (lua_Integer)(i + 1));
      if (lua_type(L, -1) != LUA_TSTRING)
        jc_schema_error(L, path, "required", "must be an array of strings");
      n->required[i].name = lua_tolstring(L, -1, &n->required[i].len);
      jc_keep(c);
    }
  }
  lua_pop(L, 1);

  if (jc_getkw(L, sidx, "properties") != LUA_TNIL) {
    size_t k = 0, j;
    char *placed;
    t = lua_gettop(L);
    if (lua_type(L, t) != LUA_TTABLE || jc_is_array(L, t))
      jc_schema_error(L, path, "properties", "must be an object");
    lua_pushnil(L);
    while (lua_next(L, t) != 0) { n->nprops++; lua_pop(L, 1); }
    n->props_sorted = (jc_prop *)jc_keep_block(c, n->nprops, sizeof(jc_prop));
    n->props = (jc_prop *)jc_keep_block(c, n->nprops, sizeof(jc_prop));
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      const char *name;
      if (lua_type(L, -2) != LUA_TSTRING)
        jc_schema_error(L, path, "properties", "keys must be strings");
      name = lua_tolstring(L, -2, &len);
      n->props_sorted[k].name = name;  /* kept alive by the schema... */
      n->props_sorted[k].len = len;
      lua_pushvalue(L, -2);
      n->props_sorted[k].name = jc_keep_string(c, &len);  /* ...and by keep */
      n->props_sorted[k].node = jc_compile_node(
          c, lua_gettop(L), jc_child_path(c, path, "properties", name, len, -1));
      k++;
      lua_pop(L, 1);
    }
    qsort(n->props_sorted, n->nprops, sizeof(jc_prop), jc_prop_cmp);
    /* evaluation order: the 'required' order first, then byte order */
    placed = (char *)jc_keep_block(c, n->nprops + 1, 1);
    k = 0;
    for (i = 0; i < n->nrequired; i++) {
      const jc_prop *p = jc_find_prop(n, n->required[i].name,
                                      n->required[i].len);
      if (p != NULL && !placed[p - n->props_sorted]) {
        placed[p - n->props_sorted] = 1;
        n->props[k++] = *p;
      }
    }
    for (j = 0; j < n->nprops; j++)
      if (!placed[j]) n->props[k++] = n->props_sorted[j];
  }
  lua_pop(L, 1);

  if (jc_getkw(L, sidx, "patternProperties") != LUA_TNIL) {
    size_t k = 0;
    t = lua_gettop(L);
    if (lua_type(L, t) != LUA_TTABLE || jc_is_array(L, t))
      jc_schema_error(L, path, "patternProperties", "must be an object");
    lua_pushnil(L);
    while (lua_next(L, t) != 0) { n->npprops++; lua_pop(L, 1); }
    n->pprops = (jc_patprop *)jc_keep_block(c, n->npprops, sizeof(jc_patprop));
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      const char *src, *sub;
      if (lua_type(L, -2) != LUA_TSTRING)
        jc_schema_error(L, path, "patternProperties", "keys must be strings");
      src = lua_tolstring(L, -2, &len);
      lua_pushvalue(L, -2);
      n->pprops[k].src = jc_keep_string(c, &len);
      n->pprops[k].len = len;
      sub = jc_child_path(c, path, "patternProperties", src, len, -1);
      n->pprops[k].re = jc_compile_regex(c, sub, NULL, src, len);
      n->pprops[k].node = jc_compile_node(c, lua_gettop(L), sub);
      k++;
      lua_pop(L, 1);
    }
    qsort(n->pprops, n->npprops, sizeof(jc_patprop), jc_patprop_cmp);
  }
  lua_pop(L, 1);

  if (jc_getkw(L, sidx, "additionalProperties") != LUA_TNIL)
    n->addl = jc_compile_node(c, lua_gettop(L),
                              jc_child_path(c, path, "additionalProperties",
                                            NULL, 0, -1));
  lua_pop(L, 1);
  if (!jc_get_count(c, sidx, path, "minProperties", &n->min_props))
    n->min_props = ABSENT;
  if (!jc_get_count(c, sidx, path, "maxProperties", &n->max_props))
    n->max_props = ABSENT;
}

/* Array keywords: prefixItems, items (2020-12; draft-07 array form as a
** tuple with additionalItems), minItems, maxItems, uniqueItems. */
static void jc_compile_array_kws(jc_cctx *c, int sidx, jc_node *n) {
  lua_State *L = c->L;
  const char *path = n->path;
  int tuple = 0;
  if (jc_getkw(L, sidx, "prefixItems") != LUA_TNIL)
    n->prefix = jc_compile_list(c, path, "prefixItems", &n->nprefix, 1);
  else
    lua_pop(L, 1);
  if (jc_getkw(L, sidx, "items") != LUA_TNIL) {
    if (n->prefix == NULL && lua_type(L, -1) == LUA_TTABLE &&
        jc_is_array(L, lua_gettop(L))) {
      n->prefix = jc_compile_list(c, path, "items", &n->nprefix, 0);
      tuple = 1;
    } else {
      n->items = jc_compile_node(c, lua_gettop(L),
                                 jc_child_path(c, path, "items", NULL, 0, -1));
      lua_pop(L, 1);
    }
  } else {
    lua_pop(L, 1);
  }
  if (tuple) {
    if (jc_getkw(L, sidx, "additionalItems") != LUA_TNIL)
      n->items = jc_compile_node(
          c, lua_gettop(L),
          jc_child_path(c, path, "additionalItems", NULL, 0, -1));
    lua_pop(L, 1);
  }
  if (!jc_get_count(c, sidx, path, "minItems", &n->min_items))
    n->min_items = ABSENT;
  if (!jc_get_count(c, sidx, path, "maxItems", &n->max_items))
    n->max_items = ABSENT;
  if (jc_getkw(L, sidx, "uniqueItems") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TBOOLEAN)
      jc_schema_error(L, path, "uniqueItems", "must be a boolean");
    n->unique = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
}

/* String and number keywords. */
static void jc_compile_scalar_kws(jc_cctx *c, int sidx, jc_node *n) {
  lua_State *L = c->L;
  const char *path = n->path;
  size_t len;
  if (!jc_get_count(c, sidx, path, "minLength", &n->min_len))
    n->min_len = ABSENT;
  if (!jc_get_count(c, sidx, path, "maxLength", &n->max_len))
    n->max_len = ABSENT;
  if (jc_getkw(L, sidx, "pattern") != LUA_TNIL) {
    const char *src;
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_schema_error(L, path, "pattern", "must be a string");
    src = lua_tolstring(L, -1, &len);
    n->pattern = jc_compile_regex(c, path, "pattern", src, len);
    n->pattern_src = jc_keep_string(c, &len);
  } else {
    lua_pop(L, 1);
  }
  if (jc_getkw(L, sidx, "format") != LUA_TNIL) {
    const char *f;
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_schema_error(L, path, "format", "must be a string");
    f = lua_tostring(L, -1);
    if (strcmp(f, "date") == 0) n->format = FMT_DATE;
    else if (strcmp(f, "date-time") == 0) n->format = FMT_DATETIME;
    else if (strcmp(f, "time") == 0) n->format = FMT_TIME;
    n->format_name = jc_keep_string(c, &len);
  } else {
    lua_pop(L, 1);
  }
  jc_get_limit(c, sidx, path, "minimum", &n->lim[LIM_MIN]);
  jc_get_limit(c, sidx, path, "maximum", &n->lim[LIM_MAX]);
  /* draft-04 booleans: exclusiveMinimum = true makes 'minimum' exclusive */
  if (jc_getkw(L, sidx, "exclusiveMinimum") == LUA_TBOOLEAN) {
    if (lua_toboolean(L, -1) && n->lim[LIM_MIN].set) {
      n->lim[LIM_XMIN] = n->lim[LIM_MIN];
      n->lim[LIM_MIN].set = 0;
    }
  } else {
    jc_get_limit(c, sidx, path, "exclusiveMinimum", &n->lim[LIM_XMIN]);
  }
  lua_pop(L, 1);
  if (jc_getkw(L, sidx, "exclusiveMaximum") == LUA_TBOOLEAN) {
    if (lua_toboolean(L, -1) && n->lim[LIM_MAX].set) {
      n->lim[LIM_XMAX] = n->lim[LIM_MAX];
      n->lim[LIM_MAX].set = 0;
    }
  } else {
    jc_get_limit(c, sidx, path, "exclusiveMaximum", &n->lim[LIM_XMAX]);
  }
  lua_pop(L, 1);
  jc_get_limit(c, sidx, path, "multipleOf", &n->lim[LIM_MULT]);
  if (n->lim[LIM_MULT].set && !(n->lim[LIM_MULT].d > 0))
    jc_schema_error(L, path, "multipleOf", "must be greater than 0");
}

/* Percent-decode a URI fragment; pushes the result. [-0, +1, m] */
static void jc_push_unpercent(jc_cctx *c, const char *path, const char *s,
                              size_t len) {
  luaL_Buffer b;
  size_t i;
  luaL_buffinit(c->L, &b);
  for (i = 0; i < len; i++) {
    if (s[i] == '%') {
      int v = 0, k;
      if (i + 2 >= len)
        jc_schema_error(c->L, path, "$ref", "bad percent-encoding");
      for (k = 1; k <= 2; k++) {
        char h = s[i + (size_t)k];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= h - '0';
        else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
        else jc_schema_error(c->L, path, "$ref", "bad percent-encoding");
      }
      luaL_addchar(&b, (char)v);
      i += 2;
    } else {
      luaL_addchar(&b, s[i]);
    }
  }
  luaL_pushresult(&b);
}

/* Resolve a local '$ref' against the root schema and compile its target
** once. Raises when it points nowhere or is not local. */
static jc_node *jc_resolve_ref(jc_cctx *c, jc_node *n, const char *ref,
                               size_t reflen) {
  lua_State *L = c->L;
  const char *ptr, *p, *end;
  size_t plen;
  jc_node *target;
  if (reflen == 0 || ref[0] != '#')
    jc_schema_error(L, n->path, "$ref",
                    "unsupported $ref \"%s\" (only local \"#...\" references)",
                    ref);
  jc_push_unpercent(c, n->path, ref + 1, reflen - 1);
  ptr = jc_keep_string(c, &plen);
  if (plen > 0 && ptr[0] != '/')
    jc_schema_error(L, n->path, "$ref",
                    "unsupported $ref \"%s\" (anchors are not supported)", ref);
  lua_pushvalue(L, c->root);
  p = ptr;
  end = ptr + plen;
  while (p < end) {
    const char *q = p + 1;
    luaL_Buffer b;
    int cur = lua_gettop(L);
    while (q < end && *q != '/') q++;
    luaL_buffinit(L, &b);
    {
      const char *s;
      for (s = p + 1; s < q; s++) {
        if (*s == '~') {
          if (s + 1 < q && s[1] == '0') luaL_addchar(&b, '~');
          else if (s + 1 < q && s[1] == '1') luaL_addchar(&b, '/');
          else
            jc_schema_error(L, n->path, "$ref",
                            "bad JSON Pointer escape in \"%s\"", ref);
          s++;
        } else {
          luaL_addchar(&b, *s);
        }
      }
    }
    luaL_pushresult(&b);
    if (lua_type(L, cur) != LUA_TTABLE)
      jc_schema_error(L, n->path, "$ref", "cannot resolve \"%s\"", ref);
    if (jc_is_array(L, cur)) {
      size_t tl, k;
      const char *tok = lua_tolstring(L, -1, &tl);
      lua_Integer ix = 0;
      if (tl == 0 || (tl > 1 && tok[0] == '0') || tl > 9)
        jc_schema_error(L, n->path, "$ref", "cannot resolve \"%s\"", ref);
      for (k = 0; k < tl; k++) {
        if (tok[k] < '0' || tok[k] > '9')
          jc_schema_error(L, n->path, "$ref", "cannot resolve \"%s\"", ref);
        ix = ix * 10 + (tok[k] - '0');
      }
      lua_pop(L, 1);
      lua_rawgeti(L, cur, ix + 1);
    } else {
      lua_rawget(L, cur);
    }
    if (lua_isnil(L, -1))
      jc_schema_error(L, n->path, "$ref", "cannot resolve \"%s\"", ref);
    lua_replace(L, cur);
    p = q;
  }
  target = jc_compile_node(c, lua_gettop(L), ptr);
  lua_pop(L, 1);
  return target;
}

/* Compile the subschema at 'idx' whose schema pointer is 'path' (kept).
** Tables are compiled once (cache), which also ends cycles. */
static jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path) {
  lua_State *L = c->L;
  jc_node *n;
  size_t len;
  int t = lua_type(L, idx), i;

  if (t == LUA_TTABLE) {
    lua_pushvalue(L, idx);
    lua_rawget(L, c->cache);
    if (!lua_isnil(L, -1)) {
      n = (jc_node *)lua_touserdata(L, -1);
      lua_pop(L, 1);
      return n;
    }
    lua_pop(L, 1);
    if (jc_is_array(L, idx))
      jc_schema_error(L, path, NULL,
                      "expected an object or a boolean, got array");
  } else if (t != LUA_TBOOLEAN) {
    jc_schema_error(L, path, NULL,
                    "expected an object or a boolean, got %s",
                    jc_jt_names[jc_json_type(L, idx)]);
  }
  if (++c->nest > JC_SCHEMA_MAX_NEST)
    jc_schema_error(L, path, NULL, "nested deeper than %d levels",
                    JC_SCHEMA_MAX_NEST);
  if (!lua_checkstack(L, 16)) luaL_error(L, "schema too deep (Lua stack)");

  n = (jc_node *)jc_newuserdata(L, sizeof(jc_node));
  memset(n, 0, sizeof *n);
  n->path = path;
  n->boolean = t == LUA_TBOOLEAN ? lua_toboolean(L, idx) : -1;
  n->min_props = n->max_props = n->min_items = n->max_items = ABSENT;
  n->min_len = n->max_len = ABSENT;
  if (t == LUA_TTABLE) {
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -2);
    lua_rawset(L, c->cache);
  }
  jc_keep(c);
  if (t == LUA_TBOOLEAN) { c->nest--; return n; }
  idx = jc_absindex(L, idx);

  if (jc_getkw(L, idx, "$ref") != LUA_TNIL) {
    const char *ref;
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_schema_error(L, path, "$ref", "must be a string");
    ref = lua_tolstring(L, -1, &len);
    n->ref = jc_resolve_ref(c, n, ref, len);
  }
  lua_pop(L, 1);
  jc_compile_type(c, idx, n);
  if (jc_getkw(L, idx, "enum") != LUA_TNIL) {
    if (!jc_arraylike(L, lua_gettop(L)))
      jc_schema_error(L, path, "enum", "must be an array");
    n->enum_ref = jc_keep(c);
  } else {
    lua_pop(L, 1);
  }
  if (jc_getkw(L, idx, "const") != LUA_TNIL) n->const_ref = jc_keep(c);
  else lua_pop(L, 1);
  jc_compile_object_kws(c, idx, n);
  jc_compile_array_kws(c, idx, n);
  jc_compile_scalar_kws(c, idx, n);
  for (i = 0; i < 3; i++) {
    static const char *const kws[] = { "allOf", "anyOf", "oneOf" };
    jc_node ***dst[3];
    size_t *cnt[3];
    dst[0] = &n->allof; dst[1] = &n->anyof; dst[2] = &n->oneof;
    cnt[0] = &n->nallof; cnt[1] = &n->nanyof; cnt[2] = &n->noneof;
    if (jc_getkw(L, idx, kws[i]) != LUA_TNIL)
      *dst[i] = jc_compile_list(c, path, kws[i], cnt[i], 1);
    else
      lua_pop(L, 1);
  }
  if (jc_getkw(L, idx, "not") != LUA_TNIL)
    n->not_ = jc_compile_node(c, lua_gettop(L),
                              jc_child_path(c, path, "not", NULL, 0, -1));
  lua_pop(L, 1);
  c->nest--;
  return n;
}

/* ===================================================================== */
/* Validator                                                               */
/* ===================================================================== */

typedef struct jc_vctx {
  lua_State *L;
  jc_validator *v;
  int keep;            /* abs index of the keep table */
  int errs;            /* abs index of the errors list */
  int nerr;
  int first;           /* stop at the first error */
  int quiet;           /* > 0 inside anyOf/oneOf/not: record nothing */
  int abort;           /* too deep: unwind */
  int depth;           /* instance depth */
  int edepth;          /* nested subschema evaluations */
} jc_vctx;

#define JC_STOP(c) ((c)->quiet || (c)->abort || ((c)->first && (c)->nerr > 0))

/* Push the instance location as a JSON Pointer. [-0, +1, m] */
static void jc_push_pointer(jc_vctx *c) {
  luaL_Buffer b;
  int i;
  luaL_buffinit(c->L, &b);
  for (i = 0; i < c->depth; i++) {
    const jc_seg *s = &c->v->segs[i];
    luaL_addchar(&b, '/');
    if (s->key != NULL) {
      jc_add_token(&b, s->key, s->len);
    } else {
      char num[32];
      snprintf(num, sizeof num, "%lu", (unsigned long)s->index);
      luaL_addstring(&b, num);
    }
  }
  luaL_pushresult(&b);
}

/*
** Start an error item: pushes the item table (pointer, keyword,
** schema_pointer set) and the display location ("(root)" for ""),
** returns the latter. The caller may set extra fields on the item (at -2
** then), pushes the message and calls 'jc_err_end'. [-0, +2, m]
*/
static const char *jc_err_begin(jc_vctx *c, const jc_node *n,
                                const char *kw) {
  lua_State *L = c->L;
  lua_createtable(L, 0, 6);
  jc_push_pointer(c);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "pointer");
  if (kw != NULL) lua_pushfstring(L, "%s/%s", n->path, kw);
  else lua_pushstring(L, n->path);
  lua_setfield(L, -3, "schema_pointer");
  lua_pushstring(L, kw != NULL ? kw : (n->boolean == 0 ? "false" : ""));
  lua_setfield(L, -3, "keyword");
  if (*lua_tostring(L, -1) == '\0') {
    lua_pop(L, 1);
    lua_pushliteral(L, "(root)");
  }
  return lua_tostring(L, -1);
}

/* Finish the item started by 'jc_err_begin' with the message at the top:
** appends it to the errors list (unless quiet). [-3, +0, m] */
static void jc_err_end(jc_vctx *c) {
  lua_State *L = c->L;
  lua_setfield(L, -3, "message");
  lua_pop(L, 1);
  if (c->quiet) { lua_pop(L, 1); return; }
  lua_rawseti(L, c->errs, ++c->nerr);
}

/* Report an error whose message needs no extra field. 'fmt' gets the
** display location as its first %s. */
static void jc_report(jc_vctx *c, const jc_node *n, const char *kw,
                      const char *fmt, ...) {
  va_list ap;
  const char *where;
  if (c->quiet) return;
  where = jc_err_begin(c, n, kw);
  lua_pushstring(c->L, where);
  va_start(ap, fmt);
  lua_pushvfstring(c->L, fmt, ap);
  va_end(ap);
  lua_concat(c->L, 2);
  jc_err_end(c);
}

/* Instance too deep: recorded even when quiet, and everything unwinds. */
static void jc_too_deep(jc_vctx *c, const jc_node *n, const char *what,
                        int limit) {
  int q = c->quiet;
  c->quiet = 0;
  jc_err_begin(c, n, NULL);
  lua_pushliteral(c->L, "max_depth");
  lua_setfield(c->L, -3, "keyword");
  lua_pushfstring(c->L, "%s nested deeper than %d levels", what, limit);
  jc_err_end(c);
  c->quiet = q;
  c->abort = 1;
}

static int jc_eval(jc_vctx *c, const jc_node *n, int idx);

/* Report an 'enum' failure; the enum list is at the top. Kept out of
** 'jc_eval' so its frame stays small (luaL_Buffer is large). */
static JC_NOINLINE void jc_report_enum(jc_vctx *c, const jc_node *n, int idx,
                                       size_t cnt) {
  lua_State *L = c->L;
  int list = lua_gettop(L);
  luaL_Buffer b;
  size_t i;
  const char *where;
  if (c->quiet) return;
  where = jc_err_begin(c, n, "enum");
  lua_pushvalue(L, list);
  lua_setfield(L, -3, "allowed");
  jc_push_render(L, idx);
  lua_pushfstring(L, "%s %s is not one of ", where, lua_tostring(L, -1));
  lua_remove(L, -2);
  luaL_buffinit(L, &b);
  for (i = 1; i <= cnt; i++) {
    if (i > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, list, (lua_Integer)i);
    jc_push_render(L, -1);
    lua_remove(L, -2);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_concat(L, 2);
  jc_err_end(c);
}

/* Report a missing 'required' member 'p'. */
static JC_NOINLINE void jc_report_required(jc_vctx *c, const jc_node *n,
                                           const jc_prop *p) {
  lua_State *L = c->L;
  luaL_Buffer b;
  if (c->quiet) return;
  jc_err_begin(c, n, "required");
  lua_pushlstring(L, p->name, p->len);
  lua_setfield(L, -3, "property");
  lua_getfield(L, -2, "pointer");
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "missing required field ");
  luaL_addvalue(&b);
  luaL_addchar(&b, '/');
  jc_add_token(&b, p->name, p->len);
  luaL_pushresult(&b);
  jc_err_end(c);
}

/* Evaluate 'n' on the child value at the top (member 'key' or array
** 'index'), one level deeper. Pops nothing. */
static int jc_eval_child(jc_vctx *c, const jc_node *n, const char *key,
                         size_t len, size_t index) {
  int ok;
  jc_seg *s;
  if (c->depth >= c->v->max_depth) {
    s = &c->v->segs[c->depth];
    s->key = key; s->len = len; s->index = index;
    c->depth++;
    jc_too_deep(c, n, "value", c->v->max_depth);
    c->depth--;
    return 0;
  }
  if (!lua_checkstack(c->L, 24))
    luaL_error(c->L, "instance too deep (Lua stack)");
  s = &c->v->segs[c->depth];
  s->key = key; s->len = len; s->index = index;
  c->depth++;
  ok = jc_eval(c, n, lua_gettop(c->L));
  c->depth--;
  return ok;
}

/* Report a numeric bound failure. */
static void jc_report_limit(jc_vctx *c, const jc_node *n, int idx,
                            const char *kw, const char *text,
                            const jc_limit *lim) {
  lua_State *L = c->L;
  const char *where;
  char num[64];
  if (c->quiet) return;
  where = jc_err_begin(c, n, kw);
  jc_push_limit(L, lim);
  lua_setfield(L, -3, "limit");
  jc_fmt_number(L, idx, num, sizeof num);
  lua_pushfstring(L, "%s %s %s ", where, num, text);
  jc_push_limit(L, lim);
  jc_fmt_number(L, -1, num, sizeof num);
  lua_pop(L, 1);
  lua_pushstring(L, num);
  lua_concat(L, 2);
  jc_err_end(c);
}

/* Count report: "<where> has <actual> <unit>, minimum|maximum <limit>". */
static void jc_report_count(jc_vctx *c, const jc_node *n, const char *kw,
                            size_t actual, const char *unit,
                            const char *bound, size_t limit) {
  lua_State *L = c->L;
  const char *where;
  char a[32], l[32];
  if (c->quiet) return;
  where = jc_err_begin(c, n, kw);
  lua_pushnumber(L, (lua_Number)limit);
  lua_setfield(L, -3, "limit");
  lua_pushnumber(L, (lua_Number)actual);
  lua_setfield(L, -3, "actual");
  snprintf(a, sizeof a, "%lu", (unsigned long)actual);
  snprintf(l, sizeof l, "%lu", (unsigned long)limit);
  lua_pushfstring(L, "%s has %s %s, %s %s", where, a, unit, bound, l);
  jc_err_end(c);
}

static int jc_eval_number(jc_vctx *c, const jc_node *n, int idx) {
  lua_State *L = c->L;
  int ok = 1, fail;
  if (n->lim[LIM_MIN].set) {
    jc_push_limit(L, &n->lim[LIM_MIN]);
    fail = jc_num_lt(L, idx, -1);
    lua_pop(L, 1);
    if (fail) {
      ok = 0;
      jc_report_limit(c, n, idx, "minimum", "is less than minimum",
                      &n->lim[LIM_MIN]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_MAX].set) {
    jc_push_limit(L, &n->lim[LIM_MAX]);
    fail = jc_num_lt(L, -1, idx);
    lua_pop(L, 1);
    if (fail) {
      ok = 0;
      jc_report_limit(c, n, idx, "maximum", "is greater than maximum",
                      &n->lim[LIM_MAX]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_XMIN].set) {
    jc_push_limit(L, &n->lim[LIM_XMIN]);
    fail = !jc_num_lt(L, -1, idx);
    lua_pop(L, 1);
    if (fail) {
      ok = 0;
      jc_report_limit(c, n, idx, "exclusiveMinimum",
                      "is not greater than exclusive minimum",
                      &n->lim[LIM_XMIN]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_XMAX].set) {
    jc_push_limit(L, &n->lim[LIM_XMAX]);
    fail = !jc_num_lt(L, idx, -1);
    lua_pop(L, 1);
    if (fail) {
      ok = 0;
      jc_report_limit(c, n, idx, "exclusiveMaximum",
                      "is not less than exclusive maximum",
                      &n->lim[LIM_XMAX]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_MULT].set) {
    const jc_limit *m = &n->lim[LIM_MULT];
    int multiple;
#if JC_HAVE_INTEGER
    if (m->isint && lua_isinteger(L, idx)) {
      multiple = lua_tointeger(L, idx) % m->i == 0;
    } else
#endif
    {
      /* best effort for fractions: a quotient within 1e-9 of an integer */
      double q = (double)lua_tonumber(L, idx) / (double)m->d, r;
      if (q != q || q - q != 0) {
        multiple = 0;
      } else {
        r = q - floor(q);
        multiple = r < 1e-9 * (fabs(q) > 1 ? fabs(q) : 1) ||
                   1 - r < 1e-9 * (fabs(q) > 1 ? fabs(q) : 1);
      }
    }
    if (!multiple) {
      ok = 0;
      jc_report_limit(c, n, idx, "multipleOf", "is not a multiple of", m);
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

static int jc_eval_string(jc_vctx *c, const jc_node *n, int idx) {
  lua_State *L = c->L;
  size_t len, chars = 0, i;
  const char *s = lua_tolstring(L, idx, &len);
  int ok = 1;
  if (n->min_len != ABSENT || n->max_len != ABSENT) {
    /* code points: bytes that are not UTF-8 continuation bytes */
    for (i = 0; i < len; i++)
      if (((unsigned char)s[i] & 0xC0) != 0x80) chars++;
    if (n->min_len != ABSENT && chars < n->min_len) {
      ok = 0;
      jc_report_count(c, n, "minLength", chars, "characters", "minimum",
                      n->min_len);
      if (JC_STOP(c)) return 0;
    }
    if (n->max_len != ABSENT && chars > n->max_len) {
      ok = 0;
      jc_report_count(c, n, "maxLength", chars, "characters", "maximum",
                      n->max_len);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->pattern != NULL) {
    int rc = jc_pattern_match(n->pattern, c->v->matcher, s, len);
    if (rc != JC_PATTERN_MATCH) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "pattern");
        lua_pushstring(L, n->pattern_src);
        lua_setfield(L, -3, "pattern");
        if (rc == JC_PATTERN_NOMATCH) {
          jc_push_render(L, idx);
          lua_pushfstring(L, "%s %s does not match pattern %s", where,
                          lua_tostring(L, -1), n->pattern_src);
          lua_remove(L, -2);
        } else if (rc == JC_PATTERN_LIMIT) {
          lua_pushfstring(L, "%s could not be checked against pattern %s: "
                          "the match limit was hit", where, n->pattern_src);
        } else if (rc == JC_PATTERN_BADUTF) {
          lua_pushfstring(L, "%s is not valid UTF-8", where);
        } else {
          lua_pushfstring(L, "%s could not be checked against pattern %s",
                          where, n->pattern_src);
        }
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->format != FMT_NONE && c->v->format_assertion) {
    int valid = n->format == FMT_DATE ? jc_check_date(s, len)
              : n->format == FMT_DATETIME ? jc_check_datetime(s, len)
              : jc_check_time(s, len);
    if (!valid) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "format");
        jc_push_render(L, idx);
        lua_pushfstring(L, "%s %s is not a valid %s", where,
                        lua_tostring(L, -1), n->format_name);
        lua_remove(L, -2);
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

static int jc_eval_array(jc_vctx *c, const jc_node *n, int idx) {
  lua_State *L = c->L;
  size_t len = (size_t)jc_rawlen(L, idx), i, j;
  int ok = 1;
  if (n->min_items != ABSENT && len < n->min_items) {
    ok = 0;
    jc_report_count(c, n, "minItems", len, "items", "minimum", n->min_items);
    if (JC_STOP(c)) return 0;
  }
  if (n->max_items != ABSENT && len > n->max_items) {
    ok = 0;
    jc_report_count(c, n, "maxItems", len, "items", "maximum", n->max_items);
    if (JC_STOP(c)) return 0;
  }
  if (n->unique && len > 1) {
    int dup = 0;
    for (i = 1; i <= len && !dup; i++) {
      lua_rawgeti(L, idx, (lua_Integer)i);
      for (j = i + 1; j <= len; j++) {
        lua_rawgeti(L, idx, (lua_Integer)j);
        dup = jc_json_equal(L, -2, -1, c->v->max_depth);
        lua_pop(L, 1);
        if (dup) break;
      }
      lua_pop(L, 1);
    }
    if (dup) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "uniqueItems");
        char a[32], b[32];
        snprintf(a, sizeof a, "%lu", (unsigned long)(i - 2));
        snprintf(b, sizeof b, "%lu", (unsigned long)(j - 1));
        lua_pushfstring(L, "%s has duplicate items at %s and %s", where, a, b);
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  for (i = 0; i < len && (i < n->nprefix || n->items != NULL); i++) {
    const jc_node *sub = i < n->nprefix ? n->prefix[i] : n->items;
    int r;
    lua_rawgeti(L, idx, (lua_Integer)(i + 1));
    r = jc_eval_child(c, sub, NULL, 0, i);
    lua_pop(L, 1);
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

typedef struct jc_key {
  const char *s;
  size_t len;
} jc_key;

static int jc_key_cmp(const void *x, const void *y) {
  const jc_key *a = (const jc_key *)x, *b = (const jc_key *)y;
  return jc_cmp_bytes(a->s, a->len, b->s, b->len);
}

/* The string form of the key at 'k' (numbers converted on a copy pushed
** into 'holder'); raises on keys no JSON object can have. */
static const char *jc_key_string(jc_vctx *c, int k, int holder, size_t *len,
                                 int *slot) {
  lua_State *L = c->L;
  if (lua_type(L, k) == LUA_TSTRING) return lua_tolstring(L, k, len);
  if (lua_type(L, k) == LUA_TNUMBER) {
    const char *s;
    lua_pushvalue(L, k);
    s = lua_tolstring(L, -1, len);
    lua_rawseti(L, holder, ++*slot);
    return s;
  }
  luaL_error(L, "object key of type %s is not JSON", luaL_typename(L, k));
  return NULL;
}

static int jc_eval_object(jc_vctx *c, const jc_node *n, int idx) {
  lua_State *L = c->L;
  size_t i, j, count = 0;
  int ok = 1, r;

  for (i = 0; i < n->nrequired; i++) {
    const jc_prop *p = &n->required[i];
    int missing;
    lua_pushlstring(L, p->name, p->len);
    lua_rawget(L, idx);
    missing = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (missing) {
      ok = 0;
      jc_report_required(c, n, p);
      if (JC_STOP(c)) return 0;
    }
  }

  for (i = 0; i < n->nprops; i++) {
    const jc_prop *p = &n->props[i];
    lua_pushlstring(L, p->name, p->len);
    lua_rawget(L, idx);
    if (!lua_isnil(L, -1)) {
      r = jc_eval_child(c, p->node, p->name, p->len, 0);
      if (!r) {
        ok = 0;
        if (JC_STOP(c)) { lua_pop(L, 1); return 0; }
      }
    }
    lua_pop(L, 1);
  }

  if (n->npprops > 0 || n->addl != NULL || n->min_props != ABSENT ||
      n->max_props != ABSENT) {
    int holder, slot = 0;
    jc_key *keys;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) { count++; lua_pop(L, 1); }
    if (n->npprops > 0 || n->addl != NULL) {
      lua_newtable(L);   /* holds converted keys */
      holder = lua_gettop(L);
      keys = (jc_key *)jc_newuserdata(L, (count ? count : 1) * sizeof(jc_key));
      j = 0;
      lua_pushnil(L);
      while (lua_next(L, idx) != 0 && j < count) {
        lua_pop(L, 1);
        keys[j].s = jc_key_string(c, -1, holder, &keys[j].len, &slot);
        j++;
      }
      qsort(keys, j, sizeof(jc_key), jc_key_cmp);
      for (i = 0; i < j; i++) {
        int matched = 0;
        size_t k;
        lua_pushlstring(L, keys[i].s, keys[i].len);
        lua_rawget(L, idx);
        if (lua_isnil(L, -1)) {   /* a numeric key: fetch by the number */
          lua_pop(L, 1);
          lua_pushlstring(L, keys[i].s, keys[i].len);
          lua_pushnumber(L, lua_tonumber(L, -1));
          lua_remove(L, -2);
          lua_rawget(L, idx);
        }
        for (k = 0; k < n->npprops; k++) {
          int rc = jc_pattern_match(n->pprops[k].re, c->v->matcher,
                                    keys[i].s, keys[i].len);
          if (rc == JC_PATTERN_MATCH) {
            matched = 1;
            r = jc_eval_child(c, n->pprops[k].node, keys[i].s, keys[i].len,
                              0);
          } else if (rc != JC_PATTERN_NOMATCH) {
            r = 0;
            if (!c->quiet) {
              jc_seg *s = &c->v->segs[c->depth];
              s->key = keys[i].s; s->len = keys[i].len;
              c->depth++;
              jc_report(c, n, "patternProperties",
                        " could not be checked against pattern %s: %s",
                        n->pprops[k].src,
                        rc == JC_PATTERN_LIMIT ? "the match limit was hit"
                                               : "invalid UTF-8");
              c->depth--;
            }
          } else {
            continue;
          }
          if (!r) {
            ok = 0;
            if (JC_STOP(c)) { lua_pop(L, 3); return 0; }
          }
        }
        if (!matched && n->addl != NULL &&
            jc_find_prop(n, keys[i].s, keys[i].len) == NULL) {
          if (n->addl->boolean == 0) {
            r = 0;
            if (!c->quiet) {
              jc_seg *s = &c->v->segs[c->depth];
              s->key = keys[i].s; s->len = keys[i].len;
              c->depth++;
              jc_err_begin(c, n, "additionalProperties");
              lua_pushlstring(L, keys[i].s, keys[i].len);
              lua_setfield(L, -3, "property");
              lua_getfield(L, -2, "pointer");
              lua_pushfstring(L, "extra field %s is not allowed",
                              lua_tostring(L, -1));
              lua_remove(L, -2);
              jc_err_end(c);
              c->depth--;
            }
          } else {
            r = jc_eval_child(c, n->addl, keys[i].s, keys[i].len, 0);
          }
          if (!r) {
            ok = 0;
            if (JC_STOP(c)) { lua_pop(L, 3); return 0; }
          }
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 2);
    }
    if (n->min_props != ABSENT && count < n->min_props) {
      ok = 0;
      jc_report_count(c, n, "minProperties", count, "properties", "minimum",
                      n->min_props);
      if (JC_STOP(c)) return 0;
    }
    if (n->max_props != ABSENT && count > n->max_props) {
      ok = 0;
      jc_report_count(c, n, "maxProperties", count, "properties", "maximum",
                      n->max_props);
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

/* Does the value (JSON type 'jt') satisfy the 'type' bits? */
static int jc_type_ok(lua_State *L, int idx, int jt, unsigned types) {
  switch (jt) {
    case JT_NULL: return (types & TB_NULL) != 0;
    case JT_BOOLEAN: return (types & TB_BOOLEAN) != 0;
    case JT_OBJECT: return (types & TB_OBJECT) != 0;
    case JT_ARRAY: return (types & TB_ARRAY) != 0;
    case JT_STRING: return (types & TB_STRING) != 0;
    case JT_NUMBER:
      return (types & TB_NUMBER) != 0 ||
             ((types & TB_INTEGER) != 0 && jc_is_integral(L, idx));
    default: return 0;
  }
}

/* Evaluate applicator lists quietly; returns how many matched and the
** first two matching indexes. */
static size_t jc_count_matches(jc_vctx *c, jc_node *const *list, size_t n,
                               int idx, size_t stop_at, size_t *which) {
  size_t i, hits = 0;
  c->quiet++;
  for (i = 0; i < n && hits < stop_at && !c->abort; i++) {
    if (jc_eval(c, list[i], idx)) {
      if (hits < 2) which[hits] = i;
      hits++;
    }
  }
  c->quiet--;
  return hits;
}

/*
** Evaluate node 'n' on the value at absolute index 'idx'. Keyword order is
** fixed: $ref, type (a type failure ends the subschema), enum, const, the
** keywords of the value's type, allOf, anyOf, oneOf, not. Returns 1 when
** valid.
*/
static int jc_eval(jc_vctx *c, const jc_node *n, int idx) {
  lua_State *L = c->L;
  int ok = 1, jt;
  if (n->boolean == 1) return 1;
  if (n->boolean == 0) {
    jc_report(c, n, NULL, " is not allowed");
    return 0;
  }
  if (++c->edepth > JC_SCHEMA_MAX_EVAL) {
    jc_too_deep(c, n, "schema evaluation", JC_SCHEMA_MAX_EVAL);
    c->edepth--;
    return 0;
  }
  jt = jc_json_type(L, idx);
  if (jt == JT_OTHER)
    luaL_error(L, "value of type %s is not JSON", luaL_typename(L, idx));

  if (n->ref != NULL && !jc_eval(c, n->ref, idx)) {
    ok = 0;
    if (JC_STOP(c)) goto done;
  }
  if (n->types != 0 && !jc_type_ok(L, idx, jt, n->types)) {
    ok = 0;
    if (!c->quiet) {
      const char *where = jc_err_begin(c, n, "type");
      lua_pushstring(L, n->types_text);
      lua_setfield(L, -3, "expected");
      lua_pushstring(L, jc_jt_names[jt]);
      lua_setfield(L, -3, "actual");
      lua_pushfstring(L, "%s is %s, expected %s", where, jc_jt_names[jt],
                      n->types_text);
      jc_err_end(c);
    }
    goto done;
  }
  if (n->enum_ref != 0) {
    size_t i, cnt;
    int found = 0;
    lua_rawgeti(L, c->keep, n->enum_ref);
    cnt = (size_t)jc_rawlen(L, -1);
    for (i = 1; i <= cnt && !found; i++) {
      lua_rawgeti(L, -1, (lua_Integer)i);
      found = jc_json_equal(L, idx, -1, c->v->max_depth);
      lua_pop(L, 1);
    }
    if (!found) {
      ok = 0;
      jc_report_enum(c, n, idx, cnt);
    }
    lua_pop(L, 1);
    if (!ok && JC_STOP(c)) goto done;
  }
  if (n->const_ref != 0) {
    int eq;
    lua_rawgeti(L, c->keep, n->const_ref);
    eq = jc_json_equal(L, idx, -1, c->v->max_depth);
    if (!eq) {
      ok = 0;
      if (!c->quiet) {
        int cv = lua_gettop(L);
        const char *where = jc_err_begin(c, n, "const");
        lua_pushvalue(L, cv);
        lua_setfield(L, -3, "expected");
        jc_push_render(L, cv);
        lua_pushfstring(L, "%s must be %s", where, lua_tostring(L, -1));
        lua_remove(L, -2);
        jc_err_end(c);
      }
    }
    lua_pop(L, 1);
    if (!ok && JC_STOP(c)) goto done;
  }
  {
    int r = 1;
    switch (jt) {
      case JT_OBJECT: r = jc_eval_object(c, n, idx); break;
      case JT_ARRAY: r = jc_eval_array(c, n, idx); break;
      case JT_STRING: r = jc_eval_string(c, n, idx); break;
      case JT_NUMBER: r = jc_eval_number(c, n, idx); break;
      default: break;
    }
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->nallof > 0) {
    size_t i;
    for (i = 0; i < n->nallof; i++) {
      if (!jc_eval(c, n->allof[i], idx)) {
        ok = 0;
        if (JC_STOP(c)) goto done;
      }
    }
  }
  if (n->nanyof > 0) {
    size_t which[2];
    if (jc_count_matches(c, n->anyof, n->nanyof, idx, 1, which) == 0) {
      ok = 0;
      if (c->abort) goto done;
      jc_report(c, n, "anyOf", " does not match any of the %d alternatives",
                (int)n->nanyof);
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->noneof > 0) {
    size_t which[2];
    size_t hits = jc_count_matches(c, n->oneof, n->noneof, idx, 2, which);
    if (c->abort) { ok = 0; goto done; }
    if (hits != 1) {
      ok = 0;
      if (hits == 0)
        jc_report(c, n, "oneOf", " does not match any of the %d alternatives",
                  (int)n->noneof);
      else
        jc_report(c, n, "oneOf",
                  " matches more than one of the %d alternatives "
                  "(%d and %d), expected exactly one",
                  (int)n->noneof, (int)which[0], (int)which[1]);
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->not_ != NULL) {
    int matched;
    c->quiet++;
    matched = jc_eval(c, n->not_, idx);
    c->quiet--;
    if (c->abort) { ok = 0; goto done; }
    if (matched) {
      ok = 0;
      jc_report(c, n, "not", " must not match the schema in \"not\"");
    }
  }
done:
  c->edepth--;
  return ok;
}

/* ===================================================================== */
/* Lua API                                                                 */
/* ===================================================================== */

/* __gc (and close) of "jsoncontract.Validator": drops the keep table once. */
static int jc_validator_gc(lua_State *L) {
  jc_validator *v = (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
  if (v->keep_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, v->keep_ref);
    v->keep_ref = LUA_NOREF;
  }
  v->root = NULL;
  v->matcher = NULL;
  v->segs = NULL;
  return 0;
}

static int jc_validator_tostring(lua_State *L) {
  jc_validator *v = (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
  lua_pushfstring(L, "jsoncontract.Validator (%p)%s", (void *)v,
                  v->root == NULL ? " (closed)" : "");
  return 1;
}

/*
** core.compile(schema [, opts]) -> validator
**   schema  table (a JSON Schema as decoded) or boolean
**   opts    table or nil: format_assertion (boolean, default false: 'format'
**           is an annotation as in 2020-12 §7.2.1; true asserts "date",
**           "date-time", "time"), max_depth (integer 1..10000, default
**           1000: instance depth bound, deeper values fail as "too_deep")
** Returns a "jsoncontract.Validator" userdata (garbage collected).
** Raises "invalid schema at <schema pointer>: <reason>" for a bad schema,
** and on misuse (bad argument, unknown option).
** Stack: [-0, +1, e]
*/
static int jc_schema_compile(lua_State *L) {
  jc_validator *v;
  jc_cctx c;
  int t = lua_type(L, 1);
  int fa = 0, maxd = JC_SCHEMA_MAX_DEPTH;
  luaL_argcheck(L, t == LUA_TTABLE || t == LUA_TBOOLEAN, 1,
                "table or boolean expected");
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2) != 0) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2)
                                                      : "?";
      if (strcmp(k, "format_assertion") == 0) {
        luaL_argcheck(L, lua_type(L, -1) == LUA_TBOOLEAN, 2,
                      "format_assertion must be a boolean");
        fa = lua_toboolean(L, -1);
      } else if (strcmp(k, "max_depth") == 0) {
        lua_Number d = lua_tonumber(L, -1);
        luaL_argcheck(L, lua_type(L, -1) == LUA_TNUMBER && d == floor(d) &&
                      d >= 1 && d <= JC_SCHEMA_MAX_DEPTH_LIMIT, 2,
                      "max_depth must be an integer from 1 to 10000");
        maxd = (int)d;
      } else {
        return luaL_argerror(L, 2, lua_pushfstring(L, "unknown option \"%s\"",
                                                   k));
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 1);
  /* owner first: everything below hangs off its keep table */
  v = (jc_validator *)jc_newuserdata(L, sizeof(jc_validator));
  memset(v, 0, sizeof *v);
  v->keep_ref = LUA_NOREF;
  luaL_setmetatable(L, JC_VALIDATOR_MT);
  v->max_depth = maxd;
  v->format_assertion = fa;
  lua_newtable(L);                   /* 3: keep */
  lua_pushvalue(L, -1);
  v->keep_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);                   /* 4: cache */
  c.L = L;
  c.keep = 3;
  c.nkeep = 0;
  c.cache = 4;
  c.root = 1;
  c.nest = 0;
  c.v = v;
  v->matcher = jc_matcher_new(L);
  jc_keep(&c);
  v->segs = (jc_seg *)jc_keep_block(&c, (size_t)maxd + 1, sizeof(jc_seg));
  lua_pushliteral(L, "");
  {
    size_t len;
    const char *root = jc_keep_string(&c, &len);
    v->root = jc_compile_node(&c, 1, root);
  }
  lua_settop(L, 2);
  return 1;
}

/*
** validator:validate(value [, opts]) -> true | nil, err
**   value  a JSON value as Lua (tables, strings, numbers, booleans, null)
**   opts   table or nil: first (boolean: stop at the first error)
** err = { category = "schema", kind = "schema_mismatch" | "too_deep",
**         message = <all messages joined by "; ">,
**         errors = { { pointer, keyword, schema_pointer, message, ...}, ...} }
** Raises on misuse: a closed validator, a value that is not JSON (a
** function, a non-JSON table key), an unknown option.
** Stack: [-0, +1|2, e]
*/
static int jc_schema_validate(lua_State *L) {
  jc_validator *v = (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
  jc_vctx c;
  int first = 0, i;
  luaL_argcheck(L, v->root != NULL, 1, "validator is closed");
  luaL_argcheck(L, !lua_isnone(L, 2), 2, "value expected");
  luaL_argcheck(L, lua_gettop(L) <= 3, 4, "no more than 2 arguments expected");
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 3) != 0) {
      const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2)
                                                      : "?";
      if (strcmp(k, "first") == 0) {
        luaL_argcheck(L, lua_type(L, -1) == LUA_TBOOLEAN, 3,
                      "first must be a boolean");
        first = lua_toboolean(L, -1);
      } else {
        return luaL_argerror(L, 3, lua_pushfstring(L, "unknown option \"%s\"",
                                                   k));
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 2);
  if (jc_json_type(L, 2) == JT_OTHER)
    return luaL_error(L, "value of type %s is not JSON", luaL_typename(L, 2));
  lua_rawgeti(L, LUA_REGISTRYINDEX, v->keep_ref);   /* 3: keep */
  lua_newtable(L);                                  /* 4: errors */
  c.L = L;
  c.v = v;
  c.keep = 3;
  c.errs = 4;
  c.nerr = 0;
  c.first = first;
  c.quiet = 0;
  c.abort = 0;
  c.depth = 0;
  c.edepth = 0;
  lua_pushvalue(L, 2);
  if (jc_eval(&c, v->root, 5) && c.nerr == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_settop(L, 4);
  lua_pushnil(L);
  {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (i = 1; i <= c.nerr; i++) {
      if (i > 1) luaL_addstring(&b, "; ");
      lua_rawgeti(L, 4, i);
      lua_getfield(L, -1, "message");
      lua_remove(L, -2);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
  }
  jc_push_error(L, "schema", c.abort ? "too_deep" : "schema_mismatch", "%s",
                lua_tostring(L, -1));
  lua_remove(L, -2);
  lua_pushvalue(L, 4);
  lua_setfield(L, -2, "errors");
  return 2;
}

static const luaL_Reg jc_validator_methods[] = {
  { "validate", jc_schema_validate },
  { NULL, NULL }
};

static const luaL_Reg jc_validator_meta[] = {
  { "__gc", jc_validator_gc },
  { "__tostring", jc_validator_tostring },
  { NULL, NULL }
};

static const luaL_Reg jc_schema_funcs[] = {
  { "compile", jc_schema_compile },
  { NULL, NULL }
};

void jc_schema_open(lua_State *L) {
  if (luaL_newmetatable(L, JC_VALIDATOR_MT)) {
    luaL_setfuncs(L, jc_validator_meta, 0);
    lua_pushliteral(L, JC_VALIDATOR_MT);
    lua_setfield(L, -2, "__name");
    lua_newtable(L);
    luaL_setfuncs(L, jc_validator_methods, 0);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, jc_schema_funcs, 0);
}

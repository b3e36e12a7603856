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
** Keywords (draft 2020-12, draft-07, draft-04; '$schema' or the 'draft'
** option picks): type, enum, const, required, properties,
** patternProperties, additionalProperties, propertyNames, min/maxProperties,
** dependentRequired, dependentSchemas, dependencies, prefixItems, items,
** additionalItems, contains, min/maxContains, min/maxItems, uniqueItems,
** min/maxLength, pattern, format, minimum, maximum, exclusive* (numbers and
** draft-04 booleans), multipleOf (exact in decimal), allOf, anyOf, oneOf,
** not, if/then/else, unevaluatedProperties, unevaluatedItems, $ref, $defs,
** definitions, $id / id (RFC 3986 base URIs), $anchor, $dynamicRef,
** $dynamicAnchor, remote documents through a Lua 'loader' (at compile time,
** under lua_pcall), custom meta-schemas' $vocabulary (validation on/off).
** Draft 4/7: '$ref' ignores its siblings. Compile first indexes every
** schema resource ('jc_index'), then compiles nodes ('jc_compile_node'),
** then rejects reference cycles that never consume input.
** unevaluated* are computed by 'jc_collect' (annotations of the in-place
** subschemas that passed); $dynamicRef walks the dynamic scope of
** resources kept during evaluation.
** Before the walk, 'jc_check_json' checks the whole instance is JSON (the
** walk sees only what the schema looks at) and raises with the pointer;
** uniqueItems hashes items ('jc_find_duplicate'); errors stop at
** validate's max_errors and messages are bounded (JC_ENUM_SHOW values per
** enum message, JC_MESSAGE_JOIN messages in err.message).
*/
#include "jc.h"
#include "opts.h"
#include "parse.h"
#include "pattern.h"
#include "schema_format.h"
#include "tape.h"

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
#ifndef JC_ENUM_SHOW
#define JC_ENUM_SHOW 10               /* allowed values listed in an enum message */
#endif
#ifndef JC_MESSAGE_JOIN
#define JC_MESSAGE_JOIN 20            /* error messages joined in err.message */
#endif
#ifndef JC_MAX_ERRORS
#define JC_MAX_ERRORS 100             /* default of validate's max_errors */
#endif
#define JC_COUNT_MAX (((size_t)-1) - 1)


/* Bits of the 'type' keyword. */
#define TB_NULL 0x01u
#define TB_BOOLEAN 0x02u
#define TB_OBJECT 0x04u
#define TB_ARRAY 0x08u
#define TB_NUMBER 0x10u
#define TB_INTEGER 0x20u
#define TB_STRING 0x40u

enum { LIM_MIN, LIM_MAX, LIM_XMIN, LIM_XMAX, LIM_MULT, LIM_N };

typedef struct jc_node jc_node;

typedef struct jc_prop {       /* one member of 'properties' */
  const char *name;
  size_t len;
  jc_node *node;
  int name_ref;                /* keep index of the name as a Lua string */
  long sidx;                   /* index in 'props_sorted', -1 = none */
} jc_prop;

typedef struct jc_patprop {    /* one member of 'patternProperties' */
  const char *src;
  size_t len;
  jc_pattern *re;
  jc_node *node;
} jc_patprop;

typedef struct jc_dep {       /* dependentRequired / dependentSchemas */
  const char *kw;              /* the keyword it came from */
  const char *name;
  size_t len;
  jc_prop *req;                /* required names, or NULL */
  size_t nreq;
  jc_node *node;               /* schema, or NULL */
} jc_dep;

typedef struct jc_res {        /* a schema resource (a document or $id) */
  const char *uri;
  size_t ndyn;                 /* its $dynamicAnchor names and targets */
  const char **dyn_names;
  jc_node **dyn_nodes;
} jc_res;

typedef struct jc_limit {      /* a numeric bound, exact for integers */
  int set;
  int isint;
  lua_Integer i;
  lua_Number d;
} jc_limit;

struct jc_node {
  const char *path;            /* schema pointer of this subschema ("" root) */
  const char *abs;             /* absolute location: "<base URI>#<pointer>" */
  jc_res *res;                 /* the resource it belongs to */
  int mark;                    /* cycle check at compile */
  int boolean;                 /* -1 object schema, 0 false, 1 true */
  unsigned types;              /* TB_* bits, 0 = no 'type' */
  const char *types_text;      /* "string or null" */
  int enum_ref, const_ref;     /* index in the keep table, 0 = absent */
  int enum_tables;             /* the enum has array/object members */
  jc_tape *enum_tape;          /* the enum members on one tape */
  size_t nenum;
  size_t *enum_roots;          /* entry of each member */
  jc_u64 *enum_hash;           /* (hash, member) pairs sorted by hash */
  jc_tape *const_tape;         /* 'const' at entry 0 */
  const char *base;            /* base URI */
  jc_node *ref;                /* '$ref' target */
  jc_node *dynref;             /* '$dynamicRef' static target */
  const char *dyn_name;        /* its anchor name when dynamic, else NULL */
  /* objects */
  jc_prop *required;           /* names only */
  size_t nrequired;
  jc_prop *props;              /* evaluation order: required order, then bytes */
  jc_prop *props_sorted;       /* byte order, for lookup */
  size_t nprops;
  int props_set;               /* keep index: { name = index + 1 in sorted } */
  jc_patprop *pprops;          /* byte order of the source */
  size_t npprops;
  jc_node *addl;               /* 'additionalProperties' (NULL if true) */
  int addl_true;               /* additionalProperties: true (annotation) */
  size_t min_props, max_props; /* (size_t)-1 = absent */
  jc_dep *deps;                /* dependentRequired, dependentSchemas */
  size_t ndeps;
  jc_node *pnames;             /* 'propertyNames' */
  jc_node *uprops;             /* 'unevaluatedProperties' */
  /* arrays */
  jc_node **prefix;
  size_t nprefix;
  jc_node *items;
  size_t min_items, max_items;
  int unique;
  jc_node *contains;
  size_t min_contains, max_contains;
  jc_node *uitems;             /* 'unevaluatedItems' */
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
  jc_node *if_, *then_, *else_;
};

typedef struct jc_via {        /* one reference followed at validation */
  const jc_node *from;         /* the node holding the reference */
  const jc_node *to;           /* its target */
  const char *kw;              /* "$ref" or "$dynamicRef" */
} jc_via;

typedef struct jc_validator {
  int keep_ref;                /* registry ref of the keep table */
  jc_node *root;
  jc_matcher *matcher;
  jc_seg *segs;                /* max_depth + 1 entries */
  int max_depth;
  int format_assertion;
  int dynamic;                 /* uses $dynamicRef: keep the dynamic scope */
  jc_res **scope;              /* dynamic scope stack, JC_SCHEMA_MAX_EVAL+2 */
  const char *base;            /* base URI of the root */
  const void *amt;             /* the JC_ARRAY_MT table (registry) */
  jc_via *via;                 /* references being followed, for the
                                  keyword location ("basic" output) */
  double work_budget;          /* work units per validation, 0 = default */
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

/* --------------------------------------------------------------------- */
/* Compact JSON rendering for messages, bounded to JC_RENDER_MAX bytes.    */
/* --------------------------------------------------------------------- */

static void jc_rb_str(jc_rbuf *r, const char *s) { jc_rb_add(r, s, strlen(s)); }

/* Render a number as JSON: integers exactly, floats in the shortest
** round-tripping form. */
static void jc_fmt_number(lua_State *L, int idx, char *out, size_t outsz) {
  lua_Number d;
#if JC_HAVE_INTEGER
  if (lua_isinteger(L, idx)) {
    snprintf(out, outsz, LUA_INTEGER_FMT, (LUAI_UACINT)lua_tointeger(L, idx));
    return;
  }
#endif
  d = lua_tonumber(L, idx);
  jc_fmt_double((double)d, out, outsz);
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

/* Push the compact JSON text of the Lua value at 'idx'. [-0, +1, m] */
static void jc_push_render(lua_State *L, int idx) {
  jc_rbuf r;
  r.n = 0;
  r.full = 0;
  jc_render(L, idx, &r, 16);
  lua_pushlstring(L, r.b, r.n);
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
  int draft;           /* JC_D4, JC_D7, JC_D2019 or JC_D2020 */
  int draftof;         /* abs index: schema table -> its draft */
  int loader;          /* abs index of the loader function, 0 = none */
  int reg;             /* abs index: document/resource URI -> schema */
  int anchors;         /* abs index: "<uri>#<name>" -> schema */
  int dyns;            /* abs index: URI -> { name -> schema } */
  int loc;             /* abs index: schema table -> "<base>#<pointer>" */
  int baseof;          /* abs index: schema table -> base URI */
  int resof;           /* abs index: base URI -> jc_res (light) */
  int nodes;           /* abs index: list of every node (light) */
  int novalidation;    /* $vocabulary of the meta-schema lacks validation */
  int nnodes;
} jc_cctx;

#define JC_D4 4
#define JC_D7 7
#define JC_D2019 2019
#define JC_D2020 2020

static int jc_draft_uri(const char *u);

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

static jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path,
                                const char *abs, const char *base);

/* Compile the child schema at 'idx' of 'n' under keyword 'kw' (and member
** 'token' or array 'index', as in 'jc_child_path'). */
static jc_node *jc_compile_sub(jc_cctx *c, int idx, const jc_node *n,
                               const char *kw, const char *token,
                               size_t toklen, long index) {
  const char *path = jc_child_path(c, n->path, kw, token, toklen, index);
  const char *abs = jc_child_path(c, n->abs, kw, token, toklen, index);
  return jc_compile_node(c, idx, path, abs, n->base);
}

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
  lua_Number d;
  if (jc_getkw(L, sidx, kw) == LUA_TNIL) { lua_pop(L, 1); return; }
  if (lua_type(L, -1) != LUA_TNUMBER)
    jc_schema_error(L, path, kw, "must be a number");
  d = lua_tonumber(L, -1);
  if (d - d != 0)   /* NaN, +-infinity: no JSON number */
    jc_schema_error(L, path, kw, "must be a finite number");
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
/* Raise unless the value at 'idx' (an enum member or const) is JSON
** down to 'depth' levels: no NaN or infinity, no function, coroutine or
** userdata (a deeper or cyclic value is refused too). [-0, +0, v] */
static void jc_schema_json(lua_State *L, int idx, const char *path,
                           const char *kw, int depth) {
  lua_Number d;
  idx = jc_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: case LUA_TBOOLEAN: return;
    case LUA_TNUMBER:
      d = lua_tonumber(L, idx);
      if (d - d != 0)
        jc_schema_error(L, path, kw, "%s is not JSON",
                        d != d ? "NaN" : "infinity");
      return;
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) return;
      break;
    case LUA_TTABLE:
      if (depth <= 0 || !lua_checkstack(L, 4))
        jc_schema_error(L, path, kw, "value nested too deeply (or a cycle)");
      lua_pushnil(L);
      while (lua_next(L, idx) != 0) {
        jc_schema_json(L, -2, path, kw, depth - 1);
        jc_schema_json(L, -1, path, kw, depth - 1);
        lua_pop(L, 1);
      }
      return;
    default: break;
  }
  jc_schema_error(L, path, kw, "a value of type %s is not JSON",
                  luaL_typename(L, idx));
}

static int jc_hash_cmp(const void *x, const void *y) {
  const jc_u64 *a = (const jc_u64 *)x, *b = (const jc_u64 *)y;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Write the 'cnt' members of the list at 'list' (checked JSON values) to
** one tape owned by the keep table; '*roots' gets each member's entry and
** '*hash' (hash, member) pairs sorted by hash (both optional). */
static void jc_compile_tapes(jc_cctx *c, int list, size_t cnt, jc_tape **out,
                             size_t **roots, jc_u64 **hash) {
  lua_State *L = c->L;
  jc_tape *t = jc_tape_new(L);
  jc_seg *segs = (jc_seg *)jc_keep_block(c, JC_SCHEMA_MAX_NEST + 2,
                                         sizeof(jc_seg));
  size_t k, depth, *r = NULL;
  jc_u64 *h = NULL;
  jc_keep(c);
  if (roots != NULL) {
    r = (size_t *)jc_keep_block(c, cnt + 1, sizeof(size_t));
    h = (jc_u64 *)jc_keep_block(c, 2 * cnt + 2, sizeof(jc_u64));
  }
  for (k = 0; k < cnt; k++) {
    long budget = 0x7fffffffL;
    size_t root = t->n;
    lua_rawgeti(L, list, (lua_Integer)(k + 1));
    jc_tape_write_lua(L, t, -1, JC_SCHEMA_MAX_NEST, segs, &depth, &budget);
    lua_pop(L, 1);
    if (r != NULL) r[k] = root;
  }
  if (r != NULL) {
    for (k = 0; k < cnt; k++) {
      long budget = 0x7fffffffL;
      h[2 * k] = jc_tv_hash(t, r[k], &budget);
      h[2 * k + 1] = k;
    }
    qsort(h, cnt, 2 * sizeof(jc_u64), jc_hash_cmp);
    *roots = r;
    *hash = h;
  }
  *out = t;
}

static jc_node **jc_compile_list(jc_cctx *c, const jc_node *parent,
                                 const char *kw, size_t *count, int nonempty) {
  lua_State *L = c->L;
  const char *path = parent->path;
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
    list[i] = jc_compile_sub(c, lua_gettop(L), parent, kw, NULL, 0, (long)i);
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
      n->required[i].name_ref = jc_keep(c);
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
      n->props_sorted[k].name = lua_tolstring(L, -1, &len);  /* ...and by keep */
      n->props_sorted[k].name_ref = jc_keep(c);
      n->props_sorted[k].node = jc_compile_sub(c, lua_gettop(L), n,
                                               "properties", name, len, -1);
      k++;
      lua_pop(L, 1);
    }
    if (n->nprops > 1)
      qsort(n->props_sorted, n->nprops, sizeof(jc_prop), jc_prop_cmp);
    for (j = 0; j < n->nprops; j++) n->props_sorted[j].sidx = (long)j;
    lua_createtable(L, 0, (int)n->nprops);
    for (j = 0; j < n->nprops; j++) {
      lua_rawgeti(L, c->keep, n->props_sorted[j].name_ref);
      lua_pushinteger(L, (lua_Integer)(j + 1));
      lua_rawset(L, -3);
    }
    n->props_set = jc_keep(c);
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
  for (i = 0; i < n->nrequired; i++) {
    const jc_prop *p = jc_find_prop(n, n->required[i].name,
                                    n->required[i].len);
    n->required[i].sidx = p != NULL ? p->sidx : -1;
  }

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
      n->pprops[k].node = jc_compile_sub(c, lua_gettop(L), n,
                                         "patternProperties", src, len, -1);
      k++;
      lua_pop(L, 1);
    }
    if (n->npprops > 1)
      qsort(n->pprops, n->npprops, sizeof(jc_patprop), jc_patprop_cmp);
  }
  lua_pop(L, 1);

  if (jc_getkw(L, sidx, "additionalProperties") != LUA_TNIL) {
    n->addl = jc_compile_sub(c, lua_gettop(L), n, "additionalProperties",
                             NULL, 0, -1);
    if (n->addl->boolean == 1) {   /* 'true' checks nothing */
      n->addl = NULL;
      n->addl_true = 1;
    }
  }
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
  if (c->draft >= JC_D2020 && jc_getkw(L, sidx, "prefixItems") != LUA_TNIL)
    n->prefix = jc_compile_list(c, n, "prefixItems", &n->nprefix, 1);
  else if (c->draft >= JC_D2020)
    lua_pop(L, 1);
  if (jc_getkw(L, sidx, "items") != LUA_TNIL) {
    if (n->prefix == NULL && lua_type(L, -1) == LUA_TTABLE &&
        jc_is_array(L, lua_gettop(L))) {
      n->prefix = jc_compile_list(c, n, "items", &n->nprefix, 0);
      tuple = 1;
    } else {
      n->items = jc_compile_sub(c, lua_gettop(L), n, "items", NULL, 0, -1);
      lua_pop(L, 1);
    }
  } else {
    lua_pop(L, 1);
  }
  if (tuple) {
    if (jc_getkw(L, sidx, "additionalItems") != LUA_TNIL)
      n->items = jc_compile_sub(c, lua_gettop(L), n, "additionalItems",
                                NULL, 0, -1);
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
    n->format = jc_format_id(f);
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
static void jc_push_unpercent(jc_cctx *c, const char *path, const char *kw,
                              const char *s, size_t len) {
  luaL_Buffer b;
  size_t i;
  luaL_buffinit(c->L, &b);
  for (i = 0; i < len; i++) {
    if (s[i] == '%') {
      int v = 0, k;
      if (i + 2 >= len)
        jc_schema_error(c->L, path, kw, "bad percent-encoding");
      for (k = 1; k <= 2; k++) {
        char h = s[i + (size_t)k];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= h - '0';
        else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
        else jc_schema_error(c->L, path, kw, "bad percent-encoding");
      }
      luaL_addchar(&b, (char)v);
      i += 2;
    } else {
      luaL_addchar(&b, s[i]);
    }
  }
  luaL_pushresult(&b);
}

/* Keywords whose values are subschemas: one schema, an array of schemas,
** an object of schemas. Only these are searched for '$id' and anchors. */
static const char *const jc_kw_single[] = {
  "additionalProperties", "additionalItems", "contains", "propertyNames",
  "not", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems",
  "contentSchema", "items", NULL
};
static const char *const jc_kw_list[] = {
  "allOf", "anyOf", "oneOf", "prefixItems", "items", NULL
};
static const char *const jc_kw_map[] = {
  "properties", "patternProperties", "$defs", "definitions",
  "dependentSchemas", "dependencies", NULL
};

/* Push "<a><sep><b>". [-0, +1, m] */
static void jc_push_join(lua_State *L, const char *a, size_t al, char sep,
                         const char *b, size_t bl) {
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  luaL_addlstring(&buf, a, al);
  luaL_addchar(&buf, sep);
  luaL_addlstring(&buf, b, bl);
  luaL_pushresult(&buf);
}

/* t[key] = value for t at 't', key and value at -2, -1. [-2, +0, m] */
static void jc_setpair(lua_State *L, int t) { lua_rawset(L, t); }

static void jc_index(jc_cctx *c, int idx, const char *base, size_t blen,
                     const char *ptr, size_t plen, int depth);

/* Index the child at the top under "<ptr>/<kw>[/<token>|/<index>]". */
static void jc_index_child(jc_cctx *c, const char *base, size_t blen,
                           const char *ptr, size_t plen, const char *kw,
                           const char *token, size_t toklen, long index,
                           int depth) {
  lua_State *L = c->L;
  luaL_Buffer b;
  size_t cl;
  const char *cp;
  int child = lua_gettop(L);
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, ptr, plen);
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
  cp = lua_tolstring(L, -1, &cl);
  jc_index(c, child, base, blen, cp, cl, depth + 1);
  lua_pop(L, 1);
}

/*
** Index the schema at 'idx' for references (RFC 3986 base URIs): records
** its base URI (baseof) and absolute location "<base>#<pointer>" (loc),
** registers '$id' resources (reg), '$anchor', '$dynamicAnchor' and
** draft-07 "#name" ids (anchors, dyns), then descends into the subschema
** keywords. 'base'/'ptr': base URI and pointer inside the current
** resource. Draft 4/7: a '$id' next to '$ref' is ignored. [-0, +0, e]
*/
static void jc_index(jc_cctx *c, int idx, const char *base, size_t blen,
                     const char *ptr, size_t plen, int depth) {
  lua_State *L = c->L;
  int top = lua_gettop(L), has_ref = 0, i, saved;
  if (lua_type(L, idx) != LUA_TTABLE || jc_is_array(L, idx)) return;
  idx = jc_absindex(L, idx);
  lua_pushvalue(L, idx);
  lua_rawget(L, c->loc);
  if (!lua_isnil(L, -1)) { lua_pop(L, 1); return; }
  lua_pop(L, 1);
  if (depth > JC_SCHEMA_MAX_NEST)
    jc_schema_error(L, ptr, NULL, "nested deeper than %d levels",
                    JC_SCHEMA_MAX_NEST);
  if (!lua_checkstack(L, 24)) luaL_error(L, "schema too deep (Lua stack)");
  saved = c->draft;
  if (jc_getkw(L, idx, "$schema") == LUA_TSTRING) {   /* its own dialect */
    int d = jc_draft_uri(lua_tostring(L, -1));
    if (d != 0) c->draft = d;
  }
  lua_pop(L, 1);
  if (c->draft <= JC_D7) {
    has_ref = jc_getkw(L, idx, "$ref") == LUA_TSTRING;
    lua_pop(L, 1);
  }
  if (has_ref) lua_pushnil(L);
  else jc_getkw(L, idx, c->draft == JC_D4 ? "id" : "$id");
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t il, rl;
    const char *id = lua_tolstring(L, -1, &il), *r, *hash;
    jc_uri_resolve(L, base, blen, id, il);
    r = lua_tolstring(L, -1, &rl);
    hash = (const char *)memchr(r, '#', rl);
    if (hash != NULL && hash + 1 < r + rl) {   /* "#name": an anchor */
      lua_pushvalue(L, -1);
      lua_pushvalue(L, idx);
      jc_setpair(L, c->anchors);
    }
    lua_pushlstring(L, r, hash != NULL ? (size_t)(hash - r) : rl);
    if (hash == NULL || hash + 1 == r + rl || hash != r) {
      size_t docl;
      const char *doc = lua_tolstring(L, -1, &docl);
      if (!(blen == docl && memcmp(doc, base, blen) == 0) ||
          hash == NULL || hash + 1 == r + rl) {
        lua_pushvalue(L, -1);
        lua_rawget(L, c->reg);
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          lua_pushvalue(L, -1);
          lua_pushvalue(L, idx);
          jc_setpair(L, c->reg);
        } else {
          lua_pop(L, 1);
        }
        base = lua_tolstring(L, -1, &blen);   /* stays on the stack */
        ptr = "";
        plen = 0;
      }
    }
  } else {
    lua_pop(L, 1);
  }
  lua_pushvalue(L, idx);
  lua_pushlstring(L, base, blen);
  jc_setpair(L, c->baseof);
  lua_pushvalue(L, idx);
  jc_push_join(L, base, blen, '#', ptr, plen);
  jc_setpair(L, c->loc);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, c->draft);
  jc_setpair(L, c->draftof);
  if (c->draft >= JC_D2019) {
    static const char *const akws[] = { "$anchor", "$dynamicAnchor" };
    for (i = 0; i < (c->draft >= JC_D2020 ? 2 : 1); i++) {
      if (jc_getkw(L, idx, akws[i]) == LUA_TSTRING) {
        size_t nl;
        const char *name = lua_tolstring(L, -1, &nl);
        jc_push_join(L, base, blen, '#', name, nl);
        lua_pushvalue(L, idx);
        jc_setpair(L, c->anchors);
        if (i == 1) {
          lua_pushlstring(L, base, blen);
          lua_rawget(L, c->dyns);
          if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushlstring(L, base, blen);
            lua_pushvalue(L, -2);
            jc_setpair(L, c->dyns);
          }
          lua_pushvalue(L, -2);
          lua_pushvalue(L, idx);
          jc_setpair(L, lua_gettop(L) - 2);
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
    }
  }
  for (i = 0; jc_kw_single[i] != NULL; i++) {
    if (jc_getkw(L, idx, jc_kw_single[i]) == LUA_TTABLE)
      jc_index_child(c, base, blen, ptr, plen, jc_kw_single[i], NULL, 0, -1,
                     depth);
    lua_pop(L, 1);
  }
  for (i = 0; jc_kw_list[i] != NULL; i++) {
    if (jc_getkw(L, idx, jc_kw_list[i]) == LUA_TTABLE &&
        jc_is_array(L, lua_gettop(L))) {
      int t = lua_gettop(L);
      size_t n = (size_t)jc_rawlen(L, t), k;
      for (k = 0; k < n; k++) {
        lua_rawgeti(L, t, (lua_Integer)(k + 1));
        jc_index_child(c, base, blen, ptr, plen, jc_kw_list[i], NULL, 0,
                       (long)k, depth);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  for (i = 0; jc_kw_map[i] != NULL; i++) {
    if (jc_getkw(L, idx, jc_kw_map[i]) == LUA_TTABLE &&
        !jc_is_array(L, lua_gettop(L))) {
      int t = lua_gettop(L);
      lua_pushnil(L);
      while (lua_next(L, t) != 0) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
          size_t kl;
          const char *key = lua_tolstring(L, -2, &kl);
          jc_index_child(c, base, blen, ptr, plen, jc_kw_map[i], key, kl, -1,
                         depth);
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  c->draft = saved;
  lua_settop(L, top);
}

/* The schema pointer to show for location 'loc' ("<base>#<ptr>"): the
** pointer alone inside the root resource, else the whole location. */
static const char *jc_show_path(jc_cctx *c, const char *loc) {
  size_t bl = strlen(c->v->base), len;
  if (strncmp(loc, c->v->base, bl) == 0 && loc[bl] == '#') {
    lua_pushstring(c->L, loc + bl + 1);
    return jc_keep_string(c, &len);
  }
  return loc;
}

/* Fetch document 'doc' through the loader into reg and index it; pushes
** it. Raises a schema error when there is no loader or it fails: it
** raised ("the loader failed: <message>" for a string or number, "the
** loader raised a <type> value" otherwise), returned nil ("the loader found
** nothing", then ": <message>" when its second result is a string), a
** string, or another non-schema value ("the loader returned a <type>,
** expected ..."). No __tostring is called: a value that is neither a
** string nor a number is named by its type only. */
static void jc_load(jc_cctx *c, const char *path, const char *kw,
                    const char *doc, size_t dl, const char *ref) {
  lua_State *L = c->L;
  int t;
  if (c->loader == 0)
    jc_schema_error(L, path, kw,
                    "cannot resolve \"%s\": \"%s\" is not in this schema "
                    "and no loader was given", ref, doc);
  lua_pushvalue(L, c->loader);
  lua_pushlstring(L, doc, dl);
  if (lua_pcall(L, 1, 2, 0) != 0) {
    if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER)
      jc_schema_error(L, path, kw,
                      "cannot resolve \"%s\": the loader failed: %s", ref,
                      lua_tostring(L, -1));
    jc_schema_error(L, path, kw,
                    "cannot resolve \"%s\": the loader raised a %s value",
                    ref, luaL_typename(L, -1));
  }
  t = lua_type(L, -2);
  if (t == LUA_TSTRING)
    jc_schema_error(L, path, kw, "cannot resolve \"%s\": the loader returned "
                    "a string; it must return the schema decoded (a table)",
                    ref);
  if (t == LUA_TNIL)
    jc_schema_error(L, path, kw, "cannot resolve \"%s\": the loader found "
                    "nothing%s%s", ref,
                    lua_type(L, -1) == LUA_TSTRING ? ": " : "",
                    lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "");
  if (t != LUA_TTABLE && t != LUA_TBOOLEAN)
    jc_schema_error(L, path, kw, "cannot resolve \"%s\": the loader returned "
                    "a %s, expected a schema table or nil, message", ref,
                    luaL_typename(L, -2));
  lua_pop(L, 1);
  lua_pushlstring(L, doc, dl);
  lua_pushvalue(L, -2);
  jc_setpair(L, c->reg);
  lua_pushvalue(L, -1);
  jc_keep(c);
  jc_index(c, lua_gettop(L), doc, dl, "", 0, 0);
}

/*
** Resolve reference 'ref' (keyword 'kw' of 'n') against n's base URI:
** pushes the target schema and returns its location; 'plain' is set when
** the fragment is a plain name (an anchor). Remote documents come from the
** loader. Raises when it points nowhere.
*/
static const char *jc_find_ref(jc_cctx *c, jc_node *n, const char *kw,
                               const char *ref, size_t reflen, int *plain) {
  lua_State *L = c->L;
  const char *abs, *hash, *frag, *p, *end;
  size_t al, fl, dl;
  int doc;
  jc_uri_resolve(L, n->base, strlen(n->base), ref, reflen);
  abs = lua_tolstring(L, -1, &al);
  jc_keep(c);   /* keep the string: 'abs' stays valid */
  hash = (const char *)memchr(abs, '#', al);
  dl = hash != NULL ? (size_t)(hash - abs) : al;
  lua_pushlstring(L, abs, dl);
  lua_rawget(L, c->reg);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    jc_load(c, n->path, kw, abs, dl, ref);
  }
  doc = lua_gettop(L);
  *plain = 0;
  if (hash == NULL || hash + 1 == abs + al) return abs;
  jc_push_unpercent(c, n->path, kw, hash + 1, al - dl - 1);
  frag = lua_tolstring(L, -1, &fl);
  if (frag[0] != '/') {   /* plain name */
    *plain = 1;
    lua_pushlstring(L, abs, al);
    lua_rawget(L, c->anchors);
    if (lua_isnil(L, -1))
      jc_schema_error(L, n->path, kw, "cannot resolve \"%s\": no anchor \"%s\"",
                      ref, frag);
    lua_replace(L, doc);
    lua_settop(L, doc);
    return abs;
  }
  lua_pushvalue(L, doc);
  p = frag;
  end = frag + fl;
  while (p < end) {
    const char *q = p + 1, *s;
    luaL_Buffer b;
    int cur = lua_gettop(L);
    while (q < end && *q != '/') q++;
    luaL_buffinit(L, &b);
    for (s = p + 1; s < q; s++) {
      if (*s == '~') {
        if (s + 1 < q && s[1] == '0') luaL_addchar(&b, '~');
        else if (s + 1 < q && s[1] == '1') luaL_addchar(&b, '/');
        else
          jc_schema_error(L, n->path, kw, "bad JSON Pointer escape in \"%s\"",
                          ref);
        s++;
      } else {
        luaL_addchar(&b, *s);
      }
    }
    luaL_pushresult(&b);
    if (lua_type(L, cur) != LUA_TTABLE)
      jc_schema_error(L, n->path, kw, "cannot resolve \"%s\"", ref);
    if (jc_is_array(L, cur)) {
      size_t tl, k;
      const char *tok = lua_tolstring(L, -1, &tl);
      lua_Integer ix = 0;
      if (tl == 0 || (tl > 1 && tok[0] == '0') || tl > 9)
        jc_schema_error(L, n->path, kw, "cannot resolve \"%s\"", ref);
      for (k = 0; k < tl; k++) {
        if (tok[k] < '0' || tok[k] > '9')
          jc_schema_error(L, n->path, kw, "cannot resolve \"%s\"", ref);
        ix = ix * 10 + (tok[k] - '0');
      }
      lua_pop(L, 1);
      lua_rawgeti(L, cur, ix + 1);
    } else {
      lua_rawget(L, cur);
    }
    if (lua_isnil(L, -1))
      jc_schema_error(L, n->path, kw, "cannot resolve \"%s\"", ref);
    lua_replace(L, cur);
    p = q;
  }
  /* a location not reached by the index (inside an unknown keyword) */
  lua_pushvalue(L, -1);
  lua_rawget(L, c->loc);
  if (lua_isnil(L, -1)) {
    const char *db;
    size_t dbl;
    lua_pushvalue(L, doc);
    lua_rawget(L, c->baseof);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); lua_pushlstring(L, abs, dl); }
    db = lua_tolstring(L, -1, &dbl);
    jc_index(c, lua_gettop(L) - 2, db, dbl, frag, fl, 0);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_replace(L, doc);
  lua_settop(L, doc);
  return abs;
}

/* Compile the target of reference 'ref' (keyword 'kw' of 'n'). For
** '$dynamicRef' ('dyn' set) also records the anchor name when the target
** is a '$dynamicAnchor' of that name (the dynamic case). */
static jc_node *jc_compile_ref(jc_cctx *c, jc_node *n, const char *kw,
                               const char *ref, size_t reflen, int dyn) {
  lua_State *L = c->L;
  int plain;
  const char *loc, *path;
  size_t len;
  jc_node *target;
  jc_find_ref(c, n, kw, ref, reflen, &plain);
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_pushvalue(L, -1);
    lua_rawget(L, c->loc);
    loc = lua_isnil(L, -1) ? NULL : lua_tostring(L, -1);
    lua_pop(L, 1);   /* the string stays in the loc table */
  } else {
    loc = NULL;
  }
  if (loc == NULL) {
    lua_pushstring(L, ref);
    loc = jc_keep_string(c, &len);
  }
  path = jc_show_path(c, loc);
  target = jc_compile_node(c, lua_gettop(L), path, loc, n->base);
  if (dyn && plain && lua_type(L, -1) == LUA_TTABLE) {
    const char *hash = strchr(ref, '#');
    if (jc_getkw(L, lua_gettop(L), "$dynamicAnchor") == LUA_TSTRING &&
        hash != NULL && strcmp(lua_tostring(L, -1), hash + 1) == 0) {
      n->dyn_name = jc_keep_string(c, &len);
      c->v->dynamic = 1;
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return target;
}

/* The resource of base URI 'base', created (with its dynamic anchors
** compiled) on first use. */
static jc_res *jc_get_res(jc_cctx *c, const char *base) {
  lua_State *L = c->L;
  jc_res *r;
  size_t n = 0, k = 0, len;
  int t;
  lua_pushstring(L, base);
  lua_rawget(L, c->resof);
  if (!lua_isnil(L, -1)) {
    r = (jc_res *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    return r;
  }
  lua_pop(L, 1);
  r = (jc_res *)jc_keep_block(c, 1, sizeof(jc_res));
  r->uri = base;
  lua_pushstring(L, base);
  lua_pushlightuserdata(L, r);
  jc_setpair(L, c->resof);
  lua_pushstring(L, base);
  lua_rawget(L, c->dyns);
  if (lua_isnil(L, -1)) { lua_pop(L, 1); return r; }
  t = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t) != 0) { n++; lua_pop(L, 1); }
  r->dyn_names = (const char **)jc_keep_block(c, n, sizeof(char *));
  r->dyn_nodes = (jc_node **)jc_keep_block(c, n, sizeof(jc_node *));
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    const char *loc;
    lua_pushvalue(L, -2);
    r->dyn_names[k] = jc_keep_string(c, &len);
    lua_pushvalue(L, -1);
    lua_rawget(L, c->loc);
    loc = lua_tostring(L, -1);
    lua_pop(L, 1);
    r->dyn_nodes[k] = jc_compile_node(c, lua_gettop(L), jc_show_path(c, loc),
                                      loc, base);
    k++;
    r->ndyn = k;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return r;
}

/* dependentRequired, dependentSchemas (2019+), dependencies (draft 4/7). */
static void jc_compile_deps(jc_cctx *c, int sidx, jc_node *n) {
  lua_State *L = c->L;
  static const char *const kws[] = { "dependentRequired", "dependentSchemas",
                                     "dependencies" };
  size_t total = 0, k = 0, len;
  int i;
  for (i = 0; i < 3; i++) {
    if (jc_getkw(L, sidx, kws[i]) != LUA_TNIL) {
      int t = lua_gettop(L);
      if (lua_type(L, t) != LUA_TTABLE || jc_is_array(L, t))
        jc_schema_error(L, n->path, kws[i], "must be an object");
      lua_pushnil(L);
      while (lua_next(L, t) != 0) { total++; lua_pop(L, 1); }
    }
    lua_pop(L, 1);
  }
  if (total == 0) return;
  n->deps = (jc_dep *)jc_keep_block(c, total, sizeof(jc_dep));
  for (i = 0; i < 3; i++) {
    int t;
    if (jc_getkw(L, sidx, kws[i]) == LUA_TNIL) { lua_pop(L, 1); continue; }
    t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      jc_dep *d = &n->deps[k];
      const char *name;
      if (lua_type(L, -2) != LUA_TSTRING)
        jc_schema_error(L, n->path, kws[i], "keys must be strings");
      lua_pushvalue(L, -2);
      name = jc_keep_string(c, &d->len);
      d->name = name;
      d->kw = kws[i];
      if (i == 0 || (i == 2 && jc_arraylike(L, lua_gettop(L)))) {
        size_t j;
        int a = lua_gettop(L);
        if (!jc_arraylike(L, a))
          jc_schema_error(L, n->path, kws[i], "\"%s\" must be an array of strings",
                          name);
        d->nreq = (size_t)jc_rawlen(L, a);
        d->req = (jc_prop *)jc_keep_block(c, d->nreq ? d->nreq : 1,
                                          sizeof(jc_prop));
        for (j = 0; j < d->nreq; j++) {
          lua_rawgeti(L, a, (lua_Integer)(j + 1));
          if (lua_type(L, -1) != LUA_TSTRING)
            jc_schema_error(L, n->path, kws[i],
                            "\"%s\" must be an array of strings", name);
          d->req[j].name = jc_keep_string(c, &d->req[j].len);
        }
      } else {
        d->node = jc_compile_sub(c, lua_gettop(L), n, kws[i], name, d->len, -1);
      }
      k++;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  n->ndeps = k;
  (void)len;
}

/* Compile the subschema at 'idx' whose schema pointer is 'path' and
** absolute location 'abs' (both kept); 'base' is the parent's base URI.
** Tables are compiled once (cache), which also ends cycles. */
static jc_node *jc_compile_node_in(jc_cctx *c, int idx, const char *path,
                                   const char *abs, const char *base);

/* jc_compile_node_in under the draft the schema was indexed with (a
** remote document or an embedded resource may declare another). */
static jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path,
                                const char *abs, const char *base) {
  lua_State *L = c->L;
  int saved = c->draft;
  jc_node *n;
  if (lua_type(L, idx) == LUA_TTABLE) {
    lua_pushvalue(L, idx);
    lua_rawget(L, c->draftof);
    if (lua_isnumber(L, -1)) c->draft = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  n = jc_compile_node_in(c, idx, path, abs, base);
  c->draft = saved;
  return n;
}

static jc_node *jc_compile_node_in(jc_cctx *c, int idx, const char *path,
                                   const char *abs, const char *base) {
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
    jc_schema_error(L, path, NULL, "expected an object or a boolean, got %s",
                    jc_jt_names[jc_json_type(L, idx)]);
  }
  if (++c->nest > JC_SCHEMA_MAX_NEST)
    jc_schema_error(L, path, NULL, "nested deeper than %d levels",
                    JC_SCHEMA_MAX_NEST);
  if (!lua_checkstack(L, 16)) luaL_error(L, "schema too deep (Lua stack)");

  n = (jc_node *)jc_newuserdata(L, sizeof(jc_node));
  memset(n, 0, sizeof *n);
  n->path = path;
  n->abs = abs;
  n->base = base;
  n->boolean = t == LUA_TBOOLEAN ? lua_toboolean(L, idx) : -1;
  n->min_props = n->max_props = n->min_items = n->max_items = ABSENT;
  n->min_len = n->max_len = ABSENT;
  n->min_contains = 1;
  n->max_contains = ABSENT;
  if (t == LUA_TTABLE) {
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -2);
    lua_rawset(L, c->cache);
  }
  lua_pushlightuserdata(L, n);
  lua_rawseti(L, c->nodes, ++c->nnodes);
  jc_keep(c);
  if (t == LUA_TBOOLEAN) { c->nest--; return n; }
  idx = jc_absindex(L, idx);
  lua_pushvalue(L, idx);
  lua_rawget(L, c->baseof);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    jc_index(c, idx, base, strlen(base), "", 0, 0);   /* not reached before */
    lua_pushvalue(L, idx);
    lua_rawget(L, c->baseof);
  }
  n->base = lua_tostring(L, -1);   /* kept by the baseof table... */
  jc_keep(c);                      /* ...and by keep */
  lua_pushvalue(L, idx);
  lua_rawget(L, c->loc);
  if (lua_isstring(L, -1)) n->abs = jc_keep_string(c, &len);
  else lua_pop(L, 1);
  n->res = jc_get_res(c, n->base);

  if (jc_getkw(L, idx, "$ref") != LUA_TNIL) {
    const char *ref;
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_schema_error(L, path, "$ref", "must be a string");
    ref = lua_tolstring(L, -1, &len);
    n->ref = jc_compile_ref(c, n, "$ref", ref, len, 0);
    if (c->draft <= JC_D7) {   /* draft 4/7: '$ref' ignores its siblings */
      lua_pop(L, 1);
      c->nest--;
      return n;
    }
  }
  lua_pop(L, 1);
  if (c->draft >= JC_D2020 && jc_getkw(L, idx, "$dynamicRef") != LUA_TNIL) {
    const char *ref;
    if (lua_type(L, -1) != LUA_TSTRING)
      jc_schema_error(L, path, "$dynamicRef", "must be a string");
    ref = lua_tolstring(L, -1, &len);
    n->dynref = jc_compile_ref(c, n, "$dynamicRef", ref, len, 1);
  }
  if (c->draft >= JC_D2020) lua_pop(L, 1);
  jc_compile_type(c, idx, n);
  if (jc_getkw(L, idx, "enum") != LUA_TNIL) {
    size_t k, cnt;
    int e = lua_gettop(L);
    if (!jc_arraylike(L, e))
      jc_schema_error(L, path, "enum", "must be an array");
    cnt = (size_t)jc_rawlen(L, e);
    for (k = 1; k <= cnt; k++) {
      lua_rawgeti(L, e, (lua_Integer)k);
      jc_schema_json(L, -1, path, "enum", JC_SCHEMA_MAX_NEST);
      if (lua_type(L, -1) == LUA_TTABLE) n->enum_tables = 1;
      lua_pop(L, 1);
    }
    jc_compile_tapes(c, e, cnt, &n->enum_tape, &n->enum_roots, &n->enum_hash);
    n->nenum = cnt;
    n->enum_ref = jc_keep(c);
  } else {
    lua_pop(L, 1);
  }
  if (c->draft >= JC_D7 && jc_getkw(L, idx, "const") != LUA_TNIL) {
    jc_schema_json(L, -1, path, "const", JC_SCHEMA_MAX_NEST);
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    jc_compile_tapes(c, lua_gettop(L), 1, &n->const_tape, NULL, NULL);
    lua_pop(L, 1);
    n->const_ref = jc_keep(c);
  }
  else if (c->draft >= JC_D7) lua_pop(L, 1);
  jc_compile_object_kws(c, idx, n);
  jc_compile_array_kws(c, idx, n);
  jc_compile_scalar_kws(c, idx, n);
  jc_compile_deps(c, idx, n);
  for (i = 0; i < 3; i++) {
    static const char *const kws[] = { "allOf", "anyOf", "oneOf" };
    jc_node ***dst[3];
    size_t *cnt[3];
    dst[0] = &n->allof; dst[1] = &n->anyof; dst[2] = &n->oneof;
    cnt[0] = &n->nallof; cnt[1] = &n->nanyof; cnt[2] = &n->noneof;
    if (jc_getkw(L, idx, kws[i]) != LUA_TNIL)
      *dst[i] = jc_compile_list(c, n, kws[i], cnt[i], 1);
    else
      lua_pop(L, 1);
  }
  {
    static const char *const kws[] = {
      "not", "if", "then", "else", "contains", "propertyNames",
      "unevaluatedProperties", "unevaluatedItems"
    };
    jc_node **dst[8];
    int mind[8] = { 4, 7, 7, 7, 7, 7, 2019, 2019 };
    dst[0] = &n->not_; dst[1] = &n->if_; dst[2] = &n->then_;
    dst[3] = &n->else_; dst[4] = &n->contains; dst[5] = &n->pnames;
    dst[6] = &n->uprops; dst[7] = &n->uitems;
    for (i = 0; i < 8; i++) {
      if (c->draft >= mind[i] && jc_getkw(L, idx, kws[i]) != LUA_TNIL)
        *dst[i] = jc_compile_sub(c, lua_gettop(L), n, kws[i], NULL, 0, -1);
      if (c->draft >= mind[i]) lua_pop(L, 1);
    }
  }
  if (n->if_ == NULL) n->then_ = n->else_ = NULL;
  if (c->draft >= JC_D2019 && n->contains != NULL) {
    jc_get_count(c, idx, path, "minContains", &n->min_contains);
    jc_get_count(c, idx, path, "maxContains", &n->max_contains);
  }
  if (c->novalidation) {   /* meta-schema without the validation vocabulary */
    size_t k;
    n->types = 0;
    n->enum_ref = n->const_ref = 0;
    n->nrequired = 0;
    n->min_props = n->max_props = n->min_items = n->max_items = ABSENT;
    n->min_len = n->max_len = ABSENT;
    n->unique = 0;
    n->pattern = NULL;
    for (k = 0; k < LIM_N; k++) n->lim[k].set = 0;
    for (k = 0; k < n->ndeps; k++) n->deps[k].nreq = 0;
    n->min_contains = 1;
    n->max_contains = ABSENT;
  }
  c->nest--;
  return n;
}

/* Reject in-place reference cycles ($ref/allOf/... back to the same node
** at the same instance location: validation would never end). */
static void jc_check_cycles(jc_cctx *c, jc_node *n) {
  jc_node *next[8];
  size_t i, k = 0;
  if (n->mark == 2 || n->boolean >= 0) return;
  if (n->mark == 1)
    jc_schema_error(c->L, n->path, NULL,
                    "reference cycle that never consumes input (validation "
                    "would not end)");
  n->mark = 1;
  if (!lua_checkstack(c->L, 4)) luaL_error(c->L, "schema too deep");
  next[k++] = n->ref; next[k++] = n->dynref; next[k++] = n->not_;
  next[k++] = n->if_; next[k++] = n->then_; next[k++] = n->else_;
  for (i = 0; i < k; i++) if (next[i] != NULL) jc_check_cycles(c, next[i]);
  for (i = 0; i < n->nallof; i++) jc_check_cycles(c, n->allof[i]);
  for (i = 0; i < n->nanyof; i++) jc_check_cycles(c, n->anyof[i]);
  for (i = 0; i < n->noneof; i++) jc_check_cycles(c, n->oneof[i]);
  for (i = 0; i < n->ndeps; i++)
    if (n->deps[i].node != NULL) jc_check_cycles(c, n->deps[i].node);
  n->mark = 2;
}

/* ===================================================================== */
/* Validator (on the tape)                                                 */
/* ===================================================================== */

/*
** The walk reads only the tape: no Lua API call on its hot path. Lua is
** used for what is rare: error items, the scratch stack and the memo
** table growing (userdata at fixed stack slots), uniqueItems' hash table.
**
** Work budget: every subschema evaluation costs one unit, a regex search
** one plus one per 16 subject bytes, and one that hits PCRE2's match
** limit JC_WORK_REGEX_LIMIT more. Past the budget the walk stops with a
** 'budget' error (err.kind budget_exceeded). Default: JC_WORK_BUDGET plus
** JC_WORK_PER_ENTRY per tape entry (about a second of work on a small
** reply, linear in a large one); compile's 'work_budget' option sets it.
**
** Memo: results of (subschema, tape entry) are remembered when the walk
** is quiet (anyOf, oneOf, not, if, contains, unevaluated*) or valid, so
** branches that re-evaluate the same subtree cost once: polynomial work
** for recursive schemas whose alternatives all recurse. Not used with
** $dynamicRef (the result depends on the dynamic scope).
*/

#ifndef JC_WORK_BUDGET
#define JC_WORK_BUDGET 20000000.0     /* work units, fixed part */
#endif
#ifndef JC_WORK_PER_ENTRY
#define JC_WORK_PER_ENTRY 16.0        /* work units per tape entry */
#endif
#ifndef JC_WORK_REGEX_LIMIT
#define JC_WORK_REGEX_LIMIT 100000.0  /* a regex search that hit the limit */
#endif
#ifndef JC_MEMO_MAX
#define JC_MEMO_MAX (1u << 22)        /* memo entries, at most */
#endif
#ifndef JC_UNIQUE_SMALL
#define JC_UNIQUE_SMALL 16            /* up to this many items: pairwise */
#endif
#ifndef JC_HASH_BUDGET
#define JC_HASH_BUDGET 4096L          /* entries hashed per item, at most */
#endif

typedef struct jc_memo {
  const jc_node *n;            /* NULL: empty */
  size_t i;
  int r;
} jc_memo;

typedef struct jc_vctx {
  lua_State *L;
  jc_validator *v;
  const jc_tape *t;
  int keep;            /* abs index of the keep table */
  int errs;            /* abs index of the errors list */
  int nerr;
  int max_errors;      /* errors kept, 0 = no bound */
  int truncated;       /* one more error was dropped: the walk unwinds */
  int first;           /* stop at the first error */
  int quiet;           /* > 0 inside anyOf/oneOf/not: record nothing */
  int abort;           /* 1 too deep, 2 work budget: unwind */
  int depth;           /* instance depth */
  int edepth;          /* nested subschema evaluations */
  int stop;            /* entries in the dynamic scope (v->scope) */
  int nvia;            /* entries in v->via; -1: not tracked */
  size_t cur;          /* tape entry being evaluated (error positions) */
  double work;         /* work units left */
  double budget;       /* the budget, for the message */
  int stk_slot;        /* stack slot of the scratch userdata */
  size_t *stk;
  size_t stk_n, stk_cap;
  int memo_slot;       /* stack slot of the memo userdata */
  jc_memo *memo;
  size_t memo_n, memo_cap;
  size_t loc_off;      /* line/column cache for error positions */
  unsigned long loc_line, loc_col;
} jc_vctx;

#define JC_STOP(c) ((c)->quiet || (c)->abort || (c)->truncated || \
                   ((c)->first && (c)->nerr > 0))

/* 'n' zeroed entries on the scratch stack; returns their offset (valid
** until popped with 'jc_stk_pop'; the stack may move: use offsets).
** [-0, +0, m] */
static size_t jc_stk_push(jc_vctx *c, size_t n) {
  size_t base = c->stk_n;
  if (n > c->stk_cap - c->stk_n) {
    size_t cap = c->stk_cap ? c->stk_cap : 256;
    size_t *ns;
    while (cap - c->stk_n < n) {
      if (cap > ((size_t)-1) / 4 / sizeof(size_t))
        luaL_error(c->L, "not enough memory");
      cap *= 2;
    }
    ns = (size_t *)jc_newuserdata(c->L, cap * sizeof(size_t));
    if (c->stk_n > 0) memcpy(ns, c->stk, c->stk_n * sizeof(size_t));
    lua_replace(c->L, c->stk_slot);
    c->stk = ns;
    c->stk_cap = cap;
  }
  memset(c->stk + base, 0, n * sizeof(size_t));
  c->stk_n += n;
  return base;
}
#define jc_stk_pop(c, base) ((c)->stk_n = (base))

static size_t jc_memo_pos(const jc_node *n, size_t i, size_t mask) {
  jc_u64 h = (jc_u64)(size_t)n * 0x9E3779B97F4A7C15ULL ^
             (jc_u64)i * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 29;
  return (size_t)h & mask;
}

/* The remembered result of 'n' on entry 'i', or -1. */
static int jc_memo_get(const jc_vctx *c, const jc_node *n, size_t i) {
  size_t mask, pos;
  if (c->memo_n == 0) return -1;
  mask = c->memo_cap - 1;
  pos = jc_memo_pos(n, i, mask);
  while (c->memo[pos].n != NULL) {
    if (c->memo[pos].n == n && c->memo[pos].i == i) return c->memo[pos].r;
    pos = (pos + 1) & mask;
  }
  return -1;
}

/* Remember 'r' for 'n' on entry 'i'. [-0, +0, m] */
static void jc_memo_put(jc_vctx *c, const jc_node *n, size_t i, int r) {
  size_t mask, pos;
  if (c->memo_n >= JC_MEMO_MAX) return;
  if ((c->memo_n + 1) * 2 > c->memo_cap) {
    size_t cap = c->memo_cap ? c->memo_cap * 2 : 1024, k;
    jc_memo *old = c->memo, *nm;
    nm = (jc_memo *)jc_newuserdata(c->L, cap * sizeof(jc_memo));
    memset(nm, 0, cap * sizeof(jc_memo));
    mask = cap - 1;
    for (k = 0; k < c->memo_cap; k++) {
      if (old[k].n == NULL) continue;
      pos = jc_memo_pos(old[k].n, old[k].i, mask);
      while (nm[pos].n != NULL) pos = (pos + 1) & mask;
      nm[pos] = old[k];
    }
    lua_replace(c->L, c->memo_slot);
    c->memo = nm;
    c->memo_cap = cap;
  }
  mask = c->memo_cap - 1;
  pos = jc_memo_pos(n, i, mask);
  while (c->memo[pos].n != NULL) {
    if (c->memo[pos].n == n && c->memo[pos].i == i) {
      c->memo[pos].r = r;
      return;
    }
    pos = (pos + 1) & mask;
  }
  c->memo[pos].n = n;
  c->memo[pos].i = i;
  c->memo[pos].r = r;
  c->memo_n++;
}

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

/* Add 'path' relative to 'base' (its suffix when 'base' is a prefix at a
** segment boundary; the whole path otherwise). */
static void jc_add_rel(luaL_Buffer *b, const char *path, const char *base) {
  size_t bl = strlen(base);
  if (strncmp(path, base, bl) == 0 && (path[bl] == '/' || path[bl] == '\0'))
    luaL_addstring(b, path + bl);
  else
    luaL_addstring(b, path);
}

/* Push the keyword location of 'kw' in 'n' as evaluation reached it,
** through the references followed ("/properties/a/$ref/type").
** [-0, +1, m] */
static void jc_push_kwloc(jc_vctx *c, const jc_node *n, const char *kw) {
  luaL_Buffer b;
  const char *base = "";
  int i;
  luaL_buffinit(c->L, &b);
  for (i = 0; i < c->nvia; i++) {
    const jc_via *w = &c->v->via[i];
    jc_add_rel(&b, w->from->path, base);
    luaL_addchar(&b, '/');
    luaL_addstring(&b, w->kw);
    base = w->to->path;
  }
  jc_add_rel(&b, n->path, base);
  if (kw != NULL) {
    luaL_addchar(&b, '/');
    luaL_addstring(&b, kw);
  }
  luaL_pushresult(&b);
}

/* Set offset, line and column of the current value on the item at the
** top when the tape was parsed from text. [-0, +0, m] */
static void jc_err_pos(jc_vctx *c) {
  lua_State *L = c->L;
  size_t off = c->t->v[c->cur].off, k;
  const unsigned char *s = (const unsigned char *)c->t->text;
  if (s == NULL || off == JC_NOOFF) return;
  if (off < c->loc_off) {
    c->loc_off = 0;
    c->loc_line = 1;
    c->loc_col = 1;
  }
  for (k = c->loc_off; k < off; k++) {
    if (s[k] == '\n') { c->loc_line++; c->loc_col = 1; }
    else if ((s[k] & 0xC0) != 0x80) c->loc_col++;
  }
  c->loc_off = off;
  lua_pushinteger(L, (lua_Integer)off);
  lua_setfield(L, -2, "offset");
  lua_pushinteger(L, (lua_Integer)c->loc_line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, (lua_Integer)c->loc_col);
  lua_setfield(L, -2, "column");
}

/*
** Start an error item: pushes the item table (pointer, keyword,
** schema_pointer, and offset/line/column of the value when it came from
** text) and the display location ("(root)" for ""), returns the latter.
** The caller may set extra fields on the item (at -2 then), pushes the
** message and calls 'jc_err_end'. [-0, +2, m]
*/
static const char *jc_err_begin(jc_vctx *c, const jc_node *n,
                                const char *kw) {
  lua_State *L = c->L;
  lua_createtable(L, 0, 9);
  jc_err_pos(c);
  jc_push_pointer(c);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "pointer");
  if (kw != NULL) lua_pushfstring(L, "%s/%s", n->path, kw);
  else lua_pushstring(L, n->path);
  lua_setfield(L, -3, "schema_pointer");
  if (kw != NULL) lua_pushfstring(L, "%s/%s", n->abs, kw);
  else lua_pushstring(L, n->abs);
  lua_setfield(L, -3, "absolute_schema_location");
  if (c->nvia >= 0) {
    jc_push_kwloc(c, n, kw);
    lua_setfield(L, -3, "keyword_location");
  }
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
  if (c->max_errors > 0 && c->nerr >= c->max_errors) {
    lua_pop(L, 1);      /* past max_errors: dropped, and the walk ends */
    c->truncated = 1;
    return;
  }
  if (c->nerr == 0) {   /* the errors list, made on the first error */
    lua_newtable(L);
    lua_replace(L, c->errs);
  }
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

/* The work budget ran out: recorded even when quiet, everything unwinds. */
static void jc_over(jc_vctx *c, const jc_node *n) {
  int q = c->quiet;
  char num[32];
  if (c->abort) return;
  c->quiet = 0;
  jc_err_begin(c, n, NULL);
  lua_pushliteral(c->L, "budget");
  lua_setfield(c->L, -3, "keyword");
  snprintf(num, sizeof num, "%.0f", c->budget);
  lua_pushfstring(c->L, "validation stopped at %s: the work budget of %s "
                  "units ran out", lua_tostring(c->L, -1), num);
  jc_err_end(c);
  c->quiet = q;
  c->abort = 2;
}

/* A regex search charged to the work budget. */
static int jc_match(jc_vctx *c, const jc_node *n, const jc_pattern *re,
                    const char *s, size_t len) {
  int rc;
  c->work -= 1.0 + (double)(len >> 4);
  rc = jc_pattern_match(re, c->v->matcher, s, len);
  if (rc == JC_PATTERN_LIMIT) c->work -= JC_WORK_REGEX_LIMIT;
  if (c->work < 0) jc_over(c, n);
  return rc;
}

static int jc_eval(jc_vctx *c, const jc_node *n, size_t i);

/* Report an 'enum' failure; the enum list is at the top. The message
** lists the first JC_ENUM_SHOW allowed values, then "... (N values)"; the
** item's 'allowed' field has them all. Kept out of 'jc_eval' so its frame
** stays small (luaL_Buffer is large). */
static JC_NOINLINE void jc_report_enum(jc_vctx *c, const jc_node *n,
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
  jc_tv_push_render(L, c->t, c->cur);
  lua_pushfstring(L, "%s %s is not one of ", where, lua_tostring(L, -1));
  lua_remove(L, -2);
  luaL_buffinit(L, &b);
  for (i = 1; i <= cnt && i <= JC_ENUM_SHOW; i++) {
    if (i > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, list, (lua_Integer)i);
    jc_push_render(L, -1);
    lua_remove(L, -2);
    luaL_addvalue(&b);
  }
  if (cnt > JC_ENUM_SHOW) {
    char num[32];
    snprintf(num, sizeof num, "%lu", (unsigned long)cnt);
    luaL_addstring(&b, ", ... (");
    luaL_addstring(&b, num);
    luaL_addstring(&b, " values)");
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

/* Evaluate 'n' on the child entry 'i' (member 'key' or array 'index'),
** one level deeper. */
static int jc_eval_child(jc_vctx *c, const jc_node *n, size_t i,
                         const char *key, size_t len, size_t index) {
  int ok;
  jc_seg *s;
  if (c->depth >= c->v->max_depth) {
    size_t saved = c->cur;
    s = &c->v->segs[c->depth];
    s->key = key; s->len = len; s->index = index;
    c->depth++;
    c->cur = i;
    jc_too_deep(c, n, "value", c->v->max_depth);
    c->cur = saved;
    c->depth--;
    return 0;
  }
  s = &c->v->segs[c->depth];
  s->key = key; s->len = len; s->index = index;
  c->depth++;
  ok = jc_eval(c, n, i);
  c->depth--;
  return ok;
}

/* A numeric bound as a tape number. */
static void jc_limit_tv(const jc_limit *lim, jc_tv *out) {
  memset(out, 0, sizeof *out);
  out->kind = JT_NUMBER;
#if JC_HAVE_INTEGER
  if (lim->isint) {
    out->flags = JC_TF_INT;
    out->u.i = (long long)lim->i;
    return;
  }
#endif
  out->u.d = (double)lim->d;
}

/* Report a numeric bound failure. */
static void jc_report_limit(jc_vctx *c, const jc_node *n, const char *kw,
                            const char *text, const jc_limit *lim) {
  lua_State *L = c->L;
  const char *where;
  char num[64];
  if (c->quiet) return;
  where = jc_err_begin(c, n, kw);
  jc_push_limit(L, lim);
  lua_setfield(L, -3, "limit");
  jc_tv_fmt_number(&c->t->v[c->cur], num, sizeof num);
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

static int jc_eval_number(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tv *x = &c->t->v[i];
  jc_tv lim;
  int ok = 1;
  static const char *const kws[4] = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"
  };
  static const char *const texts[4] = {
    "is less than minimum", "is greater than maximum",
    "is not greater than exclusive minimum",
    "is not less than exclusive maximum"
  };
  int k;
  for (k = LIM_MIN; k <= LIM_XMAX; k++) {
    int cmp, fail;
    if (!n->lim[k].set) continue;
    jc_limit_tv(&n->lim[k], &lim);
    cmp = jc_tv_numcmp(x, &lim);    /* exact: int64 and digits as they are */
    fail = k == LIM_MIN ? cmp < 0 : k == LIM_MAX ? cmp > 0
         : k == LIM_XMIN ? cmp <= 0 : cmp >= 0;
    if (fail) {
      ok = 0;
      jc_report_limit(c, n, kws[k], texts[k], &n->lim[k]);
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->lim[LIM_MULT].set) {
    jc_limit_tv(&n->lim[LIM_MULT], &lim);
    if (!jc_tv_multiple(x, &lim)) {
      ok = 0;
      jc_report_limit(c, n, "multipleOf", "is not a multiple of",
                      &n->lim[LIM_MULT]);
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

static int jc_eval_string(jc_vctx *c, const jc_node *n, size_t i) {
  lua_State *L = c->L;
  const jc_tv *x = &c->t->v[i];
  const char *s = x->s;
  size_t len = x->u.len, chars = 0, k;
  int ok = 1;
  if (n->min_len != ABSENT || n->max_len != ABSENT) {
    /* code points: bytes that are not UTF-8 continuation bytes */
    for (k = 0; k < len; k++)
      if (((unsigned char)s[k] & 0xC0) != 0x80) chars++;
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
    int rc = jc_match(c, n, n->pattern, s, len);
    if (c->abort) return 0;
    if (rc != JC_PATTERN_MATCH) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "pattern");
        lua_pushstring(L, n->pattern_src);
        lua_setfield(L, -3, "pattern");
        if (rc == JC_PATTERN_NOMATCH) {
          jc_tv_push_render(L, c->t, i);
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
  if (n->format != JC_FMT_NONE && c->v->format_assertion) {
    int valid;
    if (n->format == JC_FMT_REGEX) {
      char msg[8];
      size_t off;
      c->work -= 1.0 + (double)len;
      valid = jc_pattern_compile(L, s, len, msg, sizeof msg, &off) != NULL;
      lua_pop(L, 1);
    } else {
      valid = jc_format_check(n->format, s, len);
    }
    if (!valid) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "format");
        jc_tv_push_render(L, c->t, i);
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

/* Find the first duplicate pair of the items of the array at entry 'a'
** (offset 'items' on the scratch stack holds their entries), as a
** pairwise scan would: the smallest 'i' whose value occurs again, then
** the smallest 'j' > 'i' with it (0-based). Returns 1 if found. The slot
** table is a userdata popped before return. [-0, +0, m] */
typedef struct jc_uslot {
  jc_u64 h;
  size_t item;                     /* 1-based; 0 = empty */
} jc_uslot;

static int jc_find_duplicate(jc_vctx *c, size_t items, size_t len,
                             size_t *di, size_t *dj) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  size_t i, j, cap = 4, mask, best_i = 0, best_j = 0;
  jc_uslot *slots;
  if (len <= JC_UNIQUE_SMALL) {
    for (i = 0; i + 1 < len; i++)
      for (j = i + 1; j < len; j++)
        if (jc_tv_equal(t, c->stk[items + i], t, c->stk[items + j])) {
          *di = i;
          *dj = j;
          return 1;
        }
    return 0;
  }
  while (cap < len * 2) {
    if (cap > ((size_t)-1) / 2 / sizeof(jc_uslot))
      luaL_error(L, "not enough memory");
    cap *= 2;
  }
  mask = cap - 1;
  slots = (jc_uslot *)jc_newuserdata(L, cap * sizeof(jc_uslot));
  memset(slots, 0, cap * sizeof(jc_uslot));
  for (j = 0; j < len; j++) {
    jc_u64 h;
    size_t pos, rep = 0, e = c->stk[items + j];
    long budget = JC_HASH_BUDGET;
    h = jc_tv_hash(t, e, &budget);
    if (budget < 0)
      h = (jc_u64)t->v[jc_tv_deref(t, e)].kind * 0x9E3779B97F4A7C15ULL;
    c->work -= (double)(JC_HASH_BUDGET - (budget < 0 ? 0 : budget));
    pos = (size_t)(h & (jc_u64)mask);
    while (slots[pos].item != 0) {
      if (slots[pos].h == h &&
          jc_tv_equal(t, c->stk[items + slots[pos].item - 1], t, e)) {
        rep = slots[pos].item;
        break;
      }
      pos = (pos + 1) & mask;
    }
    if (rep == 0) {
      slots[pos].h = h;
      slots[pos].item = j + 1;
    } else if (best_i == 0 || rep < best_i) {
      best_i = rep;
      best_j = j + 1;
      if (best_i == 1) break;   /* no smaller first item possible */
    }
  }
  lua_pop(L, 1);
  if (best_i == 0) return 0;
  *di = best_i - 1;
  *dj = best_j - 1;
  return 1;
}

static int jc_eval_array(jc_vctx *c, const jc_node *n, size_t i) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t len = x->n, k, j, end = x->u.end;
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
    size_t items = jc_stk_push(c, len), a, b;
    int dup;
    for (j = i + 1, k = 0; j < end; j = jc_tv_next(t, j), k++)
      c->stk[items + k] = j;
    dup = jc_find_duplicate(c, items, len, &a, &b);
    jc_stk_pop(c, items);
    if (dup) {
      ok = 0;
      if (!c->quiet) {
        const char *where = jc_err_begin(c, n, "uniqueItems");
        char sa[32], sb[32];
        snprintf(sa, sizeof sa, "%lu", (unsigned long)a);
        snprintf(sb, sizeof sb, "%lu", (unsigned long)b);
        lua_pushfstring(L, "%s has duplicate items at %s and %s", where, sa,
                        sb);
        jc_err_end(c);
      }
      if (JC_STOP(c)) return 0;
    }
  }
  for (j = i + 1, k = 0; j < end && (k < n->nprefix || n->items != NULL);
       j = jc_tv_next(t, j), k++) {
    const jc_node *sub = k < n->nprefix ? n->prefix[k] : n->items;
    if (!jc_eval_child(c, sub, j, NULL, 0, k)) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  return ok;
}

/* The value entry of member 'name' of the object at entry 'i', or 0. */
static size_t jc_obj_find(const jc_tape *t, size_t i, const char *name,
                          size_t len) {
  size_t j, end = t->v[i].u.end;
  for (j = i + 1; j < end; j = jc_tv_next(t, j + 1))
    if (t->v[j].u.len == len && memcmp(t->v[j].s, name, len) == 0)
      return j + 1;
  return 0;
}

typedef struct jc_key {
  const char *s;
  size_t len;
  size_t e;            /* tape entry of the member name */
} jc_key;

static int jc_key_cmp(const void *x, const void *y) {
  const jc_key *a = (const jc_key *)x, *b = (const jc_key *)y;
  return jc_cmp_bytes(a->s, a->len, b->s, b->len);
}

/* Report a forbidden member or item (a 'false' subschema under 'kw'),
** with the child's segment pushed; 'e' is the child's entry. */
static void jc_report_extra(jc_vctx *c, const jc_node *n, const char *kw,
                            const char *key, size_t klen, size_t index,
                            size_t e) {
  lua_State *L = c->L;
  jc_seg *sg;
  size_t saved = c->cur;
  if (c->quiet) return;
  sg = &c->v->segs[c->depth];
  sg->key = key; sg->len = klen; sg->index = index;
  c->depth++;
  c->cur = e;
  jc_err_begin(c, n, kw);
  if (key != NULL) {
    lua_pushlstring(L, key, klen);
    lua_setfield(L, -3, "property");
  }
  lua_getfield(L, -2, "pointer");
  lua_pushfstring(L, key != NULL ? "extra field %s is not allowed"
                                 : "extra item %s is not allowed",
                  lua_tostring(L, -1));
  lua_remove(L, -2);
  jc_err_end(c);
  c->cur = saved;
  c->depth--;
}

/* patternProperties and additionalProperties of 'n' on member name entry
** 'k' (value k + 1). Returns 1 valid, 0 invalid. */
static int jc_eval_member(jc_vctx *c, const jc_node *n, size_t k) {
  const jc_tv *key = &c->t->v[k];
  size_t p;
  int ok = 1, matched = 0, r;
  for (p = 0; p < n->npprops; p++) {
    int rc = jc_match(c, n, n->pprops[p].re, key->s, key->u.len);
    if (c->abort) return 0;
    if (rc == JC_PATTERN_MATCH) {
      matched = 1;
      r = jc_eval_child(c, n->pprops[p].node, k + 1, key->s, key->u.len, 0);
    } else if (rc != JC_PATTERN_NOMATCH) {
      r = 0;
      if (!c->quiet) {
        jc_seg *s = &c->v->segs[c->depth];
        size_t saved = c->cur;
        s->key = key->s; s->len = key->u.len;
        c->depth++;
        c->cur = k + 1;
        jc_report(c, n, "patternProperties",
                  " could not be checked against pattern %s: %s",
                  n->pprops[p].src,
                  rc == JC_PATTERN_LIMIT ? "the match limit was hit"
                                         : "invalid UTF-8");
        c->cur = saved;
        c->depth--;
      }
    } else {
      continue;
    }
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  if (!matched && n->addl != NULL &&
      jc_find_prop(n, key->s, key->u.len) == NULL) {
    if (n->addl->boolean == 0) {
      r = 0;
      if (!c->quiet) {
        jc_seg *s = &c->v->segs[c->depth];
        size_t saved = c->cur;
        lua_State *L = c->L;
        s->key = key->s; s->len = key->u.len;
        c->depth++;
        c->cur = k + 1;
        jc_err_begin(c, n, "additionalProperties");
        lua_pushlstring(L, key->s, key->u.len);
        lua_setfield(L, -3, "property");
        lua_getfield(L, -2, "pointer");
        lua_pushfstring(L, "extra field %s is not allowed",
                        lua_tostring(L, -1));
        lua_remove(L, -2);
        jc_err_end(c);
        c->cur = saved;
        c->depth--;
      }
    } else {
      r = jc_eval_child(c, n->addl, k + 1, key->s, key->u.len, 0);
    }
    if (!r) ok = 0;
  }
  return ok;
}

static int jc_eval_object(jc_vctx *c, const jc_node *n, size_t i) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t j, k, count = x->n, end = x->u.end, slots = 0;
  int ok = 1;

  if (n->nprops > 0) {   /* one pass: each member's slot in props_sorted */
    slots = jc_stk_push(c, n->nprops);
    for (j = i + 1; j < end; j = jc_tv_next(t, j + 1)) {
      const jc_prop *p = jc_find_prop(n, t->v[j].s, t->v[j].u.len);
      if (p != NULL) c->stk[slots + (size_t)p->sidx] = j + 1;
    }
  }
  for (k = 0; k < n->nrequired; k++) {
    const jc_prop *p = &n->required[k];
    int missing = p->sidx >= 0 ? c->stk[slots + (size_t)p->sidx] == 0
                               : jc_obj_find(t, i, p->name, p->len) == 0;
    if (missing) {
      ok = 0;
      jc_report_required(c, n, p);
      if (JC_STOP(c)) goto out;
    }
  }
  for (k = 0; k < n->nprops; k++) {
    const jc_prop *p = &n->props[k];
    size_t e = c->stk[slots + (size_t)p->sidx];
    if (e != 0 && !jc_eval_child(c, p->node, e, p->name, p->len, 0)) {
      ok = 0;
      if (JC_STOP(c)) goto out;
    }
  }
  if (n->nprops > 0) jc_stk_pop(c, slots);
  slots = (size_t)-1;

  if (n->npprops > 0 || n->addl != NULL) {
    /* first a quiet pass in document order; the sorted pass below runs
    ** only to report what failed, in a stable order */
    int fast = 1;
    c->quiet++;
    for (j = i + 1; j < end && fast; j = jc_tv_next(t, j + 1))
      fast = jc_eval_member(c, n, j);
    c->quiet--;
    if (c->abort) return 0;
    if (!fast) {
      ok = 0;
      if (!c->quiet) {
        lua_State *L = c->L;
        jc_key *keys = (jc_key *)jc_newuserdata(L, (count ? count : 1) *
                                                       sizeof(jc_key));
        for (j = i + 1, k = 0; j < end; j = jc_tv_next(t, j + 1), k++) {
          keys[k].s = t->v[j].s;
          keys[k].len = t->v[j].u.len;
          keys[k].e = j;
        }
        qsort(keys, k, sizeof(jc_key), jc_key_cmp);
        for (j = 0; j < k; j++) {
          if (!jc_eval_member(c, n, keys[j].e) && JC_STOP(c)) break;
        }
        lua_pop(L, 1);
        if (JC_STOP(c)) return 0;
      } else {
        return 0;
      }
    }
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
  return ok;
out:
  if (slots != (size_t)-1 && n->nprops > 0) jc_stk_pop(c, slots);
  return 0;
}

/* Does the value (entry 'x') satisfy the 'type' bits? */
static int jc_type_ok(const jc_tv *x, unsigned types) {
  switch (x->kind) {
    case JT_NULL: return (types & TB_NULL) != 0;
    case JT_BOOLEAN: return (types & TB_BOOLEAN) != 0;
    case JT_OBJECT: return (types & TB_OBJECT) != 0;
    case JT_ARRAY: return (types & TB_ARRAY) != 0;
    case JT_STRING: return (types & TB_STRING) != 0;
    case JT_NUMBER:
      return (types & TB_NUMBER) != 0 ||
             ((types & TB_INTEGER) != 0 && jc_tv_integral(x));
    default: return 0;
  }
}

/* Evaluate applicator lists quietly; returns how many matched and the
** first two matching indexes. */
static size_t jc_count_matches(jc_vctx *c, jc_node *const *list, size_t n,
                               size_t i, size_t stop_at, size_t *which) {
  size_t k, hits = 0;
  c->quiet++;
  for (k = 0; k < n && hits < stop_at && !c->abort; k++) {
    if (jc_eval(c, list[k], i)) {
      if (hits < 2) which[hits] = k;
      hits++;
    }
  }
  c->quiet--;
  return hits;
}

/* Enter the resource of 'n' in the dynamic scope; returns 1 if pushed. */
static int jc_scope_push(jc_vctx *c, const jc_node *n) {
  if (c->stop > 0 && c->v->scope[c->stop - 1] == n->res) return 0;
  c->v->scope[c->stop++] = n->res;
  return 1;
}

/* The node a '$dynamicRef' evaluates: the outermost resource in the
** dynamic scope with a '$dynamicAnchor' of its name, else the static
** target. */
static const jc_node *jc_dyn_target(jc_vctx *c, const jc_node *n) {
  int i;
  size_t k;
  if (n->dyn_name == NULL) return n->dynref;
  for (i = 0; i < c->stop; i++) {
    const jc_res *r = c->v->scope[i];
    for (k = 0; k < r->ndyn; k++)
      if (strcmp(r->dyn_names[k], n->dyn_name) == 0) return r->dyn_nodes[k];
  }
  return n->dynref;
}

/* Evaluate reference target 'to' of 'from' (keyword 'kw'), recording the
** step for the keyword location when it is tracked. */
static int jc_eval_ref(jc_vctx *c, const jc_node *from, const jc_node *to,
                       const char *kw, size_t i) {
  int ok;
  if (c->nvia < 0 || c->nvia >= JC_SCHEMA_MAX_EVAL) return jc_eval(c, to, i);
  c->v->via[c->nvia].from = from;
  c->v->via[c->nvia].to = to;
  c->v->via[c->nvia].kw = kw;
  c->nvia++;
  ok = jc_eval(c, to, i);
  c->nvia--;
  return ok;
}

/* Quiet validity of 'n' on entry 'i'. */
static int jc_quiet_ok(jc_vctx *c, const jc_node *n, size_t i) {
  int ok;
  c->quiet++;
  ok = jc_eval(c, n, i);
  c->quiet--;
  return ok;
}

/*
** Annotations for unevaluatedProperties/Items: mark on the scratch stack
** at 'pb' the member ordinals and at 'ib' the item indexes that 'n' and
** its in-place subschemas evaluated on entry 'i'; '*allp'/'*alli' when
** all were. Subschemas that fail contribute nothing (anyOf, oneOf, if);
** 'self' skips n's own unevaluated* keywords.
*/
static void jc_collect(jc_vctx *c, const jc_node *n, size_t i, size_t pb,
                       size_t ib, int *allp, int *alli, int self) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t k, j, m;
  int pushed = 0;
  if (n->boolean >= 0 || c->abort) return;
  if (c->edepth + 1 > JC_SCHEMA_MAX_EVAL) return;
  c->edepth++;
  if (c->v->dynamic) pushed = jc_scope_push(c, n);
  if (n->ref != NULL)
    jc_collect(c, n->ref, i, pb, ib, allp, alli, 0);
  if (n->dynref != NULL)
    jc_collect(c, jc_dyn_target(c, n), i, pb, ib, allp, alli, 0);
  if (x->kind == JT_OBJECT) {
    if (n->addl != NULL || n->addl_true || (!self && n->uprops != NULL))
      *allp = 1;
    if (!*allp && (n->nprops > 0 || n->npprops > 0)) {
      for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j + 1), m++) {
        const jc_tv *key = &t->v[j];
        int hit = jc_find_prop(n, key->s, key->u.len) != NULL;
        for (k = 0; !hit && k < n->npprops; k++)
          hit = jc_match(c, n, n->pprops[k].re, key->s, key->u.len) ==
                JC_PATTERN_MATCH;
        if (hit) c->stk[pb + m] = 1;
      }
    }
    for (k = 0; k < n->ndeps; k++) {
      if (n->deps[k].node == NULL) continue;
      if (jc_obj_find(t, i, n->deps[k].name, n->deps[k].len) != 0)
        jc_collect(c, n->deps[k].node, i, pb, ib, allp, alli, 0);
    }
  } else if (x->kind == JT_ARRAY) {
    if (n->items != NULL || (!self && n->uitems != NULL)) *alli = 1;
    for (k = 0; k < n->nprefix && k < x->n; k++) c->stk[ib + k] = 1;
    if (n->contains != NULL && !*alli) {
      for (j = i + 1, k = 0; j < x->u.end; j = jc_tv_next(t, j), k++)
        if (jc_quiet_ok(c, n->contains, j)) c->stk[ib + k] = 1;
    }
  }
  for (k = 0; k < n->nallof; k++)
    jc_collect(c, n->allof[k], i, pb, ib, allp, alli, 0);
  for (k = 0; k < n->nanyof; k++)
    if (jc_quiet_ok(c, n->anyof[k], i))
      jc_collect(c, n->anyof[k], i, pb, ib, allp, alli, 0);
  for (k = 0; k < n->noneof; k++)
    if (jc_quiet_ok(c, n->oneof[k], i))
      jc_collect(c, n->oneof[k], i, pb, ib, allp, alli, 0);
  if (n->if_ != NULL) {
    if (jc_quiet_ok(c, n->if_, i)) {
      jc_collect(c, n->if_, i, pb, ib, allp, alli, 0);
      if (n->then_ != NULL)
        jc_collect(c, n->then_, i, pb, ib, allp, alli, 0);
    } else if (n->else_ != NULL) {
      jc_collect(c, n->else_, i, pb, ib, allp, alli, 0);
    }
  }
  if (pushed) c->stop--;
  c->edepth--;
}

/* unevaluatedProperties / unevaluatedItems of 'n' on entry 'i'. */
static JC_NOINLINE int jc_eval_unevaluated(jc_vctx *c, const jc_node *n,
                                           size_t i) {
  const jc_tape *t = c->t;
  const jc_tv *x = &t->v[i];
  size_t cnt = x->n, base = jc_stk_push(c, cnt + 1), j, m;
  int allp = 0, alli = 0, ok = 1, r;
  jc_collect(c, n, i, base, base, &allp, &alli, 1);
  if (x->kind == JT_OBJECT && n->uprops != NULL && !allp) {
    for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j + 1), m++) {
      const jc_tv *key = &t->v[j];
      if (c->stk[base + m]) continue;
      if (n->uprops->boolean == 0) {
        r = 0;
        jc_report_extra(c, n, "unevaluatedProperties", key->s, key->u.len, 0,
                        j + 1);
      } else {
        r = jc_eval_child(c, n->uprops, j + 1, key->s, key->u.len, 0);
      }
      if (!r) {
        ok = 0;
        if (JC_STOP(c)) break;
      }
    }
  }
  if (x->kind == JT_ARRAY && n->uitems != NULL && !alli) {
    for (j = i + 1, m = 0; j < x->u.end; j = jc_tv_next(t, j), m++) {
      if (c->stk[base + m]) continue;
      if (n->uitems->boolean == 0) {
        r = 0;
        jc_report_extra(c, n, "unevaluatedItems", NULL, 0, m, j);
      } else {
        r = jc_eval_child(c, n->uitems, j, NULL, 0, m);
      }
      if (!r) {
        ok = 0;
        if (JC_STOP(c)) break;
      }
    }
  }
  jc_stk_pop(c, base);
  return ok && !c->abort;
}

/* dependentRequired / dependentSchemas / dependencies and propertyNames. */
static JC_NOINLINE int jc_eval_object_more(jc_vctx *c, const jc_node *n,
                                           size_t i) {
  lua_State *L = c->L;
  const jc_tape *t = c->t;
  size_t k, j;
  int ok = 1;
  for (k = 0; k < n->ndeps; k++) {
    const jc_dep *d = &n->deps[k];
    if (jc_obj_find(t, i, d->name, d->len) == 0) continue;
    for (j = 0; j < d->nreq; j++) {
      if (jc_obj_find(t, i, d->req[j].name, d->req[j].len) == 0) {
        ok = 0;
        if (!c->quiet) {
          luaL_Buffer b;
          jc_err_begin(c, n, d->kw);
          lua_pushlstring(L, d->req[j].name, d->req[j].len);
          lua_setfield(L, -3, "property");
          lua_getfield(L, -2, "pointer");
          luaL_buffinit(L, &b);
          luaL_addstring(&b, "missing field ");
          luaL_addvalue(&b);
          luaL_addchar(&b, '/');
          jc_add_token(&b, d->req[j].name, d->req[j].len);
          luaL_addstring(&b, ", required when ");
          lua_pushlstring(L, d->name, d->len);
          luaL_addvalue(&b);
          luaL_addstring(&b, " is present");
          luaL_pushresult(&b);
          jc_err_end(c);
        }
        if (JC_STOP(c)) return 0;
      }
    }
    if (d->node != NULL && !jc_eval(c, d->node, i)) {
      ok = 0;
      if (JC_STOP(c)) return 0;
    }
  }
  if (n->pnames != NULL) {
    for (j = i + 1; j < t->v[i].u.end; j = jc_tv_next(t, j + 1)) {
      if (!jc_eval_child(c, n->pnames, j, t->v[j].s, t->v[j].u.len, 0)) {
        ok = 0;
        if (JC_STOP(c)) return 0;
      }
    }
  }
  return ok;
}

/* contains / minContains / maxContains. */
static JC_NOINLINE int jc_eval_contains(jc_vctx *c, const jc_node *n,
                                        size_t i) {
  const jc_tape *t = c->t;
  size_t j, hits = 0;
  for (j = i + 1; j < t->v[i].u.end && !c->abort; j = jc_tv_next(t, j))
    if (jc_quiet_ok(c, n->contains, j)) hits++;
  if (c->abort) return 0;
  if (hits < n->min_contains) {
    if (n->min_contains == 1 && hits == 0)
      jc_report(c, n, "contains", " has no item that matches \"contains\"");
    else
      jc_report_count(c, n, "minContains", hits, "items matching \"contains\"",
                      "minimum", n->min_contains);
    return 0;
  }
  if (n->max_contains != ABSENT && hits > n->max_contains) {
    jc_report_count(c, n, "maxContains", hits, "items matching \"contains\"",
                    "maximum", n->max_contains);
    return 0;
  }
  return 1;
}

/* Is 'i' in the enum of 'n'? By hash first, every member when the value
** is too big to hash whole. */
static int jc_enum_has(jc_vctx *c, const jc_node *n, size_t i) {
  long budget = JC_HASH_BUDGET;
  jc_u64 h = jc_tv_hash(c->t, i, &budget);
  size_t lo = 0, hi = n->nenum, k;
  if (budget < 0) {
    for (k = 0; k < n->nenum; k++)
      if (jc_tv_equal(c->t, i, n->enum_tape, n->enum_roots[k])) return 1;
    return 0;
  }
  while (lo < hi) {               /* first pair with hash >= h */
    size_t mid = lo + (hi - lo) / 2;
    if (n->enum_hash[2 * mid] < h) lo = mid + 1;
    else hi = mid;
  }
  for (k = lo; k < n->nenum && n->enum_hash[2 * k] == h; k++)
    if (jc_tv_equal(c->t, i, n->enum_tape,
                    n->enum_roots[n->enum_hash[2 * k + 1]]))
      return 1;
  return 0;
}

/*
** Evaluate node 'n' on tape entry 'i'. Keyword order is fixed: $ref,
** type (a type failure ends the subschema), enum, const, the keywords of
** the value's type, allOf, anyOf, oneOf, not, if, unevaluated*. Returns 1
** when valid.
*/
static int jc_eval(jc_vctx *c, const jc_node *n, size_t i) {
  lua_State *L = c->L;
  const jc_tv *x;
  int ok = 1, jt, pushed = 0, memo = 0;
  size_t saved;
  if (n->boolean == 1) return 1;
  if (c->abort) return 0;
  i = jc_tv_deref(c->t, i);
  saved = c->cur;
  c->cur = i;
  if (n->boolean == 0) {
    jc_report(c, n, NULL, " is not allowed");
    c->cur = saved;
    return 0;
  }
  if (--c->work < 0) {
    jc_over(c, n);
    c->cur = saved;
    return 0;
  }
  if (++c->edepth > JC_SCHEMA_MAX_EVAL) {
    jc_too_deep(c, n, "schema evaluation", JC_SCHEMA_MAX_EVAL);
    c->edepth--;
    c->cur = saved;
    return 0;
  }
  x = &c->t->v[i];
  jt = x->kind;
  if (!c->v->dynamic &&
      (jt == JT_OBJECT || jt == JT_ARRAY || n->ref != NULL ||
       n->nanyof > 0 || n->noneof > 0 || n->nallof > 0 || n->not_ != NULL ||
       n->if_ != NULL)) {
    int r = jc_memo_get(c, n, i);
    if (r >= 0 && (c->quiet || r == 1)) {
      c->edepth--;
      c->cur = saved;
      return r;
    }
    memo = 1;
  }
  if (c->v->dynamic) pushed = jc_scope_push(c, n);

  if (n->ref != NULL && !jc_eval_ref(c, n, n->ref, "$ref", i)) {
    ok = 0;
    if (JC_STOP(c)) goto done;
  }
  if (n->dynref != NULL &&
      !jc_eval_ref(c, n, jc_dyn_target(c, n), "$dynamicRef", i)) {
    ok = 0;
    if (JC_STOP(c)) goto done;
  }
  if (n->types != 0 && !jc_type_ok(x, n->types)) {
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
  if (n->enum_ref != 0 && !jc_enum_has(c, n, i)) {
    ok = 0;
    if (!c->quiet) {
      lua_rawgeti(L, c->keep, n->enum_ref);
      jc_report_enum(c, n, n->nenum);
      lua_pop(L, 1);
    }
    if (JC_STOP(c)) goto done;
  }
  if (n->const_ref != 0 && !jc_tv_equal(c->t, i, n->const_tape, 0)) {
    ok = 0;
    if (!c->quiet) {
      int cv;
      const char *where;
      lua_rawgeti(L, c->keep, n->const_ref);
      cv = lua_gettop(L);
      where = jc_err_begin(c, n, "const");
      lua_pushvalue(L, cv);
      lua_setfield(L, -3, "expected");
      jc_push_render(L, cv);
      lua_pushfstring(L, "%s must be %s", where, lua_tostring(L, -1));
      lua_remove(L, -2);
      jc_err_end(c);
      lua_pop(L, 1);
    }
    if (JC_STOP(c)) goto done;
  }
  {
    int r = 1;
    switch (jt) {
      case JT_OBJECT:
        r = jc_eval_object(c, n, i);
        if ((n->ndeps > 0 || n->pnames != NULL) && (r || !JC_STOP(c)))
          r = jc_eval_object_more(c, n, i) && r;
        break;
      case JT_ARRAY:
        r = jc_eval_array(c, n, i);
        if (n->contains != NULL && (r || !JC_STOP(c)))
          r = jc_eval_contains(c, n, i) && r;
        break;
      case JT_STRING: r = jc_eval_string(c, n, i); break;
      case JT_NUMBER: r = jc_eval_number(c, n, i); break;
      default: break;
    }
    if (!r) {
      ok = 0;
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->nallof > 0) {
    size_t k;
    for (k = 0; k < n->nallof; k++) {
      if (!jc_eval(c, n->allof[k], i)) {
        ok = 0;
        if (JC_STOP(c)) goto done;
      }
    }
  }
  if (n->nanyof > 0) {
    size_t which[2];
    if (jc_count_matches(c, n->anyof, n->nanyof, i, 1, which) == 0) {
      ok = 0;
      if (c->abort) goto done;
      jc_report(c, n, "anyOf", " does not match any of the %d alternatives",
                (int)n->nanyof);
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->noneof > 0) {
    size_t which[2];
    size_t hits = jc_count_matches(c, n->oneof, n->noneof, i, 2, which);
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
    matched = jc_eval(c, n->not_, i);
    c->quiet--;
    if (c->abort) { ok = 0; goto done; }
    if (matched) {
      ok = 0;
      jc_report(c, n, "not", " must not match the schema in \"not\"");
      if (JC_STOP(c)) goto done;
    }
  }
  if (n->if_ != NULL) {
    int cond = jc_quiet_ok(c, n->if_, i);
    const jc_node *branch = cond ? n->then_ : n->else_;
    if (c->abort) { ok = 0; goto done; }
    if (branch != NULL && !jc_eval(c, branch, i)) {
      ok = 0;
      if (JC_STOP(c)) goto done;
    }
  }
  if ((n->uprops != NULL && jt == JT_OBJECT) ||
      (n->uitems != NULL && jt == JT_ARRAY)) {
    if (!jc_eval_unevaluated(c, n, i)) ok = 0;
  }
done:
  if (c->abort) ok = 0;
  else if (memo) jc_memo_put(c, n, i, ok);
  if (pushed) c->stop--;
  c->edepth--;
  c->cur = saved;
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

/* Draft of an option name ("2020-12", "draft7", "draft4"); 0 if unknown. */
static int jc_draft_name(const char *d) {
  if (strcmp(d, "2020-12") == 0 || strcmp(d, "draft2020-12") == 0)
    return JC_D2020;
  if (strcmp(d, "2019-09") == 0) return JC_D2019;
  if (strcmp(d, "draft7") == 0 || strcmp(d, "draft-07") == 0) return JC_D7;
  if (strcmp(d, "draft4") == 0 || strcmp(d, "draft-04") == 0) return JC_D4;
  return 0;
}

/* Draft of a '$schema' URI; 0 when not a known meta-schema. */
static int jc_draft_uri(const char *u) {
  if (strstr(u, "json-schema.org/") == NULL) return 0;
  if (strstr(u, "/draft-04/") || strstr(u, "/draft-03/")) return JC_D4;
  if (strstr(u, "/draft-06/") || strstr(u, "/draft-07/")) return JC_D7;
  if (strstr(u, "/draft/2019-09/")) return JC_D2019;
  if (strstr(u, "/draft/2020-12/")) return JC_D2020;
  return 0;
}

/* For a custom meta-schema (URI at 'uidx'): fetch it through the loader
** (the function at index 2) and tell whether its '$vocabulary' leaves out validation.
** A loader failure here is not an error (the meta-schema is optional). */
static int jc_meta_novalidation(lua_State *L, int uidx) {
  int res = 0;
  lua_pushvalue(L, 2);
  lua_pushvalue(L, uidx);
  if (lua_pcall(L, 1, 1, 0) != 0) { lua_pop(L, 1); return 0; }
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_pushliteral(L, "$vocabulary");   /* raw: no metamethod runs */
    lua_rawget(L, -2);
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_pushliteral(L,
                      "https://json-schema.org/draft/2020-12/vocab/validation");
      lua_rawget(L, -2);
      res = lua_isnil(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return res;
}

static const char *const jc_draft_names[] = {
  "2020-12", "draft2020-12", "2019-09", "draft7", "draft-07", "draft4",
  "draft-04", NULL
};

static const jc_opt jc_compile_opts[] = {
  { "format_assertion", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "draft", JC_OPT_STRING, 0, 0, "\"2020-12\", \"draft7\" or \"draft4\"",
    jc_draft_names },
  { "loader", JC_OPT_FUNCTION, 0, 0, "a function", NULL },
  { "max_depth", JC_OPT_INT, 1, JC_SCHEMA_MAX_DEPTH_LIMIT,
    "an integer from 1 to 10000", NULL },
  { "work_budget", JC_OPT_INT, 1, 1e15, "an integer from 1 to 1e15", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/*
** core.compile(schema [, opts]) -> validator
**   schema  table (a JSON Schema as decoded) or boolean
**   opts    table or nil: draft ("2020-12" default, "draft7", "draft4"; a
**           known '$schema' wins), loader (function(uri) -> schema | nil,
**           err: called at compile time, under lua_pcall, for each document
**           a reference names that the schema does not hold),
**           format_assertion (boolean, default false: 'format' is an
**           annotation as in 2020-12 §7.2.1; true asserts date, time,
**           date-time, duration, email, hostname, ipv4, ipv6, uri,
**           uri-reference, iri, iri-reference, uri-template, uuid, regex,
**           json-pointer, relative-json-pointer), max_depth (integer
**           1..10000, default
**           1000: instance depth bound, deeper values fail as "too_deep"),
**           work_budget (integer 1..1e15 work units per validation;
**           default 20,000,000 plus 16 per value of the instance: one
**           unit per subschema evaluated, a regex search 1 + 1 per 16
**           bytes, 100,000 more when it hits PCRE2's match limit; past it
**           the instance fails as "budget_exceeded")
** Returns a "jsoncontract.Validator" userdata (garbage collected).
** Raises "invalid schema at <schema pointer>: <reason>" for a bad schema,
** and on misuse (bad argument, unknown option).
** Stack: [-0, +1, e]
*/
static int jc_schema_compile(lua_State *L) {
  jc_validator *v;
  jc_cctx c;
  size_t len;
  int i;
  int t = lua_type(L, 1);
  int fa = 0, maxd = JC_SCHEMA_MAX_DEPTH, draft = 0, loader = 0;
  jc_optval ov[5];
  luaL_argcheck(L, t == LUA_TTABLE || t == LUA_TBOOLEAN, 1,
                "table or boolean expected");
  luaL_argcheck(L, lua_gettop(L) <= 2, 3, "no more than 2 arguments expected");
  jc_opts_read(L, 2, jc_compile_opts, ov);
  fa = ov[0].set && ov[0].b;
  if (ov[1].set) draft = jc_draft_name(ov[1].s);
  loader = ov[2].set;
  if (ov[3].set) maxd = (int)ov[3].n;
  if (loader) lua_getfield(L, 2, "loader");
  else lua_pushnil(L);
  lua_replace(L, 2);                 /* 2: loader or nil */
  lua_settop(L, 2);
  /* '$schema' wins over the 'draft' option */
  c.novalidation = 0;
  if (t == LUA_TTABLE) {
    if (jc_getkw(L, 1, "$schema") == LUA_TSTRING) {
      int d = jc_draft_uri(lua_tostring(L, -1));
      if (d != 0) draft = d;
      else if (loader) c.novalidation = jc_meta_novalidation(L, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  if (draft == 0) draft = JC_D2020;
  /* owner first: everything below hangs off its keep table */
  v = (jc_validator *)jc_newuserdata(L, sizeof(jc_validator));
  memset(v, 0, sizeof *v);
  v->keep_ref = LUA_NOREF;
  luaL_setmetatable(L, JC_VALIDATOR_MT);
  v->max_depth = maxd;
  v->format_assertion = fa;
  v->work_budget = ov[4].set ? ov[4].n : 0;
  luaL_getmetatable(L, JC_ARRAY_MT);
  v->amt = lua_topointer(L, -1);
  lua_pop(L, 1);
  lua_newtable(L);                   /* 4: keep */
  lua_pushvalue(L, -1);
  v->keep_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);                   /* 5: cache */
  c.L = L;
  c.keep = 4;
  c.nkeep = 0;
  c.cache = 5;
  c.root = 1;
  c.nest = 0;
  c.v = v;
  c.draft = draft;
  c.loader = loader ? 2 : 0;
  lua_newtable(L); c.reg = lua_gettop(L);
  lua_newtable(L); c.anchors = lua_gettop(L);
  lua_newtable(L); c.dyns = lua_gettop(L);
  lua_newtable(L); c.loc = lua_gettop(L);
  lua_newtable(L); c.baseof = lua_gettop(L);
  lua_newtable(L); c.resof = lua_gettop(L);
  lua_newtable(L); c.nodes = lua_gettop(L);
  lua_newtable(L); c.draftof = lua_gettop(L);
  c.nnodes = 0;
  v->scope = (jc_res **)jc_keep_block(&c, JC_SCHEMA_MAX_EVAL + 2,
                                      sizeof(jc_res *));
  v->via = (jc_via *)jc_keep_block(&c, JC_SCHEMA_MAX_EVAL + 2,
                                   sizeof(jc_via));
  v->matcher = jc_matcher_new(L);
  jc_keep(&c);
  v->segs = (jc_seg *)jc_keep_block(&c, (size_t)maxd + 1, sizeof(jc_seg));
  lua_pushliteral(L, "");
  lua_pushvalue(L, 1);
  jc_setpair(L, c.reg);
  v->base = "";
  jc_index(&c, 1, "", 0, "", 0, 0);
  if (t == LUA_TTABLE) {
    lua_pushvalue(L, 1);
    lua_rawget(L, c.baseof);
    if (lua_isstring(L, -1)) v->base = jc_keep_string(&c, &len);
    else lua_pop(L, 1);   /* not a schema: jc_compile_node raises */
  }
  lua_pushliteral(L, "");
  {
    const char *root = jc_keep_string(&c, &len);
    const char *abs;
    jc_push_join(L, v->base, strlen(v->base), '#', "", 0);
    abs = jc_keep_string(&c, &len);
    v->root = jc_compile_node(&c, 1, root, abs, v->base);
  }
  for (i = 1; i <= c.nnodes; i++) {
    lua_rawgeti(L, c.nodes, i);
    jc_check_cycles(&c, (jc_node *)lua_touserdata(L, -1));
    lua_pop(L, 1);
  }
  lua_settop(L, 3);
  return 1;
}

/* JSON Schema's "basic" output (2020-12 §12.4.2) for the 'n' error items
** in the list at 'errs': { valid = false, errors = { { keywordLocation,
** absoluteKeywordLocation, instanceLocation, error }, ... } }, and
** truncated = true when 'truncated' (max_errors stopped the walk).
** [-0, +1, m] */
static int jc_push_basic(lua_State *L, int errs, int n, int truncated) {
  int i;
  lua_createtable(L, 0, 3);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "valid");
  if (truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "truncated");
  }
  lua_createtable(L, n, 0);
  luaL_setmetatable(L, JC_ARRAY_MT);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, errs, i);
    lua_createtable(L, 0, 4);
    lua_getfield(L, -2, "keyword_location");
    lua_setfield(L, -2, "keywordLocation");
    lua_getfield(L, -2, "absolute_schema_location");
    lua_setfield(L, -2, "absoluteKeywordLocation");
    lua_getfield(L, -2, "pointer");
    lua_setfield(L, -2, "instanceLocation");
    lua_getfield(L, -2, "message");
    lua_setfield(L, -2, "error");
    lua_rawseti(L, -3, i);
    lua_pop(L, 1);
  }
  lua_setfield(L, -2, "errors");
  return 1;
}

#define JC_VALIDATE_TAPE "jsoncontract.validate_tape"

typedef struct jc_vopts {
  int first, basic, max_errors;
} jc_vopts;

/* Validate the value at entry 0 of tape 't' with 'v' ('deep' > 0: the
** writer found it deeper than max_depth at v->segs[0..deep); 'deep' -1:
** the writer ran out of budget). Returns 0 (valid, nothing pushed; the
** basic output pushes { valid = true } and returns 1) or the number of
** results pushed: nil, err (or the basic output table).
** [-0, +0|1|2, m] */
static int jc_run(lua_State *L, jc_validator *v, const jc_tape *t,
                  const jc_vopts *o, int deep) {
  jc_vctx c;
  int base = lua_gettop(L), i, valid = 0;
  luaL_checkstack(L, 24, "jsoncontract.validate");
  lua_rawgeti(L, LUA_REGISTRYINDEX, v->keep_ref);   /* base + 1: keep */
  lua_pushnil(L);                 /* base + 2: errors, made on the first */
  lua_pushnil(L);                 /* base + 3: scratch stack */
  lua_pushnil(L);                 /* base + 4: memo */
  memset(&c, 0, sizeof c);
  c.L = L;
  c.v = v;
  c.t = t;
  c.keep = base + 1;
  c.errs = base + 2;
  c.stk_slot = base + 3;
  c.memo_slot = base + 4;
  c.max_errors = o->max_errors;
  c.first = o->first;
  c.nvia = o->basic ? 0 : -1;
  c.loc_line = c.loc_col = 1;
  c.budget = v->work_budget > 0 ? v->work_budget
             : JC_WORK_BUDGET + JC_WORK_PER_ENTRY * (double)t->n;
  c.work = c.budget;
  if (deep > 0) {
    c.depth = deep;
    jc_too_deep(&c, v->root, "value", v->max_depth);
    c.depth = 0;
  } else if (deep < 0) {
    jc_over(&c, v->root);
  } else if (jc_eval(&c, v->root, 0) && c.nerr == 0) {
    valid = 1;
  }
  if (valid) {
    lua_settop(L, base);
    if (!o->basic) return 0;
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "valid");
    return 1;
  }
  if (o->basic) {
    jc_push_basic(L, c.errs, c.nerr, c.truncated);
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 1;
  }
  lua_settop(L, base + 2);
  if (lua_isnil(L, c.errs)) {
    lua_newtable(L);
    lua_replace(L, c.errs);
  }
  lua_pushnil(L);                 /* base + 3 */
  {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (i = 1; i <= c.nerr && i <= JC_MESSAGE_JOIN; i++) {
      if (i > 1) luaL_addstring(&b, "; ");
      lua_rawgeti(L, c.errs, i);
      lua_getfield(L, -1, "message");
      lua_remove(L, -2);
      luaL_addvalue(&b);
    }
    if (c.nerr > JC_MESSAGE_JOIN) {
      lua_pushfstring(L, "; and %d more errors", c.nerr - JC_MESSAGE_JOIN);
      luaL_addvalue(&b);
    }
    if (c.truncated) {
      lua_pushfstring(L, "; stopped after %d errors", c.nerr);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
  }
  jc_push_error(L, "schema", c.abort == 1 ? "too_deep"
                : c.abort == 2 ? "budget_exceeded" : "schema_mismatch", "%s",
                lua_tostring(L, -1));
  lua_remove(L, -2);
  lua_pushvalue(L, c.errs);
  lua_setfield(L, -2, "errors");
  if (c.truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "truncated");
  }
  lua_replace(L, base + 2);       /* base + 1: keep -> nil below */
  lua_pushnil(L);
  lua_replace(L, base + 1);
  lua_settop(L, base + 2);
  return 2;
}

static const char *const jc_output_names[] = { "basic", NULL };

static const jc_opt jc_validate_opts[] = {
  { "first", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "output", JC_OPT_STRING, 0, 0, "\"basic\"", jc_output_names },
  { "decoded", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "max_errors", JC_OPT_INT, 0, 1e9, "an integer from 0 to 1e9", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/*
** validator:validate(value [, opts]) -> true | nil, err
**   value  a JSON value as Lua (tables, strings, numbers, booleans, null)
**   opts   table or nil: first (boolean: stop at the first error),
**          output ("basic": return JSON Schema's basic output table
**          { valid, errors = { {keywordLocation, absoluteKeywordLocation,
**          instanceLocation, error}, ... } } instead, valid or not,
**          with truncated = true when max_errors stopped the walk;
**          keywordLocation runs through the references followed,
**          "/properties/a/$ref/type", where schema_pointer names the
**          keyword where it stands, "/$defs/id/type"),
**          decoded (boolean, accepted and ignored: every value is written
**          to a tape in one walk that checks it is JSON),
**          max_errors (integer, default 100, 0 = no bound: errors kept;
**          at one more the walk stops and err.truncated = true)
** The value is written to a tape (tape.h) in one walk, then validated on
** the tape: the same validator as validator:check on text.
** err = { category = "schema",
**         kind = "schema_mismatch" | "too_deep" | "budget_exceeded",
**         message = <the first 20 messages joined by "; ", then
**                    "; and N more errors", "; stopped after N errors">,
**         truncated = true when max_errors stopped the walk,
**         errors = { { pointer, keyword, schema_pointer,
**                      absolute_schema_location, message, ...}, ...} }
** Raises on misuse: a closed validator, an unknown option, a value that
** is not JSON anywhere in it, whatever the schema checks: a function,
** coroutine or userdata, NaN or +-infinity, an object key that is not a
** string (number keys too, as 'core.encode' refuses them), a marked
** array with keys other than 1..n: "value at /a/0 is NaN, not JSON"; a
** table that contains itself: "value at /a is a table that contains
** itself (a cycle), not JSON" (a table met twice on different branches
** is fine, and written twice). An instance deeper than max_depth is
** too_deep even for a 'true' schema.
** Stack: [-0, +1|2, e]
*/
/* 'self' of a method whose upvalue 1 is the Validator metatable: compared
** by identity (no registry lookup by name); luaL_checkudata's message
** otherwise. */
static jc_validator *jc_self(lua_State *L) {
  void *p = lua_touserdata(L, 1);
  if (p != NULL && lua_getmetatable(L, 1)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same) return (jc_validator *)p;
  }
  return (jc_validator *)luaL_checkudata(L, 1, JC_VALIDATOR_MT);
}

static int jc_schema_validate(lua_State *L) {
  jc_validator *v = jc_self(L);
  jc_optval ov[4];
  jc_vopts o;
  jc_tape *t;
  size_t depth = 0;
  long budget;
  int r, n;
  luaL_argcheck(L, v->root != NULL, 1, "validator is closed");
  luaL_argcheck(L, !lua_isnone(L, 2), 2, "value expected");
  luaL_argcheck(L, lua_gettop(L) <= 3, 4, "no more than 2 arguments expected");
  jc_opts_read(L, 3, jc_validate_opts, ov);
  o.first = ov[0].set && ov[0].b;
  o.basic = ov[1].set;
  o.max_errors = ov[3].set ? (int)ov[3].n : JC_MAX_ERRORS;
  lua_settop(L, 2);
  t = jc_tape_acquire(L, JC_VALIDATE_TAPE);          /* 3 */
  budget = v->work_budget > 0 && v->work_budget < (double)JC_WORK_BUDGET
               ? (long)v->work_budget : (long)JC_WORK_BUDGET;
  r = jc_tape_write_lua(L, t, 2, (size_t)v->max_depth, v->segs, &depth,
                        &budget);
  n = jc_run(L, v, t, &o, r == 1 ? (int)depth : r == 2 ? -1 : 0);
  jc_tape_release(t);
  lua_remove(L, 3);
  if (n == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  return n;
}

static const jc_opt jc_check_opts[] = {
  { "first", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { "max_errors", JC_OPT_INT, 0, 1e9, "an integer from 0 to 1e9", NULL },
  { "max_depth", JC_OPT_INT, 1, 3000, "an integer from 1 to 3000", NULL },
  { "max_bytes", JC_OPT_INT, 0, 281474976710656.0, "an integer >= 0", NULL },
  { "keep_order", JC_OPT_BOOL, 0, 0, "a boolean", NULL },
  { NULL, 0, 0, 0, NULL, NULL }
};

/*
** validator:check(text [, opts]) -> value | nil, err
** The format and schema gates in one C call: 'text' is parsed strictly
** into a tape (as core.decode does), validated on the tape, and only
** when it is valid is the Lua value built (as core.decode builds it), so
** a rejected reply never costs a Lua table.
**   text   string: the JSON text
**   opts   table or nil: first, max_errors (as validate), max_depth
**          (integer 1..3000, default 1000) and max_bytes (integer >= 0,
**          default 64 MiB) as core.decode, keep_order (boolean, as
**          core.decode)
** Returns the value, or nil and err: a format err exactly as core.decode
** returns it, or a schema err as validate returns it whose error items
** also carry offset (0-based byte), line and column (1-based, column in
** UTF-8 characters) of the failing value in 'text'.
** Raises on misuse: a closed validator, 'text' not a string, an unknown
** option. Stack: [-0, +1|2, e]
*/
static int jc_schema_check(lua_State *L) {
  jc_validator *v = jc_self(L);
  jc_optval ov[5];
  jc_vopts o;
  jc_tape *t;
  size_t len;
  const char *text;
  int r;
  luaL_argcheck(L, v->root != NULL, 1, "validator is closed");
  luaL_checktype(L, 2, LUA_TSTRING);
  luaL_argcheck(L, lua_gettop(L) <= 3, 4, "no more than 2 arguments expected");
  jc_opts_read(L, 3, jc_check_opts, ov);
  o.first = ov[0].set && ov[0].b;
  o.basic = 0;
  o.max_errors = ov[1].set ? (int)ov[1].n : JC_MAX_ERRORS;
  lua_settop(L, 2);
  text = lua_tolstring(L, 2, &len);
  t = jc_tape_acquire(L, JC_VALIDATE_TAPE);          /* 3 */
  r = jc_parse_tape(L, t, text, len, ov[2].set ? (size_t)ov[2].n : 1000,
                    ov[3].set ? (size_t)ov[3].n : 64 * 1024 * 1024);
  if (r == 0) {
    r = jc_run(L, v, t, &o, 0);
    if (r == 0) {
      jc_tape_push_lua(L, t, 0, ov[4].set && ov[4].b);
      r = 1;
    }
  }
  jc_tape_release(t);
  lua_remove(L, 3);
  return r;
}

/*
** validator:close() -> nothing
** Frees the compiled schema now (the keep table; __gc does the same);
** idempotent. Later validate/check calls raise "validator is closed".
** Stack: [-0, +0, -]
*/
static int jc_schema_close(lua_State *L) {
  jc_self(L);
  return jc_validator_gc(L);
}

static const luaL_Reg jc_validator_methods[] = {
  { "validate", jc_schema_validate },
  { "check", jc_schema_check },
  { "close", jc_schema_close },
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
    lua_pushvalue(L, -2);   /* upvalue: the metatable, for jc_self */
    luaL_setfuncs(L, jc_validator_methods, 1);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_setfuncs(L, jc_schema_funcs, 0);
}

/*
** schema_compile.c: the compile stage of the schema gate: a JSON Schema (Lua
** values, draft 2020-12, draft-07, draft-04) -> a tree of C nodes owned by
** the validator's keep table. See schema.h and the overview in schema_lua.c.
*/
#include "schema.h"

/* ===================================================================== */
/* JSON values in Lua                                                      */
/* ===================================================================== */

/* Is the table at 'idx' a JSON array? Marked by JC_ARRAY_MT, or keys are
** exactly 1..n with n >= 1. [-0, +0, -] */
int jc_is_array(lua_State *L, int idx) {
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
int jc_json_type(lua_State *L, int idx) {
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

const char *const jc_jt_names[] = {
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

/* Raise "invalid schema at <path>[/<kw>]: <message>". Never returns. */
int jc_schema_error(lua_State *L, const char *path, const char *kw,
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
int jc_keep(jc_cctx *c) {
  lua_rawseti(c->L, c->keep, ++c->nkeep);
  return c->nkeep;
}

/* Keep the string at the top and return its stable pointer. [-1, +0, m] */
const char *jc_keep_string(jc_cctx *c, size_t *len) {
  const char *s = lua_tolstring(c->L, -1, len);
  jc_keep(c);
  return s;
}

/* A zeroed block of 'size' bytes owned by the keep table. [-0, +0, m] */
void *jc_keep_block(jc_cctx *c, size_t n, size_t elem) {
  void *p;
  if (n == 0) return NULL;
  if (n > ((size_t)-1) / elem) luaL_error(c->L, "schema too large");
  p = jc_newuserdata(c->L, n * elem);
  memset(p, 0, n * elem);
  jc_keep(c);
  return p;
}

/* The hash table of the string members of a large enum (n->enum_shash):
** a string is looked up by one hash of its length and words, not by the
** hash of its bytes and a search of the sorted hashes. A member equal to
** an earlier one is not entered (the earlier one is found, as before).
** [-0, +0, m] */
static void jc_enum_table(jc_cctx *c, jc_node *n) {
  size_t cap = 32, k;
  if (n->nenum <= 16 || n->nenum_strs == 0) return;
  while (cap < n->nenum_strs * 2) {
    if (cap > ((size_t)-1) / 4 / sizeof(unsigned))
      luaL_error(c->L, "schema too large");
    cap *= 2;
  }
  n->enum_shash = (unsigned *)jc_keep_block(c, cap, sizeof(unsigned));
  n->enum_smask = cap - 1;
  for (k = 0; k < n->nenum_strs; k++) {
    const jc_estr *m = &n->enum_strs[k];
    size_t pos = jc_name_hash(m->wa, m->wb, m->len, 0) & n->enum_smask;
    int dup = 0;
    while (n->enum_shash[pos] != 0) {
      const jc_estr *o = &n->enum_strs[n->enum_shash[pos] - 1];
      if (o->len == m->len && jc_bytes_eq(o->s, m->s, m->len)) {
        dup = 1;
        break;
      }
      pos = (pos + 1) & n->enum_smask;
    }
    if (!dup) n->enum_shash[pos] = (unsigned)(k + 1);
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
  jc_add_child_path(&b, kw, token, toklen, index);
  luaL_pushresult(&b);
  return jc_keep_string(c, &len);
}

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
int jc_getkw(lua_State *L, int sidx, const char *kw) {
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

/* The tape entry of member 'kw' of the schema object at 'sidx' when the
** schema was compiled from text (jc_cctx.src), else NULL. [-0, +0, -] */
static const jc_tv *jc_src_member(jc_cctx *c, int sidx, const char *kw) {
  lua_State *L = c->L;
  const jc_tape *t = c->src;
  size_t i, j, end, kl = strlen(kw);
  if (t == NULL) return NULL;
  lua_pushvalue(L, sidx);
  lua_rawget(L, c->srcmap);
  if (lua_type(L, -1) != LUA_TNUMBER) { lua_pop(L, 1); return NULL; }
  i = (size_t)lua_tonumber(L, -1);
  lua_pop(L, 1);
  if (i >= t->n || t->v[i].kind != JT_OBJECT) return NULL;
  end = t->v[i].u.end;
  for (j = i + 1; j < end; j = jc_tv_next(t, j + 1)) {
    if (t->v[j].u.len == kl && memcmp(t->v[j].s, kw, kl) == 0)
      return &t->v[j + 1];
  }
  return NULL;
}

/* Read a numeric bound. From schema text, an integer is kept as written
** (int64, or its lexeme beyond), whatever a Lua number could hold: on
** LuaJIT every Lua number is a double. */
static void jc_get_limit(jc_cctx *c, int sidx, const char *path,
                         const char *kw, jc_limit *lim) {
  lua_State *L = c->L;
  lua_Number d;
  const jc_tv *x;
  if (jc_getkw(L, sidx, kw) == LUA_TNIL) { lua_pop(L, 1); return; }
  if (lua_type(L, -1) != LUA_TNUMBER)
    jc_schema_error(L, path, kw, "must be a number");
  d = lua_tonumber(L, -1);
  if (d - d != 0)   /* NaN, +-infinity: no JSON number */
    jc_schema_error(L, path, kw, "must be a finite number");
  lim->set = 1;
  lim->d = d;
#if JC_HAVE_INTEGER
  lim->isint = lua_isinteger(L, -1);
  if (lim->isint) lim->i = (long long)lua_tointeger(L, -1);
#endif
  lua_pop(L, 1);
  x = jc_src_member(c, sidx, kw);
  /* the entry the table was made from (its double is the Lua number) */
  if (x == NULL || x->kind != JT_NUMBER) return;
  if ((x->flags & JC_TF_INT) && (lua_Number)x->u.i == d) {
    lim->isint = 1;
    lim->i = x->u.i;
  } else if ((x->flags & JC_TF_BIG) && (lua_Number)x->u.d == d) {
    lim->isint = 0;
    lim->big = x->s;
    lim->bign = x->n;
  }
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

/* Make 't' hold its strings' bytes itself (in its arena): written from a
** Lua value, its strings point into the caller's Lua strings, which the
** caller may drop (a schema table changed after compile) while the
** validator lives. [-0, +0, m] */
static void jc_own_strings(lua_State *L, jc_tape *t) {
  size_t i;
  for (i = 0; i < t->n; i++) {
    jc_tv *e = &t->v[i];
    if (e->kind != JT_STRING) continue;
    if (e->u.len == 0) {
      e->s = "";
    } else {
      char *p = jc_tape_bytes(L, t, e->u.len);
      memcpy(p, e->s, e->u.len);
      e->s = p;
    }
  }
}

/* Push the values 'roots[0..cnt)' of 't' as a new JSON array (or, with
** 'roots' NULL, the value at entry 0): what an error shows as `allowed` or
** `expected`, built from the validator's own tape, so that no table the
** caller holds (and may change) is handed out or trusted. [-0, +1, m] */
static void jc_push_kept(lua_State *L, jc_tape *t, const size_t *roots,
                         size_t cnt) {
  size_t k;
  if (roots == NULL) {
    jc_tape_push_lua(L, t, 0, 0, 0, 0);
    return;
  }
  lua_createtable(L, cnt < 0x7fffffff ? (int)cnt : 0, 0);
  luaL_getmetatable(L, JC_ARRAY_MT);
  lua_setmetatable(L, -2);
  for (k = 0; k < cnt; k++) {
    jc_tape_push_lua(L, t, roots[k], 0, 0, 0);
    lua_rawseti(L, -2, (lua_Integer)(k + 1));
  }
}

/* Write the 'cnt' members of the list at 'list' (checked JSON values) to
** one tape owned by the keep table; '*roots' gets each member's entry and
** '*hash' (hash, member) pairs sorted by hash (both optional). */
static void jc_compile_tapes(jc_cctx *c, int list, size_t cnt, jc_tape **out,
                             size_t **roots, jc_u64 **hash, const jc_tv *src) {
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
    if (src != NULL) {
      /* from schema text: the values as written (exact numbers), one
      ** after the other in 'c->src' */
      size_t at = (size_t)(src - c->src->v);
      jc_tape_copy(L, t, c->src, at);
      src = &c->src->v[jc_tv_next(c->src, at)];
    } else {
      lua_rawgeti(L, list, (lua_Integer)(k + 1));
      jc_tape_write_lua(L, t, -1, JC_SCHEMA_MAX_NEST, segs, &depth, &budget);
      lua_pop(L, 1);
    }
    if (r != NULL) r[k] = root;
  }
  jc_own_strings(L, t);
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

int jc_cmp_bytes(const char *a, size_t al, const char *b, size_t bl) {
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

/* The perfect hash table of n's property names: the smallest power of
** two >= 2 * nprops, and a seed, where no two names share a slot (32
** seeds per size, the size doubled up to 64 * nprops; names crafted to
** collide under every seed keep the linear lookup: no table).
** Raises a memory error. [-0, +0, m] */
static void jc_props_table(jc_cctx *c, jc_node *n) {
  size_t cap = 8, seed, j;
  unsigned *tab = NULL;
  if (n->nprops > ((size_t)-1) / 64 / sizeof(unsigned)) return;
  while (cap < n->nprops * 2) cap *= 2;
  while (cap <= n->nprops * 64) {
    tab = (unsigned *)jc_keep_block(c, cap, sizeof(unsigned));
    for (seed = 1; seed <= 32; seed++) {
      memset(tab, 0, cap * sizeof(unsigned));
      for (j = 0; j < n->nprops; j++) {
        const jc_prop *p = &n->props_sorted[j];
        size_t pos = jc_name_hash(p->wa, p->wb, p->len, seed * 0x9E3779B9u) &
                     (cap - 1);
        if (tab[pos] != 0) break;
        tab[pos] = (unsigned)(j + 1);
      }
      if (j == n->nprops) {
        n->props_hash = tab;
        n->props_mask = cap - 1;
        n->props_seed = seed * 0x9E3779B9u;
        return;
      }
    }
    cap *= 2;
  }
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
      jc_name_words(n->props_sorted[k].name, len, &n->props_sorted[k].wa,
                    &n->props_sorted[k].wb);
      n->props_sorted[k].name_ref = jc_keep(c);
      n->props_sorted[k].node = jc_compile_sub(c, lua_gettop(L), n,
                                               "properties", name, len, -1);
      k++;
      lua_pop(L, 1);
    }
    if (n->nprops > 1)
      qsort(n->props_sorted, n->nprops, sizeof(jc_prop), jc_prop_cmp);
    for (j = 0; j < n->nprops; j++) n->props_sorted[j].sidx = (long)j;
    if (n->nprops > 4) jc_props_table(c, n);
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
        n->props_sorted[p->sidx].eidx = (long)k;
        n->props[k++] = *p;
      }
    }
    for (j = 0; j < n->nprops; j++) {
      if (placed[j]) continue;
      n->props_sorted[j].eidx = (long)k;
      n->props[k++] = n->props_sorted[j];
    }
    /* first guess of the member order: the evaluation order */
    n->order = (size_t *)jc_keep_block(c, n->nprops + 1, sizeof(size_t));
    for (j = 0; j <= n->nprops; j++) n->order[j] = j;
  }
  lua_pop(L, 1);
  for (i = 0; i < n->nrequired; i++) {
    const jc_prop *p = jc_find_prop(n, n->required[i].name,
                                    n->required[i].len);
    n->required[i].sidx = p != NULL ? p->sidx : -1;
    if (p == NULL) {
      n->nreq_other++;
    } else if (!n->props_sorted[p->sidx].req) {
      n->props_sorted[p->sidx].req = 1;
      n->props[n->props_sorted[p->sidx].eidx].req = 1;
      n->nreq_props++;
    }
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
jc_node *jc_compile_node(jc_cctx *c, int idx, const char *path,
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
    {
      const jc_tv *a = jc_src_member(c, idx, "enum");
      jc_compile_tapes(c, e, cnt, &n->enum_tape, &n->enum_roots, &n->enum_hash,
                       a != NULL && a->kind == JT_ARRAY && a->n == cnt && cnt > 0
                           ? a + 1 : NULL);
    }
    n->nenum = cnt;
    lua_pop(L, 1);
    jc_push_kept(L, n->enum_tape, n->enum_roots, cnt);
    /* each string member's Lua string kept on its own: a value that
    ** matched it is built from it instead of being interned again */
    n->enum_names = (int *)jc_keep_block(c, cnt, sizeof(int));
    n->enum_strs = (jc_estr *)jc_keep_block(c, cnt, sizeof(jc_estr));
    n->nenum_strs = 0;
    for (k = 0; k < cnt; k++) {
      const jc_tv *m = &n->enum_tape->v[n->enum_roots[k]];
      jc_estr *es;
      if (m->kind != JT_STRING) continue;
      es = &n->enum_strs[n->nenum_strs++];
      es->s = m->s;
      es->len = m->u.len;
      es->k = k;
      jc_name_words(m->s, m->u.len, &es->wa, &es->wb);
      lua_rawgeti(L, -1, (lua_Integer)(k + 1));
      n->enum_names[k] = jc_keep(c);
    }
    jc_enum_table(c, n);
    n->enum_ref = jc_keep(c);
  } else {
    lua_pop(L, 1);
  }
  if (c->draft >= JC_D7 && jc_getkw(L, idx, "const") != LUA_TNIL) {
    jc_schema_json(L, -1, path, "const", JC_SCHEMA_MAX_NEST);
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 1);
    jc_compile_tapes(c, lua_gettop(L), 1, &n->const_tape, NULL, NULL,
                     jc_src_member(c, idx, "const"));
    lua_pop(L, 2);
    jc_push_kept(L, n->const_tape, NULL, 1);
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

void jc_node_finish(const jc_validator *v, jc_node *n) {
  unsigned kw = 0, pass;
  int k;
  if (n->ref != NULL) kw |= KW_REF;
  if (n->dynref != NULL) kw |= KW_DYNREF;
  if (n->enum_ref != 0) kw |= KW_ENUM;
  if (n->const_ref != 0) kw |= KW_CONST;
  if (n->nprops > 0 || n->nrequired > 0 || n->npprops > 0 ||
      n->addl != NULL || n->min_props != ABSENT || n->max_props != ABSENT)
    kw |= KW_OBJ;
  if (n->ndeps > 0 || n->pnames != NULL) kw |= KW_OBJ_MORE;
  n->scan_from = n->npprops == 0 && n->addl == NULL && n->nprops > 0 &&
                 n->nprops <= ((size_t)-1) / JC_SCAN_RATIO
                     ? n->nprops * JC_SCAN_RATIO
                     : (size_t)-1;
  if (n->nprefix > 0 || n->items != NULL || n->min_items != ABSENT ||
      n->max_items != ABSENT || n->unique)
    kw |= KW_ARR;
  if (n->contains != NULL) kw |= KW_CONTAINS;
  if (n->min_len != ABSENT || n->max_len != ABSENT || n->pattern != NULL ||
      n->format != JC_FMT_NONE)
    kw |= KW_STR;
  for (k = 0; k < LIM_N; k++) if (n->lim[k].set) kw |= KW_NUM;
  if (n->nallof > 0) kw |= KW_ALLOF;
  if (n->nanyof > 0) kw |= KW_ANYOF;
  if (n->noneof > 0) kw |= KW_ONEOF;
  if (n->not_ != NULL) kw |= KW_NOT;
  if (n->if_ != NULL) kw |= KW_IF;
  if (n->uprops != NULL) kw |= KW_UPROPS;
  if (n->uitems != NULL) kw |= KW_UITEMS;
  n->kw = kw;
  for (k = 0; k < 8; k++) {
    static const unsigned char bit[8] = {
      TB_NULL, TB_BOOLEAN, TB_OBJECT, TB_ARRAY, TB_NUMBER, TB_STRING, 0, 0
    };
    unsigned op = 0;
    if (n->types == 0 || (n->types & bit[k]) != 0) op |= JC_LEAF_TYPE;
    else if (k == JT_NUMBER && (n->types & TB_INTEGER)) op |= JC_LEAF_INT;
    if (kw & KW_ENUM) op |= JC_LEAF_ENUM;
    if (k == JT_STRING && (kw & KW_STR))
      op |= n->pattern == NULL && (n->format == JC_FMT_NONE ||
                                   !v->format_assertion)
                ? JC_LEAF_LEN : JC_LEAF_STR;
    if (k == JT_NUMBER && (kw & KW_NUM)) op |= JC_LEAF_NUM;
    n->leaf[k] = (unsigned char)op;
  }
  n->lim_dbl = !n->lim[LIM_MULT].set;
  for (k = LIM_MIN; k <= LIM_XMAX; k++) {
    const jc_limit *l = &n->lim[k];
    n->lim_d[k] = l->set ? (double)l->d : (double)NAN;
    if (l->set && (l->big != NULL ||
                   (l->isint && (l->i < -((long long)1 << 53) ||
                                 l->i > ((long long)1 << 53)))))
      n->lim_dbl = 0;
  }
  /* kinds that pass on sight: 'true'; or a subschema of 'type' (or
  ** nothing) and, for strings, numbers, only annotations (a 'format' that
  ** is not asserted); 'integer' without 'number' asks the number */
  pass = 0;
  /* a scalar under only type, enum and scalar keywords: a leaf, decided
  ** in place by the verdict pass (JC_LEAF_SHIFT) */
  if (n->boolean < 0 && (kw & ~(KW_ENUM | KW_STR | KW_NUM)) == 0)
    pass = ((1u << JT_NULL) | (1u << JT_BOOLEAN) | (1u << JT_NUMBER) |
            (1u << JT_STRING)) << JC_LEAF_SHIFT;
  if (n->boolean == 1) {
    pass = JC_PASS_FREE | 0x3fu;
  } else if (n->boolean < 0 && (kw & ~(KW_STR | KW_NUM)) == 0) {
    unsigned t = n->types == 0 ? 0x7fu : n->types;
    int str = n->min_len != ABSENT || n->max_len != ABSENT ||
              n->pattern != NULL ||
              (n->format != JC_FMT_NONE && v->format_assertion);
    if (t & TB_NULL) pass |= 1u << JT_NULL;
    if (t & TB_BOOLEAN) pass |= 1u << JT_BOOLEAN;
    if (t & TB_OBJECT) pass |= 1u << JT_OBJECT;
    if (t & TB_ARRAY) pass |= 1u << JT_ARRAY;
    if ((t & TB_NUMBER) && !(kw & KW_NUM)) pass |= 1u << JT_NUMBER;
    if ((t & TB_STRING) && !str) pass |= 1u << JT_STRING;
  }
  n->pass = v->dynamic ? 0 : pass;
  n->vfast = n->boolean < 0 && !v->dynamic &&
             (kw & ~(KW_ENUM | KW_CONST | KW_OBJ | KW_ARR | KW_STR |
                     KW_NUM)) == 0;
}

void jc_node_link(const jc_validator *v, jc_node *n) {
  const jc_node *to = n;
  /* a chain of '$ref'-only subschemas ends: compile rejects reference
  ** cycles that consume no input (jc_check_cycles) */
  while (to->boolean < 0 && to->kw == KW_REF && to->types == 0)
    to = to->ref;
  if (to == n || v->dynamic) return;
  n->jump = to;
  n->pass = to->pass;
}

void jc_node_props_pass(jc_node *n) {
  size_t k;
  for (k = 0; k < n->nprops; k++) {
    n->props[k].pass = n->props[k].node->pass;
    n->props_sorted[k].pass = n->props_sorted[k].node->pass;
  }
}

/* Reject in-place reference cycles ($ref/allOf/... back to the same node
** at the same instance location: validation would never end). */
void jc_check_cycles(jc_cctx *c, jc_node *n) {
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

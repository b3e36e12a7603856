/*
** tape.c: the tape (see tape.h): its memory, the builder of Lua values
** from it, the writer of Lua values into it, and exact number comparison,
** equality, hashing and rendering on it. Nothing here calls the Lua API
** while reading a tape, except the builder and the writer.
*/
#include "tape.h"
#include "utf8.h"

#include <limits.h>
#include <setjmp.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JC_CHUNK_MIN 65536
/* A cached tape keeps at most this many entries' worth of memory between
** uses (a 64 MB document should not pin its tape). */
#define JC_TAPE_KEEP 65536

struct jc_chunk {
  jc_chunk *next;
  size_t size;            /* bytes of the whole block */
};

/* ===================================================================== */
/* Memory                                                                */
/* ===================================================================== */

void jc_tape_nomem(lua_State *L, jc_tape *t) {
  if (t->soft != NULL) longjmp(*(jmp_buf *)t->soft, 1);
  luaL_error(L, "not enough memory");
}

static void *jc_tape_realloc(lua_State *L, jc_tape *t, void *p, size_t osz,
                             size_t nsz) {
  void *q = t->alloc(t->ud, p, osz, nsz);
  if (q == NULL && nsz > 0) jc_tape_nomem(L, t);
  return q;
}

void jc_tape_free(jc_tape *t, void *p, size_t size) {
  if (p != NULL) t->alloc(t->ud, p, size, 0);
}

void jc_tape_grow(lua_State *L, jc_tape *t, void **p, size_t *cap,
                  size_t need, size_t elem) {
  size_t nc = *cap ? *cap : 64;
  while (nc < need) {   /* doubling; by half past 1M elements (less slack) */
    if (nc > ((size_t)-1) / 4 / elem) jc_tape_nomem(L, t);
    nc = nc < ((size_t)1 << 20) ? nc * 2 : nc + nc / 2;
  }
  if (nc > ((size_t)-1) / 2 / elem) jc_tape_nomem(L, t);
  *p = jc_tape_realloc(L, t, *p, *cap * elem, nc * elem);
  *cap = nc;
}

static void jc_free_chunks(jc_tape *t, int keep_first) {
  jc_chunk *c = t->chunks, *next;
  t->chunks = NULL;
  t->cur = NULL;
  t->left = 0;
  while (c != NULL) {
    next = c->next;
    if (keep_first && next == NULL && c->size == JC_CHUNK_MIN) {
      c->next = NULL;
      t->chunks = c;
      t->cur = (char *)(c + 1);
      t->left = c->size - sizeof(jc_chunk);
    } else {
      t->alloc(t->ud, c, c->size, 0);
    }
    c = next;
  }
}

/* __gc (idempotent): frees every block. */
static int jc_tape_gc(lua_State *L) {
  jc_tape *t = (jc_tape *)luaL_checkudata(L, 1, JC_TAPE_MT);
  jc_tape_free(t, t->v, t->cap * sizeof(jc_tv));
  t->v = NULL;
  t->cap = t->n = 0;
  jc_free_chunks(t, 0);
  jc_tape_free(t, t->aux, t->auxcap);
  t->aux = NULL;
  t->auxcap = 0;
  jc_tape_free(t, t->dset, t->dcap * sizeof(jc_dslot));
  t->dset = NULL;
  t->dcap = 0;
  return 0;
}

jc_tape *jc_tape_new(lua_State *L) {
  jc_tape *t = (jc_tape *)jc_newuserdata(L, sizeof(jc_tape));
  memset(t, 0, sizeof *t);
  t->alloc = lua_getallocf(L, &t->ud);
  if (luaL_newmetatable(L, JC_TAPE_MT)) {
    lua_pushcfunction(L, jc_tape_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushliteral(L, JC_TAPE_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  return t;
}

void jc_tape_reset(jc_tape *t) {
  t->n = 0;
  t->text = NULL;
  t->len = 0;
  t->depth = 0;
  t->dn = 0;
  if (t->chunks != NULL) jc_free_chunks(t, 1);
  if (t->cap > JC_TAPE_KEEP) {
    jc_tape_free(t, t->v, t->cap * sizeof(jc_tv));
    t->v = NULL;
    t->cap = 0;
  }
  if (t->dcap > JC_TAPE_KEEP) {
    jc_tape_free(t, t->dset, t->dcap * sizeof(jc_dslot));
    t->dset = NULL;
    t->dcap = 0;
  }
}

jc_tape *jc_tape_acquire(lua_State *L, const char *name) {
  jc_tape *t;
  lua_getfield(L, LUA_REGISTRYINDEX, name);
  t = (jc_tape *)luaL_testudata(L, -1, JC_TAPE_MT);
  if (t == NULL || t->busy) {
    /* none yet, or in use (a reentrant call, or one that raised before
    ** 'jc_tape_release'): a fresh one becomes the cached tape */
    lua_pop(L, 1);
    t = jc_tape_new(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, name);
  }
  jc_tape_reset(t);
  t->busy = 1;
  return t;
}

jc_tape *jc_tape_acquire_at(lua_State *L, int slot) {
  jc_tape *t = (jc_tape *)lua_touserdata(L, slot);   /* ours: a Tape */
  if (t == NULL) {                /* first use: made and cached */
    t = jc_tape_new(L);
    lua_pushvalue(L, -1);
    lua_replace(L, slot);
  } else if (t->busy) {
    /* in use (a reentrant call, or one that raised before its release):
    ** a fresh one, anchored on the stack only; the cached one stays
    ** where it is, anchored for the call that uses it */
    t = jc_tape_new(L);
  } else {
    lua_pushvalue(L, slot);
  }
  jc_tape_reset(t);
  t->busy = 1;
  return t;
}

void jc_tape_release(jc_tape *t) {
  jc_tape_reset(t);
  t->busy = 0;
}

void jc_tape_grow_entries(lua_State *L, jc_tape *t) {
  jc_tape_grow(L, t, (void **)&t->v, &t->cap, t->n + 1, sizeof(jc_tv));
}

size_t jc_tv_off(const jc_tape *t, size_t i) {
  const jc_tv *v = &t->v[i];
  if (t->text == NULL || v->s == NULL) return JC_NOOFF;
  if (v->kind == JT_STRING) {
    if (v->flags & JC_TF_ESC) return v->n == 0xffffffffu ? JC_NOOFF : v->n;
    return (size_t)(v->s - t->text) - 1;
  }
  return (size_t)(v->s - t->text);
}

char *jc_tape_bytes(lua_State *L, jc_tape *t, size_t n) {
  char *p;
  if (n > t->left) {
    size_t size = n + sizeof(jc_chunk);
    jc_chunk *c;
    if (n > ((size_t)-1) / 2) jc_tape_nomem(L, t);
    if (size < JC_CHUNK_MIN) size = JC_CHUNK_MIN;
    c = (jc_chunk *)jc_tape_realloc(L, t, NULL, 0, size);
    c->size = size;
    c->next = t->chunks;
    t->chunks = c;
    t->cur = (char *)(c + 1);
    t->left = size - sizeof(jc_chunk);
  }
  p = t->cur;
  t->cur += n;
  t->left -= n;
  return p;
}

void *jc_tape_aux(lua_State *L, jc_tape *t, size_t n) {
  if (n > t->auxcap) {
    size_t nc = t->auxcap ? t->auxcap : 1024;
    while (nc < n) {
      if (nc > ((size_t)-1) / 4) jc_tape_nomem(L, t);
      nc *= 2;
    }
    t->aux = jc_tape_realloc(L, t, t->aux, t->auxcap, nc);
    t->auxcap = nc;
  }
  return t->aux;
}

/* ===================================================================== */
/* Tape -> Lua                                                           */
/* ===================================================================== */

typedef struct jc_bframe {
  size_t end;       /* index past the container's last child */
  int table;        /* stack index of its table */
  int order;        /* stack index of its __order list, 0 = none */
  int is_object;
  lua_Integer count;
} jc_bframe;

static JC_HOT_INLINE void jc_push_scalar(lua_State *L, const jc_tv *v,
                                         int names) {
  switch (v->kind) {
    case JT_STRING:
      if (names != 0 && (v->flags & JC_TF_NAME))
        lua_rawgeti(L, names, (int)v->n);
      else
        lua_pushlstring(L, v->s, v->u.len);
      break;
    case JT_NUMBER:
#if JC_HAVE_INTEGER
      if (v->flags & JC_TF_INT) lua_pushinteger(L, (lua_Integer)v->u.i);
#else
      if (v->flags & JC_TF_INT) lua_pushnumber(L, (lua_Number)v->u.i);
#endif
      else lua_pushnumber(L, (lua_Number)v->u.d);
      break;
    case JT_BOOLEAN: lua_pushboolean(L, (v->flags & JC_TF_TRUE) != 0); break;
    default: jc_pushnull(L); break;
  }
}

/* Push the member name at entry 'k'. [-0, +1, m] */
static JC_HOT_INLINE void jc_push_name(lua_State *L, const jc_tv *k, int names) {
  if (names != 0 && (k->flags & JC_TF_NAME)) lua_rawgeti(L, names, (int)k->n);
  else lua_pushlstring(L, k->s, k->u.len);
}

void jc_tape_copy(lua_State *L, jc_tape *t, const jc_tape *s, size_t i) {
  size_t end = jc_tv_next(s, i), base = t->n, j;
  for (j = i; j < end; j++) {
    size_t e = jc_tape_add(L, t);
    t->v[e] = s->v[j];
    if (s->v[j].kind == JT_OBJECT || s->v[j].kind == JT_ARRAY)
      t->v[e].u.end = s->v[j].u.end - i + base;
  }
  if (s->depth > t->depth) t->depth = s->depth;
}

size_t jc_tape_too_deep(const jc_tape *t, size_t max_depth, jc_seg *segs,
                        size_t *open) {
  const jc_tv *v = t->v;
  size_t lvl = 1, i = 1;     /* 'lvl': containers open around entry 'i' */
  if (t->depth <= max_depth || t->n == 0 ||
      (v[0].kind != JT_OBJECT && v[0].kind != JT_ARRAY))
    return 0;
  open[0] = 0;
  segs[0].index = (size_t)-1;
  while (lvl > 0) {
    const jc_tv *c = &v[open[lvl - 1]];
    jc_seg *s = &segs[lvl - 1];
    if (i >= c->u.end) {     /* the container at this level is closed */
      lvl--;
      continue;
    }
    if (c->kind == JT_OBJECT) {
      s->key = v[i].s;       /* the member name, then its value */
      s->len = v[i].u.len;
      i++;
    } else {
      s->key = NULL;
      s->index++;            /* from (size_t)-1 to 0 on the first item */
    }
    if (lvl > max_depth) return lvl;
    if ((v[i].kind == JT_OBJECT || v[i].kind == JT_ARRAY) &&
        v[i].u.end > i + 1) {
      open[lvl] = i;
      segs[lvl].index = (size_t)-1;
      lvl++;
      i++;
    } else {
      i = jc_tv_after(v, i);
    }
  }
  return 0;
}

void jc_tape_push_lua(lua_State *L, jc_tape *t, size_t i, int keep_order,
                      int names, int map) {
  jc_bframe *fr;
  size_t nf = 0, cap = t->depth + 1;
  int amt;
  const jc_tv *v;
  if (t->v[i].kind != JT_OBJECT && t->v[i].kind != JT_ARRAY) {
    jc_push_scalar(L, &t->v[i], names);
    return;
  }
  if (cap > ((size_t)-1) / sizeof(jc_bframe)) luaL_error(L, "not enough memory");
  fr = (jc_bframe *)jc_tape_aux(L, t, cap * sizeof(jc_bframe));
  luaL_checkstack(L, 4, "jsoncontract.decode");
  luaL_getmetatable(L, JC_ARRAY_MT);
  amt = lua_gettop(L);
  for (;;) {
    v = &t->v[i];
    if (v->kind == JT_ARRAY || v->kind == JT_OBJECT) {
      jc_bframe *f;
      if (!lua_checkstack(L, 6)) luaL_error(L, "value too deep (Lua stack)");
      if (v->kind == JT_ARRAY) {
        lua_createtable(L, (int)(v->n < 0x7fffffff ? v->n : 0), 0);
        lua_pushvalue(L, amt);
        lua_setmetatable(L, -2);
      } else {
        lua_createtable(L, 0, (int)(v->n < 0x7fffffff ? v->n : 0));
        if (keep_order) {
          lua_createtable(L, 0, 1);
          lua_createtable(L, (int)(v->n < 0x7fffffff ? v->n : 0), 0);
          lua_pushvalue(L, amt);
          lua_setmetatable(L, -2);
          lua_pushvalue(L, -1);
          lua_setfield(L, -3, "__order");
          lua_insert(L, -2);
          lua_setmetatable(L, -3);   /* stack: table, order */
        }
      }
      if (map != 0) {
        lua_pushvalue(L, keep_order && v->kind == JT_OBJECT ? -2 : -1);
        lua_pushinteger(L, (lua_Integer)i);
        lua_rawset(L, map);
      }
      if (v->u.end == i + 1) {       /* empty */
        if (keep_order && v->kind == JT_OBJECT) lua_pop(L, 1);
        i++;
        goto store;
      }
      f = &fr[nf++];
      f->end = v->u.end;
      f->is_object = v->kind == JT_OBJECT;
      f->count = 0;
      f->order = 0;
      if (f->is_object && keep_order) {
        f->order = lua_gettop(L);
        f->table = f->order - 1;
      } else {
        f->table = lua_gettop(L);
      }
      i++;
      if (f->is_object) {
        jc_push_name(L, &t->v[i], names);
        if (f->order) {
          lua_pushvalue(L, -1);
          lua_rawseti(L, f->order, ++f->count);
        }
        i++;
      }
      continue;
    }
    jc_push_scalar(L, v, names);
    i++;
store:
    if (nf == 0) break;
    {
      jc_bframe *f = &fr[nf - 1];
      if (f->is_object) lua_rawset(L, f->table);
      else lua_rawseti(L, f->table, ++f->count);
      if (i == f->end) {
        if (f->order) lua_pop(L, 1);
        nf--;
        goto store;
      }
      if (f->is_object) {
        jc_push_name(L, &t->v[i], names);
        if (f->order) {
          lua_pushvalue(L, -1);
          lua_rawseti(L, f->order, ++f->count);
        }
        i++;
      }
    }
  }
  lua_remove(L, amt);
}

/* ===================================================================== */
/* Lua -> tape                                                           */
/* ===================================================================== */

typedef struct jc_wctx {
  lua_State *L;
  jc_tape *t;
  size_t max_depth;
  jc_seg *segs;
  size_t depth;
  const void *amt;
  int *path;              /* stack indexes of the tables on the current path */
  const void **seen;      /* their identities, taken when needed (cycles) */
  long budget;            /* entries left ('*budget' of the caller) */
  int share;              /* stack index: table -> entry written, or 0 */
  size_t found;           /* depth where max_depth was passed */
} jc_wctx;

/* Raise about the value at segs[0..depth): 'fmt' gets 'what', " at " and
** the JSON Pointer (both "" at the root), then 'arg'. */
static int jc_w_raise(jc_wctx *w, const char *fmt, const char *what,
                      const char *arg) {
  lua_State *L = w->L;
  luaL_Buffer b;
  size_t i, j;
  const char *p;
  w->t->busy = 0;       /* the raise skips the caller's release */
  luaL_buffinit(L, &b);
  for (i = 0; i < w->depth; i++) {
    const jc_seg *s = &w->segs[i];
    luaL_addchar(&b, '/');
    if (s->key != NULL) {
      for (j = 0; j < s->len; j++) {
        if (s->key[j] == '~') luaL_addstring(&b, "~0");
        else if (s->key[j] == '/') luaL_addstring(&b, "~1");
        else luaL_addchar(&b, s->key[j]);
      }
    } else {
      char num[32];
      snprintf(num, sizeof num, "%lu", (unsigned long)s->index);
      luaL_addstring(&b, num);
    }
  }
  luaL_pushresult(&b);
  {
    /* a message names its place, not a 10 MB key: the pointer is cut at a
    ** character boundary (keys written so far are UTF-8) */
    size_t plen, n = 200;
    p = lua_tolstring(L, -1, &plen);
    if (plen > n) {
      while (n > 0 && (((unsigned char)p[n]) & 0xC0) == 0x80) n--;
      lua_pushlstring(L, p, n);
      lua_pushliteral(L, "...");
      lua_concat(L, 2);
      p = lua_tostring(L, -1);
    }
  }
  return luaL_error(L, fmt, what, *p != '\0' ? " at " : "", p, arg);
}

/* A table met at max_depth: a cycle when some table repeats on the path
** (raise at its second occurrence), else too deep. The tables on the path
** are still on the stack (each below its children): their identities are
** taken here, not on every table written. */
static int jc_w_deep(jc_wctx *w) {
  size_t d, j;
  for (d = 0; d <= w->depth; d++)
    w->seen[d] = lua_topointer(w->L, w->path[d]);
  for (d = 1; d <= w->depth; d++)
    for (j = 0; j < d; j++)
      if (w->seen[j] == w->seen[d]) {
        w->depth = d;
        return jc_w_raise(w, "%s%s%s is %s, not JSON", "value",
                          "a table that contains itself (a cycle)");
      }
  w->found = w->depth + 1;   /* the child's segment is set */
  return 1;
}

static int jc_w_table(jc_wctx *w, int idx, int top, size_t me);

/* Write the value of Lua type 'type' at stack index 'idx': the root's
** index, or -1 for a child, which is on top, at absolute index 'top' (the
** root's 'top' is the stack top). Inlined in the loops of 'jc_w_table'
** (scalars cost no call); tables recurse through it. */
static JC_HOT_INLINE int jc_w_value(jc_wctx *w, int idx, int type, int top) {
  lua_State *L = w->L;
  jc_tape *t = w->t;
  jc_tv *e;
  size_t me;
  if (--w->budget < 0) return 2;
  me = jc_tape_add(L, t);
  e = &t->v[me];   /* valid until the next entry is added */
  switch (type) {
    case LUA_TSTRING:
      e->kind = JT_STRING;
      e->s = lua_tolstring(L, idx, &e->u.len);
      /* JSON text is UTF-8 (RFC 8259 §8.1): a Lua string that is not is no
      ** JSON string, as core.encode and the parser say too */
      if (!jc_utf8_valid((const unsigned char *)e->s, e->u.len))
        return jc_w_raise(w, "%s%s%s is %s, not JSON", "string",
                          "not UTF-8 text");
      return 0;
    case LUA_TBOOLEAN:
      e->kind = JT_BOOLEAN;
      e->flags = lua_toboolean(L, idx) ? JC_TF_TRUE : 0;
      return 0;
    case LUA_TNUMBER: {
      lua_Number d;
      e->kind = JT_NUMBER;
#if JC_HAVE_INTEGER
      if (lua_isinteger(L, idx)) {
        e->flags = JC_TF_INT;
        e->u.i = (long long)lua_tointeger(L, idx);
        return 0;
      }
#endif
      d = lua_tonumber(L, idx);
      if (d != d)
        jc_w_raise(w, "%s%s%s is %s, not JSON", "value", "NaN");
      if (d - d != 0)
        jc_w_raise(w, "%s%s%s is %s, not JSON", "value",
                   d > 0 ? "infinity" : "-infinity");
      e->u.d = (double)d;
      return 0;
    }
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) {
        e->kind = JT_NULL;
        return 0;
      }
      break;
    case LUA_TTABLE:   /* a child is on top: its index is 'top' */
      return jc_w_table(w, idx < 0 ? top : idx, top, me);
    default:
      break;
  }
  return jc_w_raise(w, "%s%s%s of type %s is not JSON", "value",
                    lua_typename(L, type));
}

/* Write the table at stack index 'idx' (entry 'me' made); 'top' is the
** stack top: an item goes at top + 1, a key at top + 1 and its value at
** top + 2 (the same stack use per level as ever: the Lua stack bound,
** "value too deep (Lua stack)", is met at the same depth). Returns with
** the stack as it found it (the loops pop a child's slot with lua_pop,
** the cheaper form on every Lua), but when it raises. */
static int jc_w_table(jc_wctx *w, int idx, int top, size_t me) {
  lua_State *L = w->L;
  jc_tape *t = w->t;
  int marked = 0, r, type;
  size_t n, count, i;
  jc_seg *s;
  w->path[w->depth] = idx;
  if (w->share) {   /* a table already written whole (a DAG): a reference */
    lua_pushvalue(L, idx);
    lua_rawget(L, w->share);
    if (lua_type(L, -1) == LUA_TNUMBER) {
      t->v[me].kind = JT_REF;
      t->v[me].u.len = (size_t)lua_tonumber(L, -1);
      lua_pop(L, 1);
      return 0;
    }
    lua_pop(L, 1);
  }
  if (!lua_checkstack(L, 6)) {
    t->busy = 0;
    luaL_error(L, "value too deep (Lua stack)");
  }
  if (w->depth + 1 > t->depth) t->depth = w->depth + 1;
  if (lua_getmetatable(L, idx)) {
    marked = lua_topointer(L, -1) == w->amt;
    lua_settop(L, top);
  }
  n = (size_t)jc_rawlen(L, idx);
  s = &w->segs[w->depth];
  if (marked || n > 0) {
    /* Are the keys 1..n and nothing else? Every key is looked at: the
    ** traversal order is the table's, so another key may come before n as
    ** well as after it (on Lua 5.4, 1..n written in a constructor live in
    ** the hash part). Marked, another key is an error; unmarked, the
    ** table is an array when there is none (the rawgeti walk below finds
    ** any hole). */
    int other = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
      lua_Number k;
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TNUMBER || (k = lua_tonumber(L, -1)) < 1 ||
          k > (lua_Number)n || k != floor(k)) {
        other = 1;
        break;
      }
    }
    lua_settop(L, top);
    if (marked && other)
      return jc_w_raise(w, "%s%s%s has keys other than 1..n, not JSON",
                        "array", "");
    marked = !other;
    if (!marked) {   /* an object then, whose keys must be strings */
      lua_pushnil(L);
      while (lua_next(L, idx) != 0) {
        lua_pop(L, 1);
        type = lua_type(L, -1);
        if (type != LUA_TSTRING) {
          s->key = NULL;
          s->index = 0;
          return jc_w_raise(w, "%s%s%s has a key of type %s, not JSON",
                            "object", lua_typename(L, type));
        }
      }
    }
  }
  if (marked) {
    t->v[me].kind = JT_ARRAY;
    if (n > 0xffffffffu) { t->busy = 0; luaL_error(L, "array too long"); }
    t->v[me].n = (unsigned)n;
    s->key = NULL;
    s->len = 0;
    for (i = 1; i <= n; i++) {
      s->index = i - 1;
      type = jc_rawgeti_type(L, idx, (lua_Integer)i);
      if (type == LUA_TNIL)
        return jc_w_raise(w, "%s%s%s has keys other than 1..n, not JSON",
                          "array", "");
      if (w->depth >= w->max_depth) { lua_settop(L, top); return jc_w_deep(w); }
      w->depth++;
      r = jc_w_value(w, -1, type, top + 1);
      w->depth--;
      lua_pop(L, 1);
      if (r) return r;
    }
  } else {
    t->v[me].kind = JT_OBJECT;
    count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
      jc_tv *e;
      size_t k;
      type = lua_type(L, -2);
      if (type != LUA_TSTRING) {
        s->key = NULL;
        s->index = 0;
        lua_settop(L, top + 1);
        return jc_w_raise(w, "%s%s%s has a key of type %s, not JSON",
                          "object", lua_typename(L, type));
      }
      {
        size_t kl;
        const char *ks = lua_tolstring(L, -2, &kl);
        if (!jc_utf8_valid((const unsigned char *)ks, kl)) {
          s->key = NULL;      /* its bytes stay out of the message */
          s->index = 0;
          lua_settop(L, top + 1);
          return jc_w_raise(w, "%s%s%s has a key that is %s, not JSON",
                            "object", "not UTF-8 text");
        }
      }
      k = jc_tape_add(L, t);   /* may move t->v: then the address */
      e = &t->v[k];
      e->kind = JT_STRING;
      s->key = e->s = lua_tolstring(L, -2, &s->len);
      e->u.len = s->len;
      s->index = 0;
      count++;
      if (w->depth >= w->max_depth) { lua_settop(L, top); return jc_w_deep(w); }
      w->depth++;
      r = jc_w_value(w, -1, lua_type(L, -1), top + 2);
      w->depth--;
      lua_pop(L, 1);
      if (r) { lua_settop(L, top); return r; }
    }
    if (count > 0xffffffffu) { t->busy = 0; luaL_error(L, "object too large"); }
    t->v[me].n = (unsigned)count;
  }
  t->v[me].u.end = t->n;
  if (w->share) {
    lua_pushvalue(L, idx);
    lua_pushnumber(L, (lua_Number)me);
    lua_rawset(L, w->share);
  }
  return 0;
}

#ifndef JC_SHARE_AFTER
#define JC_SHARE_AFTER 100000L   /* entries before shared tables are seen */
#endif

static int jc_write_pass(lua_State *L, jc_tape *t, int idx, size_t max_depth,
                         jc_seg *segs, size_t *depth, long *budget,
                         int share) {
  jc_wctx w;
  int r;
  size_t psize;
  w.L = L;
  w.t = t;
  w.max_depth = max_depth;
  w.segs = segs;
  w.depth = 0;
  w.found = 0;
  w.budget = *budget;
  w.share = share;
  if (t->amt == NULL) {   /* once per tape: the registry's, like v->amt */
    luaL_getmetatable(L, JC_ARRAY_MT);
    t->amt = lua_topointer(L, -1);
    lua_pop(L, 1);
  }
  w.amt = t->amt;
  if (max_depth > ((size_t)-1) / (sizeof(void *) + sizeof(int)) - 2)
    luaL_error(L, "not enough memory");
  psize = (max_depth + 2) * (sizeof(void *) + sizeof(int));
  /* not cleared: a table sets its entry on the way down, and only the
  ** entries of the tables above it are read ('jc_w_deep') */
  w.seen = (const void **)jc_tape_aux(L, t, psize);
  w.path = (int *)(void *)(w.seen + max_depth + 2);
  r = jc_w_value(&w, idx, lua_type(L, idx), lua_gettop(L));
  *budget = w.budget;
  *depth = w.found;
  return r;
}

int jc_tape_write_lua(lua_State *L, jc_tape *t, int idx, size_t max_depth,
                      jc_seg *segs, size_t *depth, long *budget) {
  long first = *budget < JC_SHARE_AFTER ? *budget : JC_SHARE_AFTER;
  size_t start = t->n;
  int r;
  idx = jc_absindex(L, idx);
  /* First without looking for shared tables (no Lua table lookups); a
  ** value that grows past JC_SHARE_AFTER entries is written again with
  ** every table remembered, so a table shared on many branches (a DAG,
  ** 2^n paths) is written once and referenced. */
  r = jc_write_pass(L, t, idx, max_depth, segs, depth, &first, 0);
  if (r != 2 || *budget <= JC_SHARE_AFTER) {
    if (r == 2) *budget = -1;
    return r;
  }
  t->n = start;
  lua_newtable(L);
  r = jc_write_pass(L, t, idx, max_depth, segs, depth, budget,
                    lua_gettop(L));
  lua_pop(L, 1);
  return r;
}

/* ===================================================================== */
/* Numbers                                                               */
/* ===================================================================== */

#define JC_2P63 9223372036854775808.0

/* Compare the digits of two non-negative integer strings (no leading
** zeros). */
static int jc_digits_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int c;
  if (al != bl) return al < bl ? -1 : 1;
  c = memcmp(a, b, al);
  return (c > 0) - (c < 0);
}

/* A BIG number's sign and magnitude digits. */
static int jc_big_digits(const jc_tv *a, const char **d, size_t *len) {
  int neg = a->s[0] == '-';
  *d = a->s + neg;
  *len = a->n - (size_t)neg;
  return neg;
}

/* Compare BIG 'a' with the double 'd'. */
static int jc_big_vs_double(const jc_tv *a, double d) {
  const char *ad;
  size_t al;
  char buf[400];
  int neg = jc_big_digits(a, &ad, &al), c;
  double m = fabs(d);
  if (neg != (d < 0) && !(d == 0)) return neg ? -1 : 1;
  if (d == 0) return neg ? -1 : 1;
  if (m < JC_2P63) return neg ? -1 : 1;   /* |a| >= 2^63 > |d| */
  snprintf(buf, sizeof buf, "%.0f", m);   /* m is an integer: exact */
  c = jc_digits_cmp(ad, al, buf, strlen(buf));
  return neg ? -c : c;
}

static int jc_int_vs_double(long long i, double d) {
  long long t;
  double frac;
  if (d >= JC_2P63) return -1;
  if (d < -JC_2P63) return 1;
  t = (long long)d;               /* in range: exact truncation */
  if (i < t) return -1;
  if (i > t) return 1;
  frac = d - (double)t;           /* exact */
  return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

int jc_tv_numcmp(const jc_tv *a, const jc_tv *b) {
  if ((a->flags & JC_TF_INT) && (b->flags & JC_TF_INT))
    return (a->u.i > b->u.i) - (a->u.i < b->u.i);
  if (a->flags & JC_TF_BIG) {
    if (b->flags & JC_TF_BIG) {
      const char *ad, *bd;
      size_t al, bl;
      int an = jc_big_digits(a, &ad, &al), bn = jc_big_digits(b, &bd, &bl), c;
      if (an != bn) return an ? -1 : 1;
      c = jc_digits_cmp(ad, al, bd, bl);
      return an ? -c : c;
    }
    if (b->flags & JC_TF_INT) return a->s[0] == '-' ? -1 : 1;
    return jc_big_vs_double(a, b->u.d);
  }
  if (b->flags & JC_TF_BIG) return -jc_tv_numcmp(b, a);
  if (a->flags & JC_TF_INT) return jc_int_vs_double(a->u.i, b->u.d);
  if (b->flags & JC_TF_INT) return -jc_int_vs_double(b->u.i, a->u.d);
  return (a->u.d > b->u.d) - (a->u.d < b->u.d);
}

int jc_tv_integral(const jc_tv *a) {
  if (a->flags & (JC_TF_INT | JC_TF_BIG)) return 1;
  return a->u.d == floor(a->u.d) && a->u.d - a->u.d == 0;
}

/* The shortest decimal form of a double as mantissa * 10^exp (mantissa
** without trailing zeros). */
static void jc_decimal_double(double d, jc_u64 *mant, int *exp) {
  char buf[64], *p;
  int prec, e, nd = 0;
  jc_u64 m = 0;
  d = fabs(d);
  for (prec = 14; prec <= 16; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  for (p = buf; *p != 'e' && *p != '\0'; p++)
    if (*p >= '0' && *p <= '9') { m = m * 10 + (unsigned)(*p - '0'); nd++; }
  e = *p == 'e' ? atoi(p + 1) : 0;
  e -= nd - 1;
  while (m != 0 && m % 10 == 0) { m /= 10; e++; }
  *mant = m;
  *exp = e;
}

/* x * 10 mod b without overflow (x < b). */
static jc_u64 jc_mul10mod(jc_u64 x, jc_u64 b) {
  jc_u64 y = x;
  int k;
  x = 0;
  for (k = 0; k < 10; k++) x = x >= b - y ? x - (b - y) : x + y;
  return x;
}

int jc_tv_multiple(const jc_tv *a, const jc_tv *b) {
  jc_u64 mb, x = 0;
  int eb, ea = 0, k;
  if ((a->flags & JC_TF_INT) && (b->flags & JC_TF_INT)) {
    if (b->u.i == -1 || b->u.i == 1) return 1;
    if (b->u.i == 0) return 0;
    return a->u.i % b->u.i == 0;
  }
  if (b->flags & JC_TF_INT) {
    jc_u64 m = b->u.i < 0 ? (jc_u64)0 - (jc_u64)b->u.i : (jc_u64)b->u.i;
    eb = 0;
    while (m != 0 && m % 10 == 0) { m /= 10; eb++; }
    mb = m;
  } else if (b->flags & JC_TF_BIG) {
    /* an integer beyond int64 (schema text): its digits less the trailing
    ** zeros, exact when they fit 64 bits (1e20 is 1 * 10^20); more
    ** significant digits than that are taken as its nearest double, as a
    ** schema written in Lua gives it */
    const char *d;
    size_t len, i;
    jc_u64 m = 0;
    jc_big_digits(b, &d, &len);
    eb = 0;
    while (len > 1 && d[len - 1] == '0') { len--; eb++; }
    for (i = 0; i < len; i++) {
      jc_u64 dig = (jc_u64)(d[i] - '0');
      if (m > ((jc_u64)-1 - dig) / 10) break;
      m = m * 10 + dig;
    }
    if (i == len) mb = m;
    else jc_decimal_double(b->u.d, &mb, &eb);
  } else {
    if (b->u.d - b->u.d != 0) return 0;
    jc_decimal_double(b->u.d, &mb, &eb);
  }
  if (mb == 0) return 0;
  if (a->flags & JC_TF_BIG) {          /* digits mod mb, then the exponent */
    const char *d;
    size_t len, i;
    jc_big_digits(a, &d, &len);
    while (len > 1 && d[len - 1] == '0') { len--; ea++; }
    for (i = 0; i < len; i++) {
      x = jc_mul10mod(x, mb);
      {
        jc_u64 dig = (jc_u64)(d[i] - '0') % mb;
        x = x >= mb - dig ? x - (mb - dig) : x + dig;
      }
    }
  } else {
    jc_u64 ma;
    if (a->flags & JC_TF_INT) {
      ma = a->u.i < 0 ? (jc_u64)0 - (jc_u64)a->u.i : (jc_u64)a->u.i;
      while (ma != 0 && ma % 10 == 0) { ma /= 10; ea++; }
    } else {
      if (a->u.d - a->u.d != 0) return 0;
      jc_decimal_double(a->u.d, &ma, &ea);
    }
    if (ma == 0) return 1;
    x = ma % mb;
  }
  if (x == 0 && ea >= eb) return 1;
  if (ea < eb) return 0;              /* a has no factor 10 to spare */
  for (k = 0; k < ea - eb && x != 0; k++) x = jc_mul10mod(x, mb);
  return x == 0;
}

/* ===================================================================== */
/* Equality and hashing                                                  */
/* ===================================================================== */

/* Equal strings: the lengths, then the bytes (jc_bytes_eq). */
static JC_INLINE int jc_key_eq(const jc_tv *a, const jc_tv *b) {
  return a->u.len == b->u.len && jc_bytes_eq(a->s, b->s, a->u.len);
}

static JC_NOINLINE int jc_tv_equal_walk(const jc_tape *ta, size_t a,
                                        const jc_tape *tb, size_t b,
                                        long *budget);

/* See tape.h. Each entry visited costs one unit of '*budget'; a value met
** twice through the same shared table (JT_REF on both sides to one entry)
** is equal without a walk: a value equals itself, and a DAG of shared
** tables would otherwise be walked once per path, exponentially many.
** Scalars (most enum members and uniqueItems items) are decided here;
** containers by the recursive walk. */
int jc_tv_equal_b(const jc_tape *ta, size_t a, const jc_tape *tb, size_t b,
                  long *budget) {
  const jc_tv *x, *y;
  a = jc_tv_deref(ta, a);
  b = jc_tv_deref(tb, b);
  if (ta == tb && a == b) return 1;
  if (--*budget < 0) return 0;
  x = &ta->v[a];
  y = &tb->v[b];
  if (x->kind != y->kind) return 0;
  switch (x->kind) {
    case JT_NULL: return 1;
    case JT_BOOLEAN: return x->flags == y->flags;
    case JT_STRING: return jc_key_eq(x, y);
    case JT_NUMBER: return jc_tv_numcmp(x, y) == 0;
    case JT_ARRAY: case JT_OBJECT:
      return jc_tv_equal_walk(ta, a, tb, b, budget);
    default: return 0;
  }
}

/* jc_tv_equal_b of two containers of one kind, 'a' and 'b' dereferenced,
** their unit of '*budget' charged. */
static JC_NOINLINE int jc_tv_equal_walk(const jc_tape *ta, size_t a,
                                        const jc_tape *tb, size_t b,
                                        long *budget) {
  const jc_tv *x = &ta->v[a], *y = &tb->v[b];
  size_t i, j;
  switch (x->kind) {
    case JT_ARRAY:
      if (x->n != y->n) return 0;
      for (i = a + 1, j = b + 1; i < x->u.end;
           i = jc_tv_next(ta, i), j = jc_tv_next(tb, j))
        if (!jc_tv_equal_b(ta, i, tb, j, budget)) return 0;
      return 1;
    case JT_OBJECT:
      if (x->n != y->n) return 0;
      for (i = a + 1; i < x->u.end; i = jc_tv_next(ta, i + 1)) {
        int found = 0;
        for (j = b + 1; j < y->u.end; j = jc_tv_next(tb, j + 1)) {
          if (jc_key_eq(&ta->v[i], &tb->v[j])) {
            found = jc_tv_equal_b(ta, i + 1, tb, j + 1, budget);
            break;
          }
        }
        if (!found) return 0;
      }
      return 1;
    default: return 0;
  }
}

int jc_tv_equal(const jc_tape *ta, size_t a, const jc_tape *tb, size_t b) {
  long budget = LONG_MAX;   /* callers whose values are bounded trees */
  return jc_tv_equal_b(ta, a, tb, b, &budget);
}

static jc_u64 jc_mix(jc_u64 h) {   /* the splitmix64 finalizer */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

static jc_u64 jc_hash_bytes(const char *s, size_t len) {   /* FNV-1a */
  jc_u64 h = 0xcbf29ce484222325ULL;
  size_t i;
  for (i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ULL;
  }
  return jc_mix(h ^ len);
}

jc_u64 jc_tv_hash(const jc_tape *t, size_t i, long *budget) {
  const jc_tv *x;
  jc_u64 h, bits;
  size_t j;
  double d;
  i = jc_tv_deref(t, i);
  x = &t->v[i];
  --*budget;
  switch (x->kind) {
    case JT_NULL: return 0x53ULL;
    case JT_BOOLEAN: return (x->flags & JC_TF_TRUE) ? 0x51ULL : 0x52ULL;
    case JT_STRING: return jc_hash_bytes(x->s, x->u.len);
    case JT_NUMBER:
      /* by the nearest double: equal numbers have equal doubles */
      d = (x->flags & JC_TF_INT) ? (double)x->u.i : x->u.d;
      if (d == 0) d = 0;   /* -0 */
      memcpy(&bits, &d, sizeof bits);
      return jc_mix(bits ^ 0x55ULL);
    case JT_ARRAY:
      h = jc_mix(0x58ULL ^ x->n);
      for (j = i + 1; j < x->u.end && *budget >= 0; j = jc_tv_next(t, j))
        h = jc_mix(h ^ jc_tv_hash(t, j, budget));
      return h;
    case JT_OBJECT:
      h = 0x59ULL ^ x->n;
      for (j = i + 1; j < x->u.end && *budget >= 0; j = jc_tv_next(t, j + 1))
        h += jc_mix(jc_hash_bytes(t->v[j].s, t->v[j].u.len) * 31 +
                    jc_tv_hash(t, j + 1, budget));
      return h;
    default: return 0;
  }
}

/* ===================================================================== */
/* Rendering                                                             */
/* ===================================================================== */

void jc_rb_add(jc_rbuf *r, const char *s, size_t len) {
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

void jc_render_string(jc_rbuf *r, const char *s, size_t len) {
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

void jc_fmt_double(double d, char *out, size_t outsz) {
  int prec;
  if (d != d || d - d != 0) { snprintf(out, outsz, "null"); return; }
  for (prec = 15; prec <= 17; prec++) {
    snprintf(out, outsz, "%.*g", prec, d);
    if (strtod(out, NULL) == d) break;
  }
}

void jc_tv_fmt_number(const jc_tv *a, char *out, size_t outsz) {
  if (a->flags & JC_TF_INT) snprintf(out, outsz, "%lld", a->u.i);
  else if ((a->flags & JC_TF_BIG) && a->n < outsz)
    snprintf(out, outsz, "%.*s", (int)a->n, a->s);
  else jc_fmt_double(a->u.d, out, outsz);
}

void jc_tv_render(const jc_tape *t, size_t i, jc_rbuf *r, int depth) {
  const jc_tv *x;
  char num[64];
  size_t j;
  i = jc_tv_deref(t, i);
  x = &t->v[i];
  if (r->full) return;
  switch (x->kind) {
    case JT_NULL: jc_rb_add(r, "null", 4); break;
    case JT_BOOLEAN:
      if (x->flags & JC_TF_TRUE) jc_rb_add(r, "true", 4);
      else jc_rb_add(r, "false", 5);
      break;
    case JT_NUMBER:
      jc_tv_fmt_number(x, num, sizeof num);
      jc_rb_add(r, num, strlen(num));
      break;
    case JT_STRING: jc_render_string(r, x->s, x->u.len); break;
    case JT_ARRAY:
      if (depth <= 0) { jc_rb_add(r, "[...]", 5); break; }
      jc_rb_add(r, "[", 1);
      for (j = i + 1; j < x->u.end && !r->full; j = jc_tv_next(t, j)) {
        if (j > i + 1) jc_rb_add(r, ",", 1);
        jc_tv_render(t, j, r, depth - 1);
      }
      jc_rb_add(r, "]", 1);
      break;
    case JT_OBJECT: {
      /* selection of the next key in byte order: O(k^2) but bounded by
      ** the render size */
      const jc_tv *last = NULL;
      int firstm = 1;
      if (depth <= 0) { jc_rb_add(r, "{...}", 5); break; }
      jc_rb_add(r, "{", 1);
      while (!r->full) {
        size_t best = 0;
        for (j = i + 1; j < x->u.end; j = jc_tv_next(t, j + 1)) {
          const jc_tv *k = &t->v[j];
          size_t m;
          int cl = 1, cb = -1;
          if (last != NULL) {
            m = k->u.len < last->u.len ? k->u.len : last->u.len;
            cl = memcmp(k->s, last->s, m);
            if (cl == 0) cl = (k->u.len > last->u.len) - (k->u.len < last->u.len);
          }
          if (best != 0) {
            const jc_tv *b = &t->v[best];
            m = k->u.len < b->u.len ? k->u.len : b->u.len;
            cb = memcmp(k->s, b->s, m);
            if (cb == 0) cb = (k->u.len > b->u.len) - (k->u.len < b->u.len);
          }
          if (cl > 0 && cb < 0) best = j;
        }
        if (best == 0) break;
        if (!firstm) jc_rb_add(r, ",", 1);
        firstm = 0;
        jc_render_string(r, t->v[best].s, t->v[best].u.len);
        jc_rb_add(r, ":", 1);
        jc_tv_render(t, best + 1, r, depth - 1);
        last = &t->v[best];
      }
      jc_rb_add(r, "}", 1);
      break;
    }
    default: jc_rb_add(r, "?", 1); break;
  }
}

void jc_tv_push_render(lua_State *L, const jc_tape *t, size_t i) {
  jc_rbuf r;
  r.n = 0;
  r.full = 0;
  jc_tv_render(t, i, &r, 16);
  lua_pushlstring(L, r.b, r.n);
}

void jc_locate(const char *text, size_t off, unsigned long *line,
               unsigned long *col) {
  const unsigned char *s = (const unsigned char *)text, *at = s + off;
  unsigned long ln = 1, c = 1;
  for (; s < at; s++) {
    if (*s == '\n') { ln++; c = 1; }
    else if ((*s & 0xC0) != 0x80) c++;
  }
  *line = ln;
  *col = c;
}

/*
** schema_report.c: error items (pointer, keyword, schema_pointer,
** absolute_schema_location, offset/line/column, message), messages with
** rendered values, and JSON Schema's basic output.
*/
#include "schema.h"

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

static void jc_push_limit(lua_State *L, const jc_limit *lim) {
#if JC_HAVE_INTEGER
  if (lim->isint) { lua_pushinteger(L, (lua_Integer)lim->i); return; }
#endif
  lua_pushnumber(L, lim->d);
}

/* A count (a length, a number of items or members) is an integer where Lua
** has integers: printed "1", not "1.0". Past lua_Integer's range (only a
** limit can be: minItems 2^64) it goes as a number, its nearest double. */
static void jc_push_count(lua_State *L, size_t n) {
#if JC_HAVE_INTEGER
  if (n <= (size_t)LUA_MAXINTEGER) { lua_pushinteger(L, (lua_Integer)n); return; }
#endif
  lua_pushnumber(L, (lua_Number)n);
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
  size_t off = jc_tv_off(c->t, c->cur), k;
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

/* Push s[0..len) for a message as rendered values are: at most
** JC_RENDER_MAX bytes, cut at a character boundary, "..." appended when
** cut, so an instance's 1 MB key never makes a 1 MB message. [-0, +1, m] */
static void jc_push_clipped(lua_State *L, const char *s, size_t len) {
  jc_rbuf r;
  r.n = 0;
  r.full = 0;
  jc_rb_add(&r, s, len);
  lua_pushlstring(L, r.b, r.n);
}

/*
** Start an error item: pushes the item table (pointer, keyword,
** schema_pointer, and offset/line/column of the value when it came from
** text) and the display location ("(root)" for "", clipped as
** 'jc_push_clipped' does; the item's pointer stays whole), returns the
** latter.
** The caller may set extra fields on the item (at -2 then), pushes the
** message and calls 'jc_err_end'. [-0, +2, m]
*/
const char *jc_err_begin(jc_vctx *c, const jc_node *n,
                                const char *kw) {
  lua_State *L = c->L;
  JC_SLOTS(c);
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
  {
    size_t len;
    const char *where = lua_tolstring(L, -1, &len);
    if (len == 0) {
      lua_pop(L, 1);
      lua_pushliteral(L, "(root)");
    } else if (len > JC_RENDER_MAX) {
      jc_push_clipped(L, where, len);
      lua_replace(L, -2);
    }
  }
  return lua_tostring(L, -1);
}

/* Between 'jc_err_begin' and the message: push the item's pointer (the
** item is at -2) clipped as 'jc_push_clipped' does, "" at the root, for a
** message that goes on with a child's token; returns it. A message built
** in a luaL_Buffer adds it with luaL_addlstring and removes it after
** luaL_pushresult: luaL_addvalue would take Lua 5.4's buffer placeholder,
** which luaL_buffinit pushes, instead of it. [-0, +1, m] */
const char *jc_push_item_pointer(jc_vctx *c, size_t *len) {
  lua_State *L = c->L;
  const char *at;
  lua_getfield(L, -2, "pointer");
  at = lua_tolstring(L, -1, len);
  if (*len > JC_RENDER_MAX) {
    jc_push_clipped(L, at, *len);
    lua_replace(L, -2);
    at = lua_tolstring(L, -1, len);
  }
  return at;
}

/* Finish the item started by 'jc_err_begin' with the message at the top:
** appends it to the errors list (unless quiet). [-3, +0, m] */
void jc_err_end(jc_vctx *c) {
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
void jc_report(jc_vctx *c, const jc_node *n, const char *kw,
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
void jc_too_deep(jc_vctx *c, const jc_node *n, const char *what,
                        int limit) {
  int q = c->quiet;
  if (c->qbase) { c->abort = 1; return; }   /* the verdict pass: redone */
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
void jc_over(jc_vctx *c, const jc_node *n) {
  int q = c->quiet;
  char num[32];
  if (c->abort) return;
  if (c->qbase) { c->abort = 2; return; }   /* the verdict pass: redone */
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

/* Report an 'enum' failure; the enum list is at the top. The message
** lists the first JC_ENUM_SHOW allowed values, then "... (N values)"; the
** item's 'allowed' field has them all. Kept out of 'jc_eval' so its frame
** stays small (luaL_Buffer is large). */
JC_NOINLINE void jc_report_enum(jc_vctx *c, const jc_node *n,
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
  if (cnt == 0) {             /* 2020-12 §6.1.2: SHOULD have one; none passes */
    lua_pushfstring(L, "%s %s is not allowed: the enum is empty", where,
                    lua_tostring(L, -1));
    lua_remove(L, -2);
    jc_err_end(c);
    return;
  }
  lua_pushfstring(L, "%s %s is not one of ", where, lua_tostring(L, -1));
  lua_remove(L, -2);
  luaL_buffinit(L, &b);
  for (i = 1; i <= cnt && i <= JC_ENUM_SHOW; i++) {
    if (i > 1) luaL_addstring(&b, ", ");
    /* from the enum's tape: numbers as the schema wrote them */
    jc_tv_push_render(L, n->enum_tape, n->enum_roots[i - 1]);
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
JC_NOINLINE void jc_report_required(jc_vctx *c, const jc_node *n,
                                           const jc_prop *p) {
  lua_State *L = c->L;
  luaL_Buffer b;
  const char *at;
  size_t len;
  if (c->quiet) return;
  jc_err_begin(c, n, "required");
  lua_pushlstring(L, p->name, p->len);
  lua_setfield(L, -3, "property");
  at = jc_push_item_pointer(c, &len);
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "missing required field ");
  luaL_addlstring(&b, at, len);
  luaL_addchar(&b, '/');
  jc_add_token(&b, p->name, p->len);
  luaL_pushresult(&b);
  lua_remove(L, -2);
  jc_err_end(c);
}

/* Report a numeric bound failure. */
void jc_report_limit(jc_vctx *c, const jc_node *n, const char *kw,
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
  if (lim->big != NULL) {                 /* as the schema text wrote it */
    lua_pushlstring(L, lim->big, lim->bign);
  } else if (lim->isint) {
    snprintf(num, sizeof num, "%lld", lim->i);
    lua_pushstring(L, num);
  } else {
    jc_push_limit(L, lim);
    jc_fmt_number(L, -1, num, sizeof num);
    lua_pop(L, 1);
    lua_pushstring(L, num);
  }
  lua_concat(L, 2);
  jc_err_end(c);
}

/* Count report: "<where> has <actual> <unit>, minimum|maximum <limit>". */
void jc_report_count(jc_vctx *c, const jc_node *n, const char *kw,
                            size_t actual, const char *unit,
                            const char *bound, size_t limit) {
  lua_State *L = c->L;
  const char *where;
  char a[32], l[32];
  if (c->quiet) return;
  where = jc_err_begin(c, n, kw);
  jc_push_count(L, limit);
  lua_setfield(L, -3, "limit");
  jc_push_count(L, actual);
  lua_setfield(L, -3, "actual");
  snprintf(a, sizeof a, "%lu", (unsigned long)actual);
  snprintf(l, sizeof l, "%lu", (unsigned long)limit);
  lua_pushfstring(L, "%s has %s %s, %s %s", where, a, unit, bound, l);
  jc_err_end(c);
}

/* Report a forbidden member or item (a 'false' subschema under 'kw'),
** with the child's segment pushed; 'e' is the child's entry. */
void jc_report_extra(jc_vctx *c, const jc_node *n, const char *kw,
                            const char *key, size_t klen, size_t index,
                            size_t e) {
  lua_State *L = c->L;
  jc_seg *sg;
  size_t saved = c->cur;
  const char *where;
  if (c->quiet) return;
  sg = &c->v->segs[c->depth];
  sg->key = key; sg->len = klen; sg->index = index;
  c->depth++;
  c->cur = e;
  where = jc_err_begin(c, n, kw);   /* never "(root)": a child's segment */
  if (key != NULL) {
    lua_pushlstring(L, key, klen);
    lua_setfield(L, -3, "property");
  }
  lua_pushfstring(L, key != NULL ? "extra field %s is not allowed"
                                 : "extra item %s is not allowed", where);
  jc_err_end(c);
  c->cur = saved;
  c->depth--;
}

/* JSON Schema's "basic" output (2020-12 §12.4.2) for the 'n' error items
** in the list at 'errs': { valid = false, errors = { { keywordLocation,
** absoluteKeywordLocation, instanceLocation, error }, ... } }, and
** truncated = true when 'truncated' (max_errors stopped the walk).
** [-0, +1, m] */
int jc_push_basic(lua_State *L, int errs, int n, int truncated) {
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

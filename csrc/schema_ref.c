/*
** schema_ref.c: schema resources and references: indexing every $id,
** $anchor and $dynamicAnchor (RFC 3986 base URIs), resolving $ref and
** $dynamicRef at compile, remote documents through the loader, drafts.
*/
#include "schema.h"
#include "metaschemas.h"

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
void jc_push_join(lua_State *L, const char *a, size_t al, char sep,
                         const char *b, size_t bl) {
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  luaL_addlstring(&buf, a, al);
  luaL_addchar(&buf, sep);
  luaL_addlstring(&buf, b, bl);
  luaL_pushresult(&buf);
}

/* t[key] = value for t at 't', key and value at -2, -1. [-2, +0, m] */
void jc_setpair(lua_State *L, int t) { lua_rawset(L, t); }

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
  jc_add_child_path(&b, kw, token, toklen, index);
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
void jc_index(jc_cctx *c, int idx, const char *base, size_t blen,
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

/* Push the built-in standard meta-schema whose URI is u[0..len) (one
** trailing '#' ignored), decoded as core.decode decodes; returns 1, or 0
** with nothing pushed for any other URI. [-0, +0 or +1, m] */
int jc_push_metaschema(lua_State *L, const char *u, size_t len) {
  const jc_metaschema *m;
  if (len > 0 && u[len - 1] == '#') len--;
  for (m = jc_metaschemas; m->uri != NULL; m++) {
    const char *const *piece;
    const char *text;
    size_t tl;
    luaL_Buffer b;
    if (strlen(m->uri) != len || memcmp(m->uri, u, len) != 0) continue;
    luaL_buffinit(L, &b);
    for (piece = m->text; *piece != NULL; piece++) luaL_addstring(&b, *piece);
    luaL_pushresult(&b);
    text = lua_tolstring(L, -1, &tl);
    if (jc_parse_text(L, text, tl, JC_MAX_DEPTH, JC_MAX_BYTES) != 1)
      luaL_error(L, "built-in meta-schema %s is not JSON", m->uri);
    lua_remove(L, -2);   /* the text */
    return 1;
  }
  return 0;
}

/* Fetch document 'doc' (a built-in meta-schema, else through the loader)
** into reg and index it; pushes it. Raises a schema error when there is no loader or it fails: it
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
  if (jc_push_metaschema(L, doc, dl)) {   /* built in: before any loader */
    lua_pushnil(L);
    goto found;
  }
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
found:
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
jc_node *jc_compile_ref(jc_cctx *c, jc_node *n, const char *kw,
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
jc_res *jc_get_res(jc_cctx *c, const char *base) {
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

/* Draft of an option name ("2020-12", "draft7", "draft4"); 0 if unknown. */
int jc_draft_name(const char *d) {
  if (strcmp(d, "2020-12") == 0 || strcmp(d, "draft2020-12") == 0)
    return JC_D2020;
  if (strcmp(d, "2019-09") == 0) return JC_D2019;
  if (strcmp(d, "draft7") == 0 || strcmp(d, "draft-07") == 0) return JC_D7;
  if (strcmp(d, "draft4") == 0 || strcmp(d, "draft-04") == 0) return JC_D4;
  return 0;
}

/* Draft of a '$schema' URI; 0 when not a known meta-schema. */
int jc_draft_uri(const char *u) {
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
int jc_meta_novalidation(lua_State *L, int uidx) {
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

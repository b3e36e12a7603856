/*
** error.c: the one err constructor of jsoncontract.core (jc_error_begin
** and jc_error_end from C, core.error from Lua), the metamethods every err
** carries, the JSON Pointer token helpers, and jc_pcall_busy (the guard
** every re-entrant object's calls run under). jc.h declares what other
** files call.
*/
#include "jc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* See jc.h. */
void jc_add_token(luaL_Buffer *b, const char *s, size_t len) {
  size_t i;
  for (i = 0; i < len; i++) {
    if (s[i] == '~') luaL_addstring(b, "~0");
    else if (s[i] == '/') luaL_addstring(b, "~1");
    else luaL_addchar(b, s[i]);
  }
}

/* See jc.h. */
void jc_add_child_path(luaL_Buffer *b, const char *kw, const char *token,
                       size_t toklen, long index) {
  luaL_addchar(b, '/');
  luaL_addstring(b, kw);
  if (token != NULL) {
    luaL_addchar(b, '/');
    jc_add_token(b, token, toklen);
  } else if (index >= 0) {
    char num[32];
    snprintf(num, sizeof num, "/%ld", index);
    luaL_addstring(b, num);
  }
}

/*
** The shape of an err (see jc.h): the table itself holds one array element,
** [1] = "category/kind: message", so that lua-nginx-module's ngx.say and
** ngx.print, which read a table raw as an array of strings, print it; the
** named fields live in a plain table reached through the err's own
** metatable: __index = fields, __newindex writes there (and re-renders [1]
** when category, kind or message change), __pairs walks it (Lua 5.2+;
** LuaJIT and 5.1 ignore __pairs, so code that walks an err asks
** 'errors.fields'). Each err's metatable has the shared JC_ERROR_MT as its
** own metatable, which is how an err is recognised; the metamethods copied
** into each err's metatable are kept in a registry table of their own.
** Both sit in the registry under the addresses of two statics (cheaper to
** find than a name, for a path every failed decode or validation takes).
*/

static char jc_error_mt_key = 'e';        /* registry: JC_ERROR_MT */
static char jc_error_methods_key = 'm';   /* registry: the template */

/* Push the registry value stored under the address 'key'. [-0, +1, -] */
static void jc_error_registry(lua_State *L, char *key) {
  lua_pushlightuserdata(L, key);
  lua_rawget(L, LUA_REGISTRYINDEX);
}

/* Push the value of 'name' in the fields table at 'f' as text, or 'dflt'
** when it is neither a string nor a number. [-0, +0, m] */
static void jc_error_add(luaL_Buffer *b, lua_State *L, int f,
                         const char *name, const char *dflt) {
  lua_getfield(L, f, name);
  if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
    luaL_addvalue(b);
  } else {
    lua_pop(L, 1);
    luaL_addstring(b, dflt);
  }
}

/* Push "category/kind: message" rendered from the table at 'f' (read
** through metamethods). [-0, +1, m] */
static void jc_error_render(lua_State *L, int f) {
  luaL_Buffer b;
  f = jc_absindex(L, f);
  luaL_buffinit(L, &b);
  jc_error_add(&b, L, f, "category", "?");
  luaL_addchar(&b, '/');
  jc_error_add(&b, L, f, "kind", "?");
  luaL_addstring(&b, ": ");
  jc_error_add(&b, L, f, "message", "");
  luaL_pushresult(&b);
}

/* The fields table of the err at 'idx' pushed, or nothing pushed and 0
** returned when the value is not an err. [-0, +(0|1), -] */
int jc_error_fields(lua_State *L, int idx) {
  idx = jc_absindex(L, idx);
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return 0;
  if (!lua_getmetatable(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  jc_error_registry(L, &jc_error_mt_key);
  if (!lua_rawequal(L, -1, -2)) {
    lua_pop(L, 3);
    return 0;
  }
  lua_pop(L, 2);
  lua_pushliteral(L, "__index");
  lua_rawget(L, -2);
  lua_remove(L, -2);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

/* See jc.h. */
void jc_error_end(lua_State *L) {
  int f = lua_gettop(L);
  luaL_checkstack(L, 6, "jsoncontract error");
  lua_createtable(L, 1, 0);                     /* f + 1: the err */
  jc_error_render(L, f);
  lua_rawseti(L, f + 1, 1);
  lua_createtable(L, 0, 5);                     /* f + 2: its metatable */
  jc_error_registry(L, &jc_error_methods_key);  /* f + 3 */
  lua_pushnil(L);
  while (lua_next(L, f + 3)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, f + 2);
  }
  lua_pop(L, 1);
  jc_error_registry(L, &jc_error_mt_key);
  lua_setmetatable(L, f + 2);
  lua_pushliteral(L, "__index");
  lua_pushvalue(L, f);
  lua_rawset(L, f + 2);
  lua_setmetatable(L, f + 1);
  lua_replace(L, f);
}

/*
** __tostring of an err: its [1] ("category/kind: message", what ngx.say
** prints), or, for a table that is not an err, the same rendered from its
** fields. [-0, +1, m]
*/
static int jc_error_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_rawgeti(L, 1, 1);
  if (lua_type(L, -1) == LUA_TSTRING) return 1;
  lua_pop(L, 1);
  jc_error_render(L, 1);
  return 1;
}

/*
** __concat of an err: tostring() of each side, joined, so that
** "failed: " .. err works with the C core alone. Either side may be the
** err. [-0, +1, e]
*/
static int jc_error_concat(lua_State *L) {
  int i;
  for (i = 1; i <= 2; i++) {
    lua_getglobal(L, "tostring");
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
  }
  lua_concat(L, 2);
  return 1;
}

/*
** __newindex of an err (err, key, value): the field is written to the
** err's fields table; when it is category, kind or message, [1] is
** rendered again so ngx.say and tostring keep showing the same text.
** Raises when the err's metatable has lost its fields table. [-0, +0, e]
*/
static int jc_error_newindex(lua_State *L) {
  const char *k;
  lua_settop(L, 3);
  if (!jc_error_fields(L, 1))
    return luaL_error(L, "an err table without its fields table");
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, 4);
  k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
  if (k != NULL && (strcmp(k, "category") == 0 || strcmp(k, "kind") == 0
                    || strcmp(k, "message") == 0)) {
    jc_error_render(L, 4);
    lua_rawseti(L, 1, 1);
  }
  return 0;
}

/* next() over an err's fields, for __pairs. [-0, +(1|2), -] */
static int jc_error_next(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 2);
  if (lua_next(L, 1)) return 2;
  lua_pushnil(L);
  return 1;
}

/*
** __pairs of an err (Lua 5.2+): next, fields, nil, so 'pairs(err)' lists
** category, kind, message and the rest, not the [1] that ngx.say reads.
** [-0, +3, e]
*/
static int jc_error_pairs(lua_State *L) {
  lua_pushcfunction(L, jc_error_next);
  if (!jc_error_fields(L, 1))
    return luaL_error(L, "an err table without its fields table");
  lua_pushnil(L);
  return 3;
}

/*
** core.error(fields) -> err
** Make an err from the table 'fields' (category, kind, message and any
** other named fields), which the err adopts, not copies: it is what
** __index reads and __newindex writes. The one place an err is made;
** jc_error_end and jsoncontract.errors.new come here.
** Raises when 'fields' is not a table. Stack: [-0, +1, m]
*/
static int jc_error_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argcheck(L, lua_gettop(L) == 1, 2, "no more than 1 argument expected");
  jc_error_end(L);
  return 1;
}

/*
** core.error_fields(v) -> fields | nil
** The plain table of named fields of the err 'v' (not a copy), or nil when
** 'v' is not an err. For code that walks or encodes an err on any Lua
** (LuaJIT ignores __pairs). Stack: [-0, +1, -]
*/
static int jc_error_fields_l(lua_State *L) {
  luaL_checkany(L, 1);
  if (!jc_error_fields(L, 1)) lua_pushnil(L);
  return 1;
}

/* See jc.h. */
void jc_error_begin(lua_State *L, const char *category, const char *kind,
                    const char *fmt, ...) {
  va_list ap;
  lua_createtable(L, 0, 6);
  lua_pushstring(L, category);
  lua_setfield(L, -2, "category");
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_setfield(L, -2, "message");
}

/* See jc.h. [-0, +0, m] */
void jc_error_open(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"error", jc_error_new},
    {"error_fields", jc_error_fields_l},
    {NULL, NULL}
  };
  luaL_setfuncs(L, funcs, 0);
  lua_pushlightuserdata(L, &jc_error_methods_key);
  lua_newtable(L);            /* the metamethods each err's metatable copies */
  lua_pushcfunction(L, jc_error_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, jc_error_concat);
  lua_setfield(L, -2, "__concat");
  lua_pushcfunction(L, jc_error_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, jc_error_pairs);
  lua_setfield(L, -2, "__pairs");
  lua_rawset(L, LUA_REGISTRYINDEX);
  /* The shared marker: only a name, so none of its metamethods applies to
  ** the per-err metatables that carry it. */
  if (luaL_newmetatable(L, JC_ERROR_MT)) {
    lua_pushliteral(L, JC_ERROR_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_pushlightuserdata(L, &jc_error_mt_key);
  lua_pushvalue(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);
  lua_setfield(L, -2, "error_mt");
}

/* See jc.h. */
int jc_pcall_busy(lua_State *L, lua_CFunction fn, int nargs, int *busy) {
  /* may allocate (a closure on Lua 5.1 and LuaJIT) and so run a __gc:
  ** before the mark, while the caller holds no pointer into its object */
  lua_pushcfunction(L, fn);
  lua_insert(L, -(nargs + 1));
  return jc_pcall_marked(L, nargs, busy);
}

/* See jc.h. */
int jc_pcall_marked(lua_State *L, int nargs, int *busy) {
  int st, was = *busy;
  *busy = 1;
  st = lua_pcall(L, nargs, LUA_MULTRET, 0);
  *busy = was;
  return st;
}

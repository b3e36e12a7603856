/*
** error.c: the one err table constructor of jsoncontract.core (jc.h
** declares it) and the __tostring of its metatable.
*/
#include "jc.h"

#include <stdarg.h>
#include <stdio.h>

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

/* __tostring of an err table: "category/kind: message". [-0, +1, m] */
int jc_error_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "category");
  lua_getfield(L, 1, "kind");
  lua_getfield(L, 1, "message");
  lua_pushfstring(L, "%s/%s: %s",
                  luaL_optstring(L, 2, "?"), luaL_optstring(L, 3, "?"),
                  luaL_optstring(L, 4, ""));
  return 1;
}

/*
** __concat of an err table: tostring() of each side, joined, so that
** "failed: " .. err works with the C core alone (jsoncontract.errors installs
** the same only when it is loaded). Either side may be the err. [-0, +1, e]
*/
int jc_error_concat(lua_State *L) {
  int i;
  for (i = 1; i <= 2; i++) {
    lua_getglobal(L, "tostring");
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
  }
  lua_concat(L, 2);
  return 1;
}

void jc_push_error(lua_State *L, const char *category, const char *kind,
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
  luaL_getmetatable(L, JC_ERROR_MT);
  lua_setmetatable(L, -2);
}


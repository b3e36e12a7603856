/*
** core.c: luaopen_jsoncontract_core, the shared err metatable and the
** JSON null / array markers. See jc.h.
*/
#include "jc.h"

#include <stdarg.h>
#include <string.h>

/* __tostring of an err table: "category/kind: message". [-0, +1, m] */
static int jc_error_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "category");
  lua_getfield(L, 1, "kind");
  lua_getfield(L, 1, "message");
  lua_pushfstring(L, "%s/%s: %s",
                  luaL_optstring(L, 2, "?"), luaL_optstring(L, 3, "?"),
                  luaL_optstring(L, 4, ""));
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

LUALIB_API JC_EXPORT int luaopen_jsoncontract_core(lua_State *L);

/*
** require "jsoncontract.core" -> module table with
**   null        light userdata NULL: JSON null (equal to cjson.null)
**   array_mt    metatable that marks a table as a JSON array (decode sets it)
**   error_mt    metatable shared by every err table (__tostring)
**   _VERSION    the project version (from the Makefile, -DJC_VERSION)
** and the functions of each area file.
*/
LUALIB_API JC_EXPORT int luaopen_jsoncontract_core(lua_State *L) {
  lua_newtable(L);

  if (luaL_newmetatable(L, JC_ERROR_MT)) {
    lua_pushcfunction(L, jc_error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, JC_ERROR_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_setfield(L, -2, "error_mt");

  if (luaL_newmetatable(L, JC_ARRAY_MT)) {
    lua_pushliteral(L, JC_ARRAY_MT);
    lua_setfield(L, -2, "__name");
  }
  lua_setfield(L, -2, "array_mt");

  jc_pushnull(L);
  lua_setfield(L, -2, "null");
  lua_pushliteral(L, JC_VERSION);
  lua_setfield(L, -2, "_VERSION");

  jc_parse_open(L);
  jc_encode_open(L);
  jc_schema_open(L);
  jc_transport_open(L);
  return 1;
}

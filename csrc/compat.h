/*
** compat.h: shims for the Lua versions jsoncontract.core builds against
** (Lua 5.4 first; 5.1/5.2/5.3 and OpenResty's LuaJIT 2.1, which reports 501).
** Included first by every C file. Shims only what is missing, as macros or
** static 'jc_' functions; never defines names in the 'lua_'/'luaL_' space.
** (After LPeg 'lptypes.h' and lua-cjson 'compat_luaL_setfuncs'.)
*/
#ifndef JC_COMPAT_H
#define JC_COMPAT_H

#include <lua.h>
#include <lauxlib.h>

#if LUA_VERSION_NUM >= 503
#define JC_HAVE_INTEGER 1
#else
#define JC_HAVE_INTEGER 0
#endif

#if LUA_VERSION_NUM >= 502
#define jc_rawlen(L, i) lua_rawlen((L), (i))
#define jc_absindex(L, i) lua_absindex((L), (i))
#else
#define jc_rawlen(L, i) lua_objlen((L), (i))
#define jc_absindex(L, i) \
  (((i) > 0 || (i) <= LUA_REGISTRYINDEX) ? (i) : lua_gettop(L) + (i) + 1)
#endif

/* lua_rawgeti returning the type of the value pushed, as on 5.3+. */
#if LUA_VERSION_NUM >= 503
#define jc_rawgeti_type(L, i, n) lua_rawgeti((L), (i), (n))
#else
static inline int jc_rawgeti_type(lua_State *L, int i, int n) {
  lua_rawgeti(L, i, n);
  return lua_type(L, -1);
}
#endif

#if LUA_VERSION_NUM >= 504
#define jc_newuserdata(L, sz) lua_newuserdatauv((L), (sz), 0)
#else
#define jc_newuserdata(L, sz) lua_newuserdata((L), (sz))
#endif

/* OpenResty's LuaJIT (501) has luaL_setfuncs, luaL_testudata and
** luaL_setmetatable; PUC Lua 5.1 lacks all three. The three are mapped to
** static 'jc_' functions, as lua-compat-5.3 maps its names, for LuaJIT's
** headers too: a LuaRocks 5.1 tree builds against LuaJIT's headers and may
** run the module with PUC lua5.1, which would not find LuaJIT's symbols. */
#if LUA_VERSION_NUM < 502
/* Register 'l' into the table below 'nup' upvalues, which are popped.
** [-nup, +0, m] (Lua 5.2 lauxlib.c 'luaL_setfuncs') */
static inline void jc_setfuncs(lua_State *L, const luaL_Reg *l, int nup) {
  luaL_checkstack(L, nup, "too many upvalues");
  for (; l->name != NULL; l++) {
    int i;
    for (i = 0; i < nup; i++) lua_pushvalue(L, -nup);
    lua_pushcclosure(L, l->func, nup);
    lua_setfield(L, -(nup + 2), l->name);
  }
  lua_pop(L, nup);
}
/* Set the registry metatable 'tname' on the value on top. [-0, +0, -] */
static inline void jc_setmetatable(lua_State *L, const char *tname) {
  luaL_getmetatable(L, tname);
  lua_setmetatable(L, -2);
}
/* The userdata at 'ud' if its metatable is the registry's 'tname', else
** NULL. [-0, +0, m] (Lua 5.2 lauxlib.c 'luaL_testudata') */
static inline void *jc_testudata(lua_State *L, int ud, const char *tname) {
  void *p = lua_touserdata(L, ud);
  if (p != NULL && lua_getmetatable(L, ud)) {
    luaL_getmetatable(L, tname);
    if (!lua_rawequal(L, -1, -2)) p = NULL;
    lua_pop(L, 2);
    return p;
  }
  return NULL;
}
#define luaL_testudata(L, u, t) jc_testudata((L), (u), (t))
#define luaL_setfuncs(L, l, n) jc_setfuncs((L), (l), (n))
#define luaL_setmetatable(L, t) jc_setmetatable((L), (t))
#endif

#endif
